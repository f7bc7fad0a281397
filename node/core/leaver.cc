#include "node/core/leaver.h"

#include <algorithm>
#include <string>
#include <vector>

#include "protocol/messages.h"

namespace chord {

void Leaver::Start(OpRef left) {
  RingState& ring = ctx_.ring;
  if (ring.state == NodeState::kLeaving || ring.state == NodeState::kLeft) return;
  left_ = left;
  const bool was_joined = ring.joined();
  ring.state = NodeState::kLeaving;
  const uint64_t held = ctx_.store()->Count();
  if (!was_joined || ring.successors.empty()) {
    if (was_joined && held > 0) {
      ctx_.Log(LogLevel::kWarn,
               "leaving a ring of one: its " + std::to_string(held) + " keys go with it");
    }
    return Done();
  }
  ctx_.Log(LogLevel::kInfo,
           "leaving: handing " + std::to_string(held) + " keys to " + ring.successor().Describe());
  attempts_left_ = static_cast<int>(ring.successors.size());
  if (ring.PredecessorHeld(ctx_.now.mono_ms)) {
    // The predecessor may still decide a conditional write on this node's word; the successor,
    // given our records, would serve the arc of the node it adopts as predecessor (which may
    // be one that had dropped the asker). Wait for the hold to end (an RPC timeout at most:
    // condition reads are refused from now on).
    ctx_.Log(LogLevel::kInfo,
             "waiting " + std::to_string(ring.predecessor_held_until_ms - ctx_.now.mono_ms) +
                 " ms for the predecessor's conditional write before handing over");
    ctx_.timers.Arm(OpRef{OpKind::kLeave, kWaitForHold, 0, 0}, ring.predecessor_held_until_ms);
    return;
  }
  HandOff();
}

void Leaver::OnTimer(OpRef op) {
  if (op.step == kWaitForHold && ctx_.ring.state == NodeState::kLeaving) HandOff();
}

void Leaver::HandOff() {
  const RingState& ring = ctx_.ring;
  if (ring.successors.empty() || attempts_left_ <= 0) {
    ctx_.Log(LogLevel::kError, "leaving without handing off " +
                                   std::to_string(ctx_.store()->Count()) +
                                   " keys: no successor accepted them");
    return NotifyNeighbours();
  }
  target_ = ring.successors.front();
  ctx_.out.Send(target_, msg::Ping(), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kLeave, kPing, 0, 0});
}

void Leaver::NextSuccessor() {
  std::vector<NodeRef>& list = ctx_.ring.successors;
  list.erase(std::remove(list.begin(), list.end(), target_), list.end());
  --attempts_left_;
  HandOff();
}

void Leaver::OnRpc(OpRef op, const wire::Envelope* response) {
  if (op.step == kPing) {
    if (response == nullptr) return NextSuccessor();
    return hand_over_.ForLeave(target_, OpRef{OpKind::kLeave, kHandOver, 0, 0});
  }
  if (op.step == kNotify && --notices_pending_ == 0) {
    ctx_.Log(LogLevel::kInfo, "left the ring");
    Done();
  }
}

void Leaver::OnHandOverDone(OpRef op, bool ok) {
  if (op.step != kHandOver) return;
  if (ok) return NotifyNeighbours();
  NextSuccessor();
}

void Leaver::NotifyNeighbours() {
  // Tell the successor and the predecessor; finish when both answered or timed out.
  const RingState& ring = ctx_.ring;
  std::vector<NodeRef> targets;
  if (!ring.successors.empty()) targets.push_back(ring.successors.front());
  if (ring.predecessor && !(*ring.predecessor == ring.self) &&
      std::find(targets.begin(), targets.end(), *ring.predecessor) == targets.end()) {
    targets.push_back(*ring.predecessor);
  }
  if (targets.empty()) return Done();
  notices_pending_ = static_cast<int>(targets.size());
  for (const NodeRef& t : targets) {
    ctx_.out.Send(t, msg::Leave(ring.self, ring.predecessor, ring.successors),
                  ctx_.config.rpc_timeout_ms, OpRef{OpKind::kLeave, kNotify, 0, 0});
  }
}

void Leaver::Done() {
  ctx_.ring.state = NodeState::kLeft;
  ctx_.completions.Post(left_, true);
}

}  // namespace chord
