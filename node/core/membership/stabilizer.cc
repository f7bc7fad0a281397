#include "node/core/membership/stabilizer.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "node/core/membership/member_answer.h"
#include "protocol/messages.h"

namespace chord {
namespace {

std::vector<NodeRef> WithHead(const NodeRef& head,
                              const google::protobuf::RepeatedPtrField<wire::NodeInfo>& rest) {
  std::vector<NodeRef> out{head};
  for (const auto& info : rest) {
    if (auto n = NodeRef::FromWire(info)) out.push_back(std::move(*n));
  }
  return out;
}

}  // namespace

void Stabilizer::Run() {
  if (running_ || !ctx_.ring.joined()) return;
  running_ = true;
  ++round_;
  FromSuccessor(static_cast<int>(ctx_.ring.successors.size()) + 1, /*head_retried=*/false);
}

void Stabilizer::RunSoon() {
  if (running_) {
    again_ = true;
  } else {
    Run();
  }
}

void Stabilizer::OnRpc(OpRef op, const wire::Envelope* response) {
  if (!running_ || op.id != round_) return;
  if (!ctx_.ring.joined()) {
    running_ = false;
    return;
  }
  if (op.step == kFromSuccessor) return OnSuccessorState(response);
  if (op.step == kFromCandidate) return OnCandidateState(response);
}

void Stabilizer::FromSuccessor(int attempts_left, bool head_retried) {
  const RingState& ring = ctx_.ring;
  if (!ring.joined()) {
    running_ = false;
    return;
  }
  if (ring.successors.empty()) {
    // Alone. If some node has notified us, it is our best successor candidate.
    if (ring.predecessor && !(*ring.predecessor == ring.self))
      return FromCandidate(*ring.predecessor);
    return Finish();
  }
  if (attempts_left <= 0) return Finish();
  asked_ = ring.successors.front();
  attempts_left_ = attempts_left;
  head_retried_ = head_retried;
  ctx_.out.Send(asked_, msg::GetState(), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kStabilize, kFromSuccessor, 0, round_});
}

void Stabilizer::DropHead(bool dead) {
  const NodeRef head = asked_;
  std::vector<NodeRef> rest = ctx_.ring.successors;
  rest.erase(std::remove(rest.begin(), rest.end(), head), rest.end());
  if (dead) {
    ctx_.ring.DropFinger(head);
    ctx_.Log(LogLevel::kInfo, "successor " + head.Describe() + " did not answer; " +
                                  (rest.empty() ? std::string("no other successor known")
                                                : "next is " + rest.front().Describe()));
  }
  updates_.SetSuccessors(std::move(rest));
  FromSuccessor(attempts_left_ - 1, /*head_retried=*/false);
}

void Stabilizer::OnSuccessorState(const wire::Envelope* response) {
  const bool answered = response != nullptr && response->has_get_state_resp();
  // A successor that answers but is no longer joined is leaving: like a dead one, it must not
  // stay at the head (a late answer can arrive after its leave notice). An answer from another
  // position (an address whose process now runs other vnodes) is not the head's either.
  if (answered && !AnswersAsMember(response, asked_)) return DropHead(/*dead=*/false);
  // One slow answer is not proof of death: dropping a live successor on a late reply could
  // leave us with only dead ones. Ask once more before giving up on it.
  if (!answered && !head_retried_) return FromSuccessor(attempts_left_, /*head_retried=*/true);
  if (!answered) return DropHead(/*dead=*/true);
  const RingState& ring = ctx_.ring;
  const NodeRef head = asked_;
  // The list changed while we waited (a leave notice): this answer is stale.
  if (ring.successors.empty() || !(ring.successors.front() == head)) return Finish();
  const auto& state = response->get_state_resp();
  updates_.SetSuccessors(ring.OrderedSuccessorList(WithHead(head, state.successors())));
  std::optional<NodeRef> candidate;
  if (state.has_predecessor()) candidate = NodeRef::FromWire(state.predecessor());
  if (candidate && Id::InOpen(candidate->id, ring.self.id, head.id))
    return FromCandidate(*candidate);
  Finish();
}

void Stabilizer::FromCandidate(const NodeRef& candidate) {
  asked_ = candidate;
  ctx_.out.Send(candidate, msg::GetState(), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kStabilize, kFromCandidate, 0, round_});
}

void Stabilizer::OnCandidateState(const wire::Envelope* response) {
  const RingState& ring = ctx_.ring;
  const NodeRef candidate = asked_;
  // Adopt the candidate only once it has answered (liveness before adoption).
  if (AnswersAsMember(response, candidate) &&
      (ring.successors.empty() || Id::InOpen(candidate.id, ring.self.id, ring.successors[0].id))) {
    // [c] + c.succ, merged with the list we just took from the old head (heard from in this
    // same round): if c's list is stale, the old head still backs it up.
    updates_.SetSuccessors(ring.MergedSuccessorList(
        WithHead(candidate, response->get_state_resp().successors()), ring.successors));
  }
  Finish();
}

void Stabilizer::Finish() {
  running_ = false;
  ++ctx_.counters.stabilize_rounds;
  const RingState& ring = ctx_.ring;
  if (!ring.successors.empty() && ring.joined()) {
    ctx_.out.Send(ring.successors.front(), msg::Notify(ring.self, ring.awaiting_transfer),
                  ctx_.config.rpc_timeout_ms, OpRef{});
  }
  if (again_) {
    // Someone asked for a round while this one ran: its news may not be in this one.
    again_ = false;
    Run();
  }
}

}  // namespace chord
