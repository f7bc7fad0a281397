// FingerFixer: keeps the finger table, finger i = successor(self + 2^i). Finger 0 is the
// successor itself; each round one lookup refreshes the next finger and every later finger
// that falls in the same arc. Fingers only shorten lookups; correctness rests on the
// successor lists. Owned by Membership; the node's thread only.
#ifndef CHORD_NODE_CORE_MEMBERSHIP_FINGER_FIXER_H_
#define CHORD_NODE_CORE_MEMBERSHIP_FINGER_FIXER_H_

#include <cstdint>

#include "node/core/completions.h"
#include "node/core/lookup.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"

namespace chord {

class FingerFixer {
 public:
  FingerFixer(NodeContext& ctx, LookupService& lookups) : ctx_(ctx), lookups_(lookups) {}

  // Refreshes the next finger unless a refresh is under way.
  void Run();
  void OnLookupDone(OpRef op, const LookupOutcome& outcome);

 private:
  NodeContext& ctx_;
  LookupService& lookups_;
  bool running_ = false;
  int next_ = 1;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_MEMBERSHIP_FINGER_FIXER_H_
