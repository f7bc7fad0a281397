#include "node/core/membership/membership.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "node/core/membership/member_answer.h"
#include "protocol/messages.h"

namespace chord {
namespace {

// How often (in rounds) changed remembered members are written to the store.
constexpr uint64_t kSaveEveryRounds = 10;

}  // namespace

void Membership::Start(const std::vector<std::string>& bootstraps, OpRef joined) {
  RingState& ring = ctx_.ring;
  if (ring.state != NodeState::kIdle) return;
  const bool any = std::any_of(bootstraps.begin(), bootstraps.end(), [&](const std::string& a) {
    return !a.empty() && a != ring.self.addr;
  });
  if (!any) {
    ring.state = NodeState::kJoined;
    ctx_.Log(LogLevel::kInfo, "created a new ring as " + ring.self.Describe());
    ctx_.completions.Post(joined, true);
    return;
  }
  ring.state = NodeState::kJoining;
  for (const std::string& a : bootstraps) {
    if (!a.empty() && a != ring.self.addr) book_.Saw(NodeRef::ForAddress(a));
  }
  joiner_.Start(bootstraps, joined);
}

void Membership::Round() {
  if (!ctx_.ring.joined()) return;
  stabilizer_.Run();
  CheckPredecessor();
  fingers_.Run();
  merger_.Round();
  // The remembered members reach the store at most every few rounds.
  if (++rounds_ % kSaveEveryRounds == 0) book_.SaveIfChanged();
}

void Membership::Suspect(const Id& suspect) {
  const RingState& ring = ctx_.ring;
  if (ring.joined() && ring.predecessor && ring.predecessor->id == suspect) CheckPredecessor();
}

void Membership::OnRpc(OpRef op, const wire::Envelope* response) {
  switch (op.kind) {
    case OpKind::kJoin:
      return joiner_.OnRpc(op, response);
    case OpKind::kStabilize:
      return stabilizer_.OnRpc(op, response);
    case OpKind::kCheckPredecessor:
      return OnPredecessorPing(response);
    case OpKind::kRectify:
      return notices_.OnRpc(op, response);
    case OpKind::kMerge:
      return merger_.OnRpc(op, response);
    default:
      return;
  }
}

void Membership::OnLookupDone(OpRef op, const LookupOutcome& outcome) {
  if (op.kind == OpKind::kJoin) return joiner_.OnLookupDone(op, outcome);
  if (op.kind == OpKind::kFixFingers) return fingers_.OnLookupDone(op, outcome);
}

void Membership::OnTimer(OpRef op) {
  if (op.kind == OpKind::kJoin) joiner_.OnTimer(op);
}

void Membership::CheckPredecessor() {
  const RingState& ring = ctx_.ring;
  if (checking_predecessor_ || !ring.predecessor || *ring.predecessor == ring.self) return;
  checking_predecessor_ = true;
  pinged_predecessor_ = *ring.predecessor;
  // Its state, not a ping: only an answer as a member (or a leaver) proves it alive.
  ctx_.out.Send(pinged_predecessor_, msg::GetState(), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kCheckPredecessor, kPing, 0, 0});
}

void Membership::OnPredecessorPing(const wire::Envelope* response) {
  checking_predecessor_ = false;
  RingState& ring = ctx_.ring;
  const NodeRef p = pinged_predecessor_;
  if (AnswersAsMemberOrLeaver(response, p) || !ring.predecessor || !(*ring.predecessor == p)) {
    return;
  }
  // It is deciding a conditional write on our word that it is our predecessor: kept until
  // that word runs out (the next check decides).
  if (ring.PredecessorHeld(ctx_.now.mono_ms)) return;
  ring.DropFinger(p);
  ctx_.Log(LogLevel::kInfo,
           "predecessor " + p.Describe() +
               (response == nullptr ? " did not answer" : " answered not as a member") +
               "; cleared");
  updates_.SetPredecessor(std::nullopt, p.id);
}

void Membership::HandleGetState(ReplyToken from, const wire::Envelope& request) {
  const RingState& ring = ctx_.ring;
  wire::Envelope reply;
  auto* r = reply.mutable_get_state_resp();
  ring.self.ToWire(r->mutable_self());
  if (ring.predecessor) ring.predecessor->ToWire(r->mutable_predecessor());
  for (const NodeRef& s : ring.successors) s.ToWire(r->add_successors());
  r->set_joined(ring.joined());
  r->set_leaving(ring.state == NodeState::kLeaving);
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

void Membership::HandleStabilizeNow(ReplyToken from, const wire::Envelope& request) {
  ctx_.out.Reply(from, request.request_id(), msg::EmptyAnswer(request));
  stabilizer_.RunSoon();
}

}  // namespace chord
