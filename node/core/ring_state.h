// RingState: what one ring position knows of the ring (its identity, predecessor, successor
// list and fingers) and the ring arithmetic over it, as a value type: every question about
// ranges, owners, next hops, successor-list order and replica placement is a pure function
// here, tested with cases as data (tests/unit/ring_state_test.cc). Zave's rules for the
// successor list (shared/RING.md) are OrderedSuccessorList and MergedSuccessorList.
// Membership changes the fields, but for the two that guard conditional writes (set by the
// OwnerService and the HandOver, cleared by the ReplicationPolicy too); everyone else only
// reads them. Not thread-safe.
#ifndef CHORD_NODE_CORE_RING_STATE_H_
#define CHORD_NODE_CORE_RING_STATE_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <vector>

#include "protocol/id.h"
#include "protocol/node_ref.h"

namespace chord {

enum class NodeState { kIdle, kJoining, kJoined, kLeaving, kLeft };

// The ring range (from, to], clockwise; from == to is the whole ring.
struct KeyRange {
  Id from;
  Id to;
};

// Who owns a target, as far as a successor list tells.
struct OwnerSpan {
  NodeRef predecessor;          // the node just before the owner
  std::vector<NodeRef> owners;  // the owner, then the rest of the list after it
};

struct RingState {
  RingState(NodeRef self_ref, int successor_list_length)
      : self(std::move(self_ref)),
        max_successors(successor_list_length < 1 ? 1 : successor_list_length),
        process_vnodes{self} {}

  NodeRef self;
  int max_successors;  // S
  NodeState state = NodeState::kIdle;
  std::optional<NodeRef> predecessor;
  std::vector<NodeRef> successors;  // never contains self; empty: alone
  std::array<std::optional<NodeRef>, Id::kBits> fingers;
  std::optional<Id> range_floor;   // start of our range while the predecessor is unknown
  bool awaiting_transfer = false;  // joined, but the successor has not handed our keys over
  // Until then (monotonic ms) the predecessor is not dropped for a missed check: it asked us,
  // its first replica, to confirm it before a conditional write (OwnerService).
  uint64_t predecessor_held_until_ms = 0;
  // The predecessor that waits for its keys while they are held back for that hold (HandOver);
  // no asker is confirmed meanwhile, so that no one extends the hold (OwnerService).
  std::optional<NodeRef> keys_held_back_for;
  std::vector<NodeRef> process_vnodes;  // every ring position of this process, self included

  bool joined() const { return state == NodeState::kJoined; }
  // Whether the predecessor may not be dropped for a missed check at `now_ms`
  // (predecessor_held_until_ms).
  bool PredecessorHeld(uint64_t now_ms) const { return now_ms < predecessor_held_until_ms; }
  // The head of the successor list, or self when alone.
  const NodeRef& successor() const { return successors.empty() ? self : successors.front(); }
  // Whether `n` is the predecessor or on the successor list.
  bool IsNeighbour(const NodeRef& n) const {
    return (predecessor && *predecessor == n) ||
           std::find(successors.begin(), successors.end(), n) != successors.end();
  }
  // Whether `n` is a neighbour (IsNeighbour) or a finger.
  bool PointsTo(const NodeRef& n) const {
    return IsNeighbour(n) ||
           std::any_of(fingers.begin(), fingers.end(),
                       [&n](const std::optional<NodeRef>& f) { return f && *f == n; });
  }

  // The longest prefix of `candidates` that is a well-ordered successor list for this node:
  // strictly clockwise, never reaching or passing this node, at most S long.
  std::vector<NodeRef> OrderedSuccessorList(const std::vector<NodeRef>& candidates) const;
  // Two views of the successors merged: the ordered prefix of `first` (a list heard from
  // one node, cut where it wraps), plus the entries of `more` it lacks (never self), sorted
  // clockwise from self and ordered as above.
  std::vector<NodeRef> MergedSuccessorList(const std::vector<NodeRef>& first,
                                           const std::vector<NodeRef>& more) const;
  // When `target` falls within the span of the successor list (answering from deep in it
  // only while at least half of S entries follow the owner), who owns it; nullopt otherwise.
  std::optional<OwnerSpan> OwnerFromSuccessors(const Id& target) const;
  // Up to `max` known nodes (fingers and successors) strictly between self and `target`,
  // closest to the target first.
  std::vector<NodeRef> ClosestPreceding(const Id& target, int max) const;

  // Where this node's range (start, self] begins; nullopt: unknown (or alone: the whole ring
  // is ours, see Owns).
  std::optional<Id> RangeStart() const;
  // The range this node answers for as owner: (start, self], the whole ring when alone;
  // nullopt while its start is unknown.
  std::optional<KeyRange> OwnRange() const;
  // True when joined and `key_id` lies in (predecessor, self].
  bool Owns(const Id& key_id) const;
  // For a key this node does not own: the neighbour more likely to (the successor when the
  // key lies between us, else the predecessor); nullptr when none is known or we own it.
  const NodeRef* OwnerHint(const Id& key_id) const;
  // Where the records this ring position accounts for begin: the previous ring position of
  // this process (self with one vnode, making (start, self] the whole ring). Every record of
  // a store shared by vnodes falls to exactly one of them.
  Id AttributedRangeStart() const;
  // The records a hand-over to `to` covers: on a leave everything this position accounts
  // for; on a join (start, to]. Nullopt when there is nothing to send (`to` is a sibling
  // vnode, sharing the store, or lies outside what this position accounts for).
  std::optional<KeyRange> HandOverRange(const NodeRef& to, bool for_leave) const;
  // Up to `n` successors of distinct processes, none of them this process, in list order.
  std::vector<NodeRef> DistinctProcessesAfter(size_t n) const;
  // Starting from `from` (a list in ring order), up to `n` entries of processes that are
  // neither `exclude`'s nor each other's.
  static std::vector<NodeRef> DistinctProcesses(const std::vector<NodeRef>& from,
                                                const NodeRef& exclude, size_t n);

  // Forgets `n` wherever a finger names it (it did not answer).
  void DropFinger(const NodeRef& n);
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_RING_STATE_H_
