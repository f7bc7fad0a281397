// DataService: a client's get, put or delete sent to any node. A read of a key this node owns
// and holds, and on a ring without copies a write of a key it owns, go straight to the
// OwnerService (no DataOp). Any other write gets its version here, once: every forward and
// retry carries it. The node looks up the key's owner and forwards the request to it marked
// `direct` (or serves it itself through the OwnerService); a NOT_OWNER answer that names a better
// node is followed a few times, then it is back to lookups with doubling back-off until
// data_deadline_ms. An owner that does not answer is suspected by this node for suspect_ms (or
// until it answers again): meanwhile a get reads the next holders of the key's copies at once, and
// a write goes to the owner's successor, marked with the suspect, so that the successor checks its
// predecessor now and takes the range over as soon as it is found dead. Only the first request pays
// the timeout. A write that lost to a newer one while its client waits is retried under a new
// version (a conditional write is not: it is answered CONFLICT). A conditional write its owner
// could not check (UNAVAILABLE, not_applied) is tried again, under a new version unless an
// earlier attempt went unanswered. Each other request is a DataOp owned here; the answer goes
// back to the client. Called by the ChordNode; node's thread.
#ifndef CHORD_NODE_CORE_DATA_DATA_SERVICE_H_
#define CHORD_NODE_CORE_DATA_DATA_SERVICE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "node/core/completions.h"
#include "node/core/data/owner_service.h"
#include "node/core/lookup.h"
#include "node/core/membership/membership.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "node/core/replication/replication.h"
#include "protocol/chord.pb.h"

namespace chord {

class DataService {
 public:
  DataService(NodeContext& ctx, LookupService& lookups, Membership& membership, OwnerService& owner,
              Replication& replication)
      : ctx_(ctx),
        lookups_(lookups),
        membership_(membership),
        owner_(owner),
        replication_(replication) {}
  DataService(const DataService&) = delete;
  DataService& operator=(const DataService&) = delete;

  // A client's get/put/del (not `direct`): routed to the owner, answered to `from`. May move
  // from `request` (a DataOp keeps it) or leave it as it was.
  void HandleRequest(ReplyToken from, wire::Envelope&& request);
  void OnLookupDone(OpRef op, const LookupOutcome& outcome);
  void OnRpc(OpRef op, const wire::Envelope* response);
  void OnDataDone(OpRef op, wire::DataResponse&& response);
  void OnTimer(OpRef op);
  size_t in_flight() const { return ops_.size(); }

 private:
  enum Step : uint8_t { kLookup = 1, kForward = 2, kLocal = 3, kReplicas = 4, kRetry = 5 };
  struct DataOp {
    ReplyToken from = 0;
    wire::Envelope request;  // the client's request, marked `direct` for the owner
    Id key_id;
    uint64_t deadline_ms = 0;
    uint64_t backoff_ms = 0;
    int attempts = 0;
    int hops = 0;
    int hints_followed = 0;
    int restamps = 0;                       // new versions after losing to newer writes
    bool unanswered = false;                // a forward got no answer: it may have been applied
    std::optional<NodeRef> hint;            // where to send the next attempt, skipping the lookup
    std::optional<Id> suspect;              // the suspected node the current target follows
    NodeRef owner;                          // where the current attempt went
    std::vector<NodeRef> owner_successors;  // after the owner, from the last lookup
    size_t held_bytes = 0;                  // charged to ctx_.coordinated() until Finish
  };

  // True when this node owns `key_id` by its own pointers, with nothing in the way of serving
  // it: joined, its hand-over in, its range's start known (or alone), the key in that range.
  // Such a request is served here without a lookup, as a request marked `direct` would be.
  bool OwnedHere(const Id& key_id) const;
  // One attempt: served here when OwnedHere, else straight to the hinted node or a lookup.
  void Attempt(uint64_t id);
  // Gives a write its version (a new one on each call).
  void Stamp(DataOp& op);
  bool Suspected(const NodeRef& n) const;
  void Suspect(const NodeRef& n);
  void SendTo(uint64_t id, const NodeRef& owner);
  void OnForwarded(uint64_t id, const wire::Envelope* response);
  // The owner's answer (or a replica read's): done, NOT_OWNER/SHUTTING_DOWN to follow, or a
  // get at `one` the owner could not answer, or a conditional write it could not check
  // (UNAVAILABLE), to try again.
  void OnAnswer(uint64_t id, wire::DataResponse&& response);
  // The answer to a conditional write that lost to a newer one: CONFLICT, never a restamp.
  wire::DataResponse SupersededConditional(uint64_t newer);
  void Retry(uint64_t id, const std::string& why);
  void Finish(uint64_t id, wire::DataResponse&& response);
  OpRef Ref(Step step, uint64_t id) const { return OpRef{OpKind::kDataOp, step, 0, id}; }

  NodeContext& ctx_;
  LookupService& lookups_;
  Membership& membership_;
  OwnerService& owner_;
  Replication& replication_;
  std::unordered_map<uint64_t, DataOp> ops_;
  // Nodes that did not answer a forwarded request, until when they are passed over.
  std::unordered_map<Id, uint64_t, IdHash> suspects_;
  uint64_t next_id_ = 1;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_DATA_DATA_SERVICE_H_
