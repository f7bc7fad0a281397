#include "node/core/membership/finger_fixer.h"

namespace chord {

void FingerFixer::Run() {
  RingState& ring = ctx_.ring;
  if (running_ || !ring.joined()) return;
  if (ring.successors.empty()) {
    for (auto& f : ring.fingers) f.reset();
    return;
  }
  ring.fingers[0] = ring.successors.front();
  if (next_ <= 0 || next_ >= Id::kBits) next_ = 1;
  running_ = true;
  lookups_.Start(ring.self.id + Id::PowerOfTwo(next_), /*verify_owner=*/false,
                 OpRef{OpKind::kFixFingers, 0, 0, static_cast<uint64_t>(next_)});
}

void FingerFixer::OnLookupDone(OpRef op, const LookupOutcome& outcome) {
  running_ = false;
  if (!outcome.result.ok()) return;  // try the same finger next round
  RingState& ring = ctx_.ring;
  const int i = static_cast<int>(op.id);
  const NodeRef& x = outcome.result->owner;
  int j = i;
  if (x == ring.self) {
    // Every start from i on wraps past all other nodes back to us: no finger beyond.
    for (; j < Id::kBits; ++j) ring.fingers[j].reset();
  } else {
    for (; j < Id::kBits && Id::InHalfOpen(ring.self.id + Id::PowerOfTwo(j), ring.self.id, x.id);
         ++j) {
      ring.fingers[j] = x;
    }
    if (j == i) ++j;  // stale answer; move on rather than spin on one finger
  }
  next_ = j >= Id::kBits ? 1 : j;
}

}  // namespace chord
