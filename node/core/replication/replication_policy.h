// ReplicationPolicy: the one place that knows how many copies a key has (R = config.replicas)
// and what follows from it. A key's replica set is its owner and the next R-1 distinct
// processes of the owner's successor list (Dynamo's preference list, skipping other vnodes of
// the same process). As the MembershipListener it decides what a new or notifying
// predecessor gets: with one copy, the records of its new range move to it at once; with
// replication, a new node that waits for its keys gets copies of everything it will hold,
// once the predecessor before it can no longer decide a conditional write on this node's word.
// Used by the replication parts, the owner service and the data service; the node's thread.
#ifndef CHORD_NODE_CORE_REPLICATION_REPLICATION_POLICY_H_
#define CHORD_NODE_CORE_REPLICATION_REPLICATION_POLICY_H_

#include <algorithm>
#include <vector>

#include "node/core/hand_over.h"
#include "node/core/membership/ring_updates.h"
#include "node/core/node_context.h"
#include "protocol/node_ref.h"

namespace chord {

class ReplicationPolicy final : public MembershipListener {
 public:
  ReplicationPolicy(NodeContext& ctx, HandOver& hand_over)
      : ctx_(ctx),
        hand_over_(hand_over),
        replicas_(ctx.config.replicas < 1 ? 1 : ctx.config.replicas) {}

  int replicas() const { return replicas_; }
  bool replicated() const { return replicas_ > 1; }
  // The other members of the replica set of this node's range: up to R-1 distinct processes
  // from the successor list, skipping this process's other vnodes. Chosen again only when the
  // successor list has changed since the last call (every write asks); valid until the next.
  const std::vector<NodeRef>& Targets() const {
    const std::vector<NodeRef>& now = ctx_.ring.successors;
    const auto same = [](const NodeRef& a, const NodeRef& b) {
      return a.id == b.id && a.addr == b.addr;
    };
    // Never chosen yet: both lists are empty, which is the choice an empty list gives.
    if (!std::equal(targets_from_.begin(), targets_from_.end(), now.begin(), now.end(), same)) {
      targets_ = ctx_.ring.DistinctProcessesAfter(static_cast<size_t>(replicas_ - 1));
      targets_from_ = now;
    }
    return targets_;
  }
  // Who else holds copies of a key whose owner is `owner`, from the nodes after it: empty
  // without replication.
  std::vector<NodeRef> HoldersAfter(const NodeRef& owner, const std::vector<NodeRef>& after) const {
    return RingState::DistinctProcesses(after, owner, static_cast<size_t>(replicas_ - 1));
  }

  // MembershipListener.
  void OnPredecessorChanged() override {
    // Keys held back for a predecessor no longer ours (HandOver::ToPredecessor) are not.
    RingState& ring = ctx_.ring;
    if (ring.keys_held_back_for != ring.predecessor) ring.keys_held_back_for.reset();
    // One copy: the new predecessor's range moves to it now.
    if (!replicated() && ring.predecessor) hand_over_.ToPredecessor(true, false);
  }
  void OnNotifiedByPredecessor(bool wants_keys, bool adopted) override {
    if (replicated()) {
      // A new predecessor that waits for its keys gets copies of all it will hold, once no
      // conditional write may still be decided on this node's word (HandOver::ToPredecessor).
      if (wants_keys) {
        hand_over_.ToPredecessor(/*announce=*/true, /*keep_copies=*/true);
      } else {
        ctx_.ring.keys_held_back_for.reset();
      }
      return;
    }
    // Same predecessor as before: hand over anything of its range still here (a previous
    // transfer may have failed).
    if (!adopted) hand_over_.ToPredecessor(/*announce=*/wants_keys, /*keep_copies=*/false);
  }

 private:
  NodeContext& ctx_;
  HandOver& hand_over_;
  const int replicas_;
  // Targets() as last chosen, and the successor list it was chosen from (the node's own
  // position, the other input, never changes).
  mutable std::vector<NodeRef> targets_;
  mutable std::vector<NodeRef> targets_from_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_REPLICATION_POLICY_H_
