// LookupService: iterative lookups of a target's owner. Each lookup is a LookupOp owned here:
// it asks the closest preceding node it knows for the next hops (FindNextHop), keeps the
// candidate lists of the hops so far, asks a silent hop once more before routing around it,
// and, with verify_owner, checks the owner it found by asking it for its predecessor
// (stepping back to a newer node between the key and it, skipping dead owners along the
// successor list). The outcome goes to the parent operation's OpRef. It also answers the
// FindNextHop steps of other nodes' lookups and clients' Lookup requests. Called by the
// ChordNode (inputs) and by the parts that need an owner (join, fingers, data, clean-up).
#ifndef CHORD_NODE_CORE_LOOKUP_H_
#define CHORD_NODE_CORE_LOOKUP_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "node/core/completions.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"
#include "protocol/node_ref.h"

namespace chord {

class LookupService {
 public:
  // Clients' Lookup requests under way at once; more are answered UNAVAILABLE at once (each
  // holds an operation and sends requests to other members until it ends).
  static constexpr size_t kMaxClientLookups = 1024;

  explicit LookupService(NodeContext& ctx) : ctx_(ctx) {}
  LookupService(const LookupService&) = delete;
  LookupService& operator=(const LookupService&) = delete;

  // Looks up the successor of `target`; the LookupOutcome goes to `parent`. Counted in the
  // lookup counters and metrics.
  void Start(const Id& target, bool verify_owner, OpRef parent);
  // Looks up `target` through `first_hop` without consulting this node's own state (a
  // joining node has none yet).
  void StartThrough(const Id& target, const NodeRef& first_hop, OpRef parent);

  void OnRpc(OpRef op, const wire::Envelope* response);
  void OnClientLookupDone(OpRef op, LookupOutcome outcome);

  void HandleFindNextHop(ReplyToken from, const wire::Envelope& request);
  void HandleLookup(ReplyToken from, const wire::Envelope& request);

  size_t in_flight() const { return ops_.size(); }

 private:
  enum Step : uint8_t { kHop = 1, kVerify = 2 };
  struct Op {
    Id target;
    bool verify_owner = false;
    OpRef parent;
    // Candidate lists from the hops so far; the back list is the most recent. A candidate that
    // times out is skipped and the next one of the same list is tried, then earlier lists.
    std::vector<std::vector<NodeRef>> stack;
    std::unordered_set<Id, IdHash> tried;
    std::unordered_set<Id, IdHash> dead;     // owner candidates that did not answer
    std::unordered_set<Id, IdHash> retried;  // hops asked a second time after a timeout
    NodeRef hop;                             // the hop asked now (kHop)
    std::vector<NodeRef> owners;             // owner candidates (kVerify)
    size_t owner_index = 0;                  // the one asked now (kVerify)
    bool owner_retried = false;
    NodeRef predecessor;                    // the node just before the owner, once known
    std::vector<NodeRef> owner_successors;  // the verified owner's own list
    std::vector<std::string> answered;      // addresses of the hops that answered
    int steps = 0;
    int hops = 0;
    int timeouts = 0;
  };
  struct ClientLookup {
    ReplyToken from = 0;
    uint64_t request_id = 0;
    Id key_id;
  };

  uint64_t NewOp(const Id& target, bool verify_owner, OpRef parent);
  // Asks the next untried candidate, or gives up.
  void NextHop(uint64_t id);
  void OnHop(uint64_t id, const wire::Envelope* response);
  // Verifies owners[index] (op.owners), or the next ones after it.
  void Verify(uint64_t id, size_t index, bool retried);
  void OnVerify(uint64_t id, const wire::Envelope* response);
  // The lookup found owners[index]; `record_hops`: add to the hop histogram.
  void Found(uint64_t id, const std::vector<NodeRef>& owners, size_t index, bool record_hops);
  void Fail(uint64_t id, const std::string& why);

  NodeContext& ctx_;
  std::unordered_map<uint64_t, Op> ops_;
  std::unordered_map<uint64_t, ClientLookup> clients_;
  uint64_t next_id_ = 1;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_LOOKUP_H_
