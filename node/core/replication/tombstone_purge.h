// TombstonePurge: erasing tombstones older than the grace period from a range. With replicas
// the owner asks them first (Purge: erase where still that tombstone at that version) and
// erases its own only once all of them confirmed; if one misses the purge, the next digest
// comparison sends it the tombstone again (never the deleted value), and the purge is
// retried. Started by AntiEntropy after a round in which every replica matched; the node's
// thread only.
#ifndef CHORD_NODE_CORE_REPLICATION_TOMBSTONE_PURGE_H_
#define CHORD_NODE_CORE_REPLICATION_TOMBSTONE_PURGE_H_

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "protocol/chord.pb.h"

namespace chord {

class TombstonePurge {
 public:
  explicit TombstonePurge(NodeContext& ctx) : ctx_(ctx) {}

  // Purges the expired tombstones of `range` (a page of them) on `replicas`, then here.
  void Start(const KeyRange& range, const std::vector<NodeRef>& replicas);
  void OnRpc(OpRef op, const wire::Envelope* response);
  void HandlePurge(ReplyToken from, const wire::Envelope& request);

 private:
  struct PurgeOp {
    std::vector<wire::Record> tombstones;
    size_t pending = 0;
    bool all_ok = true;
  };
  void EraseHere(const std::vector<wire::Record>& tombstones);

  NodeContext& ctx_;
  std::unordered_map<uint64_t, PurgeOp> ops_;
  uint64_t next_id_ = 1;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_TOMBSTONE_PURGE_H_
