#include "node/core/ring_state.h"

#include <algorithm>

namespace chord {

std::vector<NodeRef> RingState::OrderedSuccessorList(const std::vector<NodeRef>& candidates) const {
  // Each entry must lie strictly clockwise after the previous one and before this node. A
  // list that reaches us has wrapped around the ring; one that jumps past us is stale (it
  // skips this node): either way the rest is not our successors, and keeping it would
  // disorder the list. A shorter list is refilled by the next stabilization.
  std::vector<NodeRef> out;
  const Id* prev = &self.id;
  for (const NodeRef& n : candidates) {
    if (static_cast<int>(out.size()) >= max_successors) break;
    if (n == self || !Id::InOpen(n.id, *prev, self.id)) break;
    out.push_back(n);
    prev = &out.back().id;
  }
  return out;
}

std::vector<NodeRef> RingState::MergedSuccessorList(const std::vector<NodeRef>& first,
                                                    const std::vector<NodeRef>& more) const {
  std::vector<NodeRef> merged = OrderedSuccessorList(first);
  for (const NodeRef& n : more) {
    if (n == self || std::find(merged.begin(), merged.end(), n) != merged.end()) continue;
    merged.push_back(n);
  }
  std::sort(merged.begin(), merged.end(), [this](const NodeRef& a, const NodeRef& b) {
    return Id::Distance(self.id, a.id) < Id::Distance(self.id, b.id);
  });
  return OrderedSuccessorList(merged);
}

std::optional<OwnerSpan> RingState::OwnerFromSuccessors(const Id& target) const {
  if (successors.empty()) return OwnerSpan{self, {self}};  // alone: we own everything
  // The successor list spans (self, last]: the owner is the first entry at or after target.
  // Answer from deep in the list only while enough entries follow the owner to skip dead
  // ones (at least half of S); otherwise the node just before is the better last hop.
  const size_t keep = static_cast<size_t>((max_successors + 1) / 2);
  const bool full = static_cast<int>(successors.size()) >= max_successors;
  const NodeRef* prev = &self;
  for (size_t i = 0; i < successors.size(); ++i) {
    if (i > 0 && full && successors.size() - i < keep) return std::nullopt;
    if (Id::InHalfOpen(target, prev->id, successors[i].id)) {
      OwnerSpan span{*prev, {}};
      span.owners.assign(successors.begin() + static_cast<std::ptrdiff_t>(i), successors.end());
      return span;
    }
    prev = &successors[i];
  }
  return std::nullopt;
}

std::vector<NodeRef> RingState::ClosestPreceding(const Id& target, int max) const {
  std::vector<NodeRef> out;
  auto consider = [&](const NodeRef& n) {
    if (n == self || !Id::InOpen(n.id, self.id, target)) return;
    if (std::find(out.begin(), out.end(), n) != out.end()) return;
    out.push_back(n);
  };
  for (int i = Id::kBits - 1; i >= 0; --i) {
    if (fingers[i]) consider(*fingers[i]);
  }
  for (const NodeRef& s : successors) consider(s);
  std::sort(out.begin(), out.end(), [&](const NodeRef& a, const NodeRef& b) {
    return Id::Distance(a.id, target) < Id::Distance(b.id, target);
  });
  if (static_cast<int>(out.size()) > max) out.resize(static_cast<size_t>(std::max(max, 0)));
  return out;
}

std::optional<Id> RingState::RangeStart() const {
  if (predecessor && !(*predecessor == self)) return predecessor->id;
  if (successors.empty()) return std::nullopt;  // alone: the whole ring
  return range_floor;  // predecessor unknown: where our range last started, if known
}

std::optional<KeyRange> RingState::OwnRange() const {
  const auto start = RangeStart();
  if (start) return KeyRange{*start, self.id};
  if (successors.empty()) return KeyRange{self.id, self.id};
  return std::nullopt;
}

bool RingState::Owns(const Id& key_id) const {
  if (!joined()) return false;
  const auto start = RangeStart();
  return !start || Id::InHalfOpen(key_id, *start, self.id);
}

const NodeRef* RingState::OwnerHint(const Id& key_id) const {
  if (Owns(key_id)) return nullptr;
  if (Id::InHalfOpen(key_id, self.id, successor().id)) return &successor();
  return predecessor ? &*predecessor : nullptr;
}

Id RingState::AttributedRangeStart() const {
  std::optional<Id> prev;
  for (const NodeRef& v : process_vnodes) {
    if (v == self) continue;
    if (!prev || Id::Distance(v.id, self.id) < Id::Distance(*prev, self.id)) prev = v.id;
  }
  return prev ? *prev : self.id;
}

std::optional<KeyRange> RingState::HandOverRange(const NodeRef& to, bool for_leave) const {
  // A leave hands on all this position accounts for; a join those clockwise up to the new
  // predecessor, (start, to] (with one vnode: everything outside (to, self]).
  const Id start = AttributedRangeStart();
  if (for_leave) return KeyRange{start, self.id};
  if (to.SameProcess(self)) return std::nullopt;  // one shared store: nothing to copy
  if (start == self.id || Id::InOpen(to.id, start, self.id)) return KeyRange{start, to.id};
  return std::nullopt;
}

std::vector<NodeRef> RingState::DistinctProcesses(const std::vector<NodeRef>& from,
                                                  const NodeRef& exclude, size_t n) {
  std::vector<NodeRef> out;
  for (const NodeRef& c : from) {
    if (out.size() >= n) break;
    if (c.SameProcess(exclude)) continue;
    if (std::any_of(out.begin(), out.end(), [&c](const NodeRef& o) { return o.SameProcess(c); })) {
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::vector<NodeRef> RingState::DistinctProcessesAfter(size_t n) const {
  return DistinctProcesses(successors, self, n);
}

void RingState::DropFinger(const NodeRef& n) {
  for (auto& f : fingers) {
    if (f && *f == n) f.reset();
  }
}

}  // namespace chord
