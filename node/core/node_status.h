// NodeStatus: what a node reports about itself: the Status answer (its ring pointers,
// fingers, key counts and replication counters), the ListKeys pages an operator's dump reads,
// and the key counts behind both and the metrics. Pure reads of the node's state and store;
// the node's thread only.
#ifndef CHORD_NODE_CORE_NODE_STATUS_H_
#define CHORD_NODE_CORE_NODE_STATUS_H_

#include <cstdint>

#include "node/core/membership/membership.h"
#include "node/core/node_context.h"
#include "node/core/process_sample.h"
#include "protocol/base/status.h"
#include "protocol/chord.pb.h"

namespace chord {

class NodeStatus {
 public:
  NodeStatus(NodeContext& ctx, int replicas, const Membership& membership)
      : ctx_(ctx), replicas_(replicas), membership_(membership) {}

  struct KeyCounts {
    uint64_t primary = 0;     // live records this node owns as primary
    uint64_t replica = 0;     // live records it holds for other owners (with virtual nodes:
                              // those between the previous vnode of this process and this
                              // one), so each record of a shared store counts once
    uint64_t tombstones = 0;  // tombstones in the whole store
  };
  // The store's error when it cannot be read.
  [[nodiscard]] Result<KeyCounts> Counts() const;

  // Where the Status reply's process figures come from; null (the default): none are sent.
  // The source must outlive this object.
  void set_process_stats(const ProcessStatsSource* source) { process_stats_ = source; }

  void HandleStatus(ReplyToken from, const wire::Envelope& request);
  void HandleListKeys(ReplyToken from, const wire::Envelope& request);

 private:
  NodeContext& ctx_;
  int replicas_;
  const Membership& membership_;
  const ProcessStatsSource* process_stats_ = nullptr;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_NODE_STATUS_H_
