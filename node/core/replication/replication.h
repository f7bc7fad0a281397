// Replication: the data layer that keeps R copies of every key (see README "Replication and
// consistency"). It owns the ReplicationPolicy (who holds copies; what a new predecessor
// gets), the WriteCoordinator (owner writes), ReplicaReads (reads of the copies),
// AntiEntropy with TombstonePurge and the Cleanup walk (run every anti_entropy_ms),
// the ReplicaServer (what a replica answers), QuorumRead (reads that need several replicas),
// hinted hand-off (the HintStore of copies kept for members that did not answer, and the
// HintDeliverer that hands them over every round) and the ExpirySweeper (TTL tombstones).
// The ChordNode hands it the answers and requests of these parts; the node's thread only.
#ifndef CHORD_NODE_CORE_REPLICATION_REPLICATION_H_
#define CHORD_NODE_CORE_REPLICATION_REPLICATION_H_

#include <cstdint>

#include "node/core/completions.h"
#include "node/core/hand_over.h"
#include "node/core/lookup.h"
#include "node/core/membership/membership.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "node/core/replication/anti_entropy.h"
#include "node/core/replication/cleanup.h"
#include "node/core/replication/expiry_sweeper.h"
#include "node/core/replication/hint_deliverer.h"
#include "node/core/replication/hint_store.h"
#include "node/core/replication/quorum_read.h"
#include "node/core/replication/replica_reads.h"
#include "node/core/replication/replica_server.h"
#include "node/core/replication/replication_policy.h"
#include "node/core/replication/tombstone_purge.h"
#include "node/core/replication/write_coordinator.h"
#include "protocol/chord.pb.h"

namespace chord {

class Replication {
 public:
  Replication(NodeContext& ctx, HandOver& hand_over, LookupService& lookups,
              const Membership& membership)
      : ctx_(ctx),
        policy_(ctx, hand_over),
        writes_(ctx, policy_),
        reads_(ctx, policy_),
        quorum_reads_(ctx, policy_),
        cleanup_(ctx, policy_, lookups),
        purge_(ctx),
        anti_entropy_(ctx, policy_, cleanup_, purge_),
        hints_(ctx.store(), &ctx.counters, ctx.self().addr),
        deliverer_(ctx, hints_),
        server_(ctx, policy_, hints_, membership),
        sweeper_(ctx) {
    // Hints kept by an earlier life of this node are delivered as before.
    Status s = hints_.Load();
    if (!s.ok()) ctx_.Log(LogLevel::kError, "cannot read the kept hints: " + s.message());
  }
  Replication(const Replication&) = delete;
  Replication& operator=(const Replication&) = delete;

  ReplicationPolicy& policy() { return policy_; }
  const ReplicationPolicy& policy() const { return policy_; }
  WriteCoordinator& writes() { return writes_; }
  const WriteCoordinator& writes() const { return writes_; }
  ReplicaReads& reads() { return reads_; }
  QuorumRead& quorum_reads() { return quorum_reads_; }
  const QuorumRead& quorum_reads() const { return quorum_reads_; }
  const HintStore& hints() const { return hints_; }
  ReplicaServer& server() { return server_; }
  TombstonePurge& purge() { return purge_; }

  // Called every maintenance round: expired records become tombstones; an anti-entropy round
  // once anti_entropy_ms has passed.
  void Round() {
    deliverer_.Round();
    sweeper_.Sweep();
    // Who may hold copies of our range, every round: a member that drops out is "missing".
    if (!ctx_.ring.awaiting_transfer) purge_.NoteGroup(policy_.Targets(), ctx_.ring);
    const uint64_t now = ctx_.now.mono_ms;
    if (next_anti_entropy_ms_ == 0) next_anti_entropy_ms_ = now + ctx_.config.anti_entropy_ms;
    if (now < next_anti_entropy_ms_) return;
    next_anti_entropy_ms_ = now + ctx_.config.anti_entropy_ms;
    anti_entropy_.Round();
  }

  void OnRpc(OpRef op, const wire::Envelope* response) {
    switch (op.kind) {
      case OpKind::kWrite:
        return writes_.OnRpc(op, response);
      case OpKind::kReplicaRead:
      case OpKind::kRepair:
        return reads_.OnRpc(op, response);
      case OpKind::kAntiEntropy:
        return anti_entropy_.OnRpc(op, response);
      case OpKind::kPurge:
        return purge_.OnRpc(op, response);
      case OpKind::kCleanup:
        return cleanup_.OnRpc(op, response);
      case OpKind::kQuorumRead:
        return quorum_reads_.OnRpc(op, response);
      case OpKind::kHint:
        return deliverer_.OnRpc(op, response);
      default:
        return;
    }
  }
  void OnLookupDone(OpRef op, const LookupOutcome& outcome) {
    if (op.kind == OpKind::kCleanup) cleanup_.OnLookupDone(op, outcome);
  }

 private:
  NodeContext& ctx_;
  ReplicationPolicy policy_;
  WriteCoordinator writes_;
  ReplicaReads reads_;
  QuorumRead quorum_reads_;
  Cleanup cleanup_;
  TombstonePurge purge_;
  AntiEntropy anti_entropy_;
  HintStore hints_;
  HintDeliverer deliverer_;
  ReplicaServer server_;
  ExpirySweeper sweeper_;
  uint64_t next_anti_entropy_ms_ = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_REPLICATION_H_
