// RingMerger: heals a ring that a partition split in two (or more). Zave's protocol never
// contacts a member it has dropped as dead, so after a partition each side keeps a ring of
// its own. Every probe_every_rounds rounds the merger asks one remembered member that is not
// a current neighbour (MemberBook) for its state; a member that answers is a candidate, and
// it is placed: between us and our successor it becomes our successor (its list merged with
// ours, then we notify it and tell it of our old successor), between our predecessor and us
// it becomes our predecessor (and learns of us and of our old predecessor); anywhere else the
// hint goes to the closest preceding node we know, which does the same. Every adoption sends
// the displaced neighbour to the other ring, so the two rings are zipped together step by
// step (ring unification, Shafaat, Ghodsi & Haridi, P2P 2007), while stabilization refines
// the lists; a candidate already in our ring ends after a few messages. Every pointer is
// adopted only from the candidate's own answer (liveness before adoption). Owned by
// Membership; the node's thread only.
#ifndef CHORD_NODE_CORE_MEMBERSHIP_RING_MERGER_H_
#define CHORD_NODE_CORE_MEMBERSHIP_RING_MERGER_H_

#include <cstdint>
#include <unordered_map>

#include "node/core/membership/member_book.h"
#include "node/core/membership/ring_updates.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "protocol/chord.pb.h"
#include "protocol/node_ref.h"

namespace chord {

class RingMerger {
 public:
  // How far a hint travels through a ring before it is dropped.
  static constexpr uint32_t kMaxHintHops = 32;

  RingMerger(NodeContext& ctx, RingUpdates& updates, MemberBook& book)
      : ctx_(ctx), updates_(updates), book_(book) {}

  // Called every maintenance round: every probe_every_rounds rounds, one remembered member
  // that is not a neighbour is asked whether it is there.
  void Round();
  void OnRpc(OpRef op, const wire::Envelope* response);
  void HandleMergeHint(ReplyToken from, const wire::Envelope& request);
  uint64_t merges() const { return merges_; }

 private:
  struct Check {
    NodeRef candidate;
    uint32_t hops_left = 0;
  };

  // Places `c` once its own state is known: `state` when it has just answered, else asked.
  void Consider(const NodeRef& c, uint32_t hops_left,
                const wire::GetStateResponse* state = nullptr);
  void Place(const NodeRef& c, const wire::GetStateResponse& state, uint32_t hops_left);
  void Hint(const NodeRef& to, const NodeRef& candidate, uint32_t hops_left);

  NodeContext& ctx_;
  RingUpdates& updates_;
  MemberBook& book_;
  std::unordered_map<uint64_t, Check> checks_;
  uint64_t next_check_ = 1;
  uint64_t rounds_ = 0;
  uint64_t merges_ = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_MEMBERSHIP_RING_MERGER_H_
