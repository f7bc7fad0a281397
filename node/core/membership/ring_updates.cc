#include "node/core/membership/ring_updates.h"

#include <utility>

namespace chord {

void RingUpdates::SetSuccessors(std::vector<NodeRef> list) {
  RingState& ring = ctx_.ring;
  const NodeRef before = ring.successor();
  ring.successors = std::move(list);
  book_.SawAll(ring.successors);
  if (!ring.successors.empty()) ring.fingers[0] = ring.successors.front();
  if (!(ring.successor() == before)) {
    ++ctx_.counters.successor_changes;
    ctx_.Log(LogLevel::kInfo,
             "successor changed: " + before.Describe() + " -> " + ring.successor().Describe());
  }
}

void RingUpdates::SetPredecessor(std::optional<NodeRef> p, std::optional<Id> floor) {
  RingState& ring = ctx_.ring;
  const bool changed = p.has_value() != ring.predecessor.has_value() ||
                       (p && ring.predecessor && !(*p == *ring.predecessor));
  ring.predecessor = std::move(p);
  if (ring.predecessor) book_.Saw(*ring.predecessor);
  if (ring.predecessor) {
    ring.range_floor.reset();
  } else if (floor) {
    ring.range_floor = floor;
  }
  if (!changed) return;
  ++ctx_.counters.predecessor_changes;
  ctx_.Log(LogLevel::kInfo,
           "predecessor changed to " +
               (ring.predecessor ? ring.predecessor->Describe() : std::string("unknown")));
  if (listener_ != nullptr) listener_->OnPredecessorChanged();
}

}  // namespace chord
