// QuorumRead: a read at the key's owner that needs more than the owner's own answer
// (consistency quorum or all, or `required` > 1). The owner reads its copy and asks the other
// members of the replica set for theirs in parallel (a SyncPull of the key's id alone, which
// returns whole records), each up to one RPC timeout. With at least `needed` answers (its own
// included) it answers with the newest version among them (a tombstone counts as a version and
// reads as NOT_FOUND), stores that version itself if a member held a newer one, and repairs
// every answering member that returned an older version or none. Fewer answers: UNAVAILABLE
// with a sentence. Hint holders are not asked. Each read is a ReadOp owned here; the answer
// goes to the requester's OpRef. Started by the OwnerService; the node's thread.
#ifndef CHORD_NODE_CORE_REPLICATION_QUORUM_READ_H_
#define CHORD_NODE_CORE_REPLICATION_QUORUM_READ_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "node/core/replication/replication_policy.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"

namespace chord {

class QuorumRead {
 public:
  QuorumRead(NodeContext& ctx, ReplicationPolicy& policy) : ctx_(ctx), policy_(policy) {}
  QuorumRead(const QuorumRead&) = delete;
  QuorumRead& operator=(const QuorumRead&) = delete;

  // `own` is the owner's record of the key (nullopt: none); `needed` answers are required.
  void Start(const std::string& key, std::optional<wire::Record> own, uint32_t needed,
             std::string level, OpRef requester);
  void OnRpc(OpRef op, const wire::Envelope* response);
  size_t in_flight() const { return ops_.size(); }

 private:
  struct Answer {
    NodeRef member;
    std::optional<wire::Record> record;
  };
  struct ReadOp {
    OpRef requester;
    std::string key;
    Id key_id;
    uint32_t needed = 1;
    std::string level;
    size_t pending = 0;
    std::vector<NodeRef> asked;  // by the index of the OpRef of each request
    std::optional<wire::Record> own;
    std::vector<Answer> answers;  // the other members that answered
  };

  void Finish(uint64_t id);

  NodeContext& ctx_;
  ReplicationPolicy& policy_;
  std::unordered_map<uint64_t, ReadOp> ops_;
  uint64_t next_id_ = 1;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_QUORUM_READ_H_
