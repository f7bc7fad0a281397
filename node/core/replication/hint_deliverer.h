// HintDeliverer: hands the records the HintStore keeps for other members to them (hinted
// hand-off, Dynamo section 4.6). Every maintenance round it sends each member it holds hints
// for (at most kMaxTargetsPerRound, one batch each in flight) a batch of its hinted records
// as a normal Replicate (at most kBatchBytes / kBatchRecords); once the member answers OK the
// delivered hints are erased (hints_delivered). A member that does not answer is tried again
// after a back-off that doubles from kFirstBackoffMs to kMaxBackoffMs. Each batch in flight
// is a Delivery owned here (OpKind::kHint). Driven by Replication::Round; the node's thread.
#ifndef CHORD_NODE_CORE_REPLICATION_HINT_DELIVERER_H_
#define CHORD_NODE_CORE_REPLICATION_HINT_DELIVERER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "node/core/replication/hint_store.h"
#include "protocol/chord.pb.h"

namespace chord {

class HintDeliverer {
 public:
  static constexpr size_t kMaxTargetsPerRound = 4;
  static constexpr size_t kBatchBytes = 1u << 20;
  static constexpr size_t kBatchRecords = 1000;
  static constexpr uint64_t kFirstBackoffMs = 1000;
  static constexpr uint64_t kMaxBackoffMs = 30000;

  HintDeliverer(NodeContext& ctx, HintStore& hints) : ctx_(ctx), hints_(hints) {}
  HintDeliverer(const HintDeliverer&) = delete;
  HintDeliverer& operator=(const HintDeliverer&) = delete;

  // Starts the batches that are due.
  void Round();
  void OnRpc(OpRef op, const wire::Envelope* response);

 private:
  struct TargetState {
    bool in_flight = false;
    uint64_t next_try_ms = 0;
    uint64_t backoff_ms = kFirstBackoffMs;
  };
  struct Delivery {
    NodeRef target;
    std::vector<wire::Record> records;
  };

  NodeContext& ctx_;
  HintStore& hints_;
  std::unordered_map<std::string, TargetState> targets_;  // by address
  std::unordered_map<uint64_t, Delivery> deliveries_;
  uint64_t next_id_ = 1;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_HINT_DELIVERER_H_
