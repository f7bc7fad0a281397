// ReplicaReads: reading the copies of a key on the members of its replica set. A fall-back read
// asks the holders after an owner that did not answer, in parallel, and answers with the newest
// version among them (a tombstone is a NOT_FOUND with a version); if none answered, or none
// holds any record of the key (the holders may be stale or new), the answer is UNAVAILABLE with
// the reason. A miss read is the owner's own: it holds no record of the key (a new owner whose
// hand-over was partial), so it asks its replicas and answers with the newest version they hold
// (NOT_FOUND if they hold none), or UNAVAILABLE if none of them answered. A condition read is
// the owner's too, before every conditional write (its own record may be missing or older):
// every replica must answer within three quarters of an RPC timeout, none may own the key
// itself (a successor that took this node's arc over and has not taken it back), and the first
// must take this node's process as its predecessor, else the answer is UNAVAILABLE; it names
// the newest record's writer and carries no value (replicas answer with their copies'
// headers); an answer to it whose version lies further ahead of this node's clock than the
// allowed skew (NodeConfig::max_clock_skew_ms) is no answer, and is named in its UNAVAILABLE,
// as the owner would otherwise version its write above it, where no store takes it. The answers to
// a quorum read's repairs (OpKind::kRepair) are counted here. Each read is a ReadOp owned here;
// answers go to the requester's OpRef. The node's thread only.
#ifndef CHORD_NODE_CORE_REPLICATION_REPLICA_READS_H_
#define CHORD_NODE_CORE_REPLICATION_REPLICA_READS_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "node/core/replication/replication_policy.h"
#include "protocol/chord.pb.h"

namespace chord {

class ReplicaReads {
 public:
  ReplicaReads(NodeContext& ctx, ReplicationPolicy& policy) : ctx_(ctx), policy_(policy) {}
  ReplicaReads(const ReplicaReads&) = delete;
  ReplicaReads& operator=(const ReplicaReads&) = delete;

  void ReadFallback(const std::string& key, const std::vector<NodeRef>& holders, OpRef requester);
  void ReadMiss(const std::string& key, wire::DataResponse not_found, OpRef requester);
  void ReadForCondition(const std::string& key, OpRef requester);
  void OnRpc(OpRef op, const wire::Envelope* response);

 private:
  struct ReadOp {
    OpRef requester;
    size_t pending = 0;
    bool any = false;                  // a holder answered with its copy (or its absence)
    bool owner_miss = false;           // a miss read by the owner (ReadMiss), not a fall-back read
    bool every = false;                // a condition read: every holder asked must answer
    size_t asked = 0;                  // holders asked
    size_t answered = 0;               // holders that answered with their copy (or its absence)
    uint64_t sent_ms = 0;              // when the holders were asked (monotonic)
    uint64_t timeout_ms = 0;           // how long they were given
    std::vector<std::string> holders;  // a condition read's holders, by OpRef::index
    std::string refused;               // a condition read's refusal: who, and what it said
    std::string implausible;           // a condition read's answer too far ahead: who, how far
    wire::DataResponse best;
  };

  // The owner's read of its replicas for a key it holds no record of (ReadMiss), or before a
  // conditional write (ReadForCondition): `not_found` is the answer if none of them holds one.
  void ReadReplicasForOwner(const std::string& key, wire::DataResponse not_found, OpRef requester,
                            bool every, uint64_t timeout_ms);
  void Ask(uint64_t id, const std::string& key, const std::vector<NodeRef>& holders,
           uint64_t timeout_ms);
  void Finish(uint64_t id);

  NodeContext& ctx_;
  ReplicationPolicy& policy_;
  std::unordered_map<uint64_t, ReadOp> ops_;
  uint64_t next_id_ = 1;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_REPLICA_READS_H_
