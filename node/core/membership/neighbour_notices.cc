#include "node/core/membership/neighbour_notices.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "node/core/membership/member_answer.h"
#include "protocol/messages.h"

namespace chord {
namespace {

// Bound on the departed nodes remembered, and on the checks in flight.
constexpr size_t kMaxDeparted = 16;
constexpr size_t kMaxChecks = 64;

}  // namespace

void NeighbourNotices::Ask(Step step, Check check) {
  if (checks_.size() >= kMaxChecks) return;
  // One question per node and step at a time: repeated notices wait for the same answer.
  for (const auto& [id, c] : checks_) {
    if (c.step == step && c.asked == check.asked) return;
  }
  check.step = step;
  const uint64_t id = next_check_++;
  const NodeRef to = check.asked;
  checks_.emplace(id, std::move(check));
  // Every step asks for the node's state: only an answer as a member (or, for the current
  // predecessor, a leaver) proves it alive.
  ctx_.out.Send(to, msg::GetState(), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kRectify, step, 0, id});
}

void NeighbourNotices::OnRpc(OpRef op, const wire::Envelope* response) {
  auto it = checks_.find(op.id);
  if (it == checks_.end()) return;
  const Check check = std::move(it->second);
  checks_.erase(it);
  if (!ctx_.ring.joined()) return;
  if (op.step == kPingPredecessor) return OnPredecessorPing(check, response);
  if (op.step == kConfirmNotifier) return OnNotifierState(check, response);
  if (op.step == kConfirmLeaver) return OnLeaverState(check, response);
}

void NeighbourNotices::HandleNotify(ReplyToken from, const wire::Envelope& request) {
  ctx_.out.Reply(from, request.request_id(), msg::EmptyAnswer(request));
  if (auto n = NodeRef::FromWire(request.notify().node())) {
    Rectify(*n, request.notify().want_keys());
  }
}

void NeighbourNotices::Rectify(const NodeRef& n, bool wants_keys) {
  const RingState& ring = ctx_.ring;
  if (n == ring.self || !ring.joined()) return;
  const uint64_t forget_ms = kDepartedForgetRpcs * ctx_.config.rpc_timeout_ms;
  while (!departed_.empty() && departed_.front().at_ms + forget_ms <= ctx_.now.mono_ms) {
    departed_.pop_front();
  }
  auto gone = std::find_if(departed_.begin(), departed_.end(),
                           [&n](const Departed& d) { return d.id == n.id; });
  if (gone != departed_.end()) {
    // A late notify from a node that has told us it left. Only a fresh join (a restart on
    // the same address) brings it back this soon.
    if (!wants_keys) return;
    departed_.erase(gone);
  }
  if (!ring.predecessor || Id::InOpen(n.id, ring.predecessor->id, ring.self.id)) {
    // Liveness before adoption: the notifier itself must answer as a member first.
    return Ask(kConfirmNotifier, Check{n, n, wants_keys, {}});
  }
  if (*ring.predecessor == n) {
    book_.Saw(n);
    return updates_.NotifiedByPredecessor(wants_keys, /*adopted=*/false);
  }
  // n is not between: keep the current predecessor unless it is dead.
  Ask(kPingPredecessor, Check{*ring.predecessor, n, wants_keys, {}});
}

void NeighbourNotices::OnNotifierState(const Check& check, const wire::Envelope* response) {
  const RingState& ring = ctx_.ring;
  const NodeRef& n = check.candidate;
  if (!AnswersAsMember(response, n)) return;
  if (ring.predecessor && !Id::InOpen(n.id, ring.predecessor->id, ring.self.id)) {
    // A better predecessor came meanwhile (or it is ours already).
    if (*ring.predecessor == n) updates_.NotifiedByPredecessor(check.wants_keys, false);
    return;
  }
  updates_.SetPredecessor(n);
  updates_.NotifiedByPredecessor(check.wants_keys, /*adopted=*/true);
}

void NeighbourNotices::OnPredecessorPing(const Check& check, const wire::Envelope* response) {
  RingState& ring = ctx_.ring;
  if (AnswersAsMemberOrLeaver(response, check.asked) || !ring.predecessor ||
      !(*ring.predecessor == check.asked)) {
    return;
  }
  // Kept while it may be deciding on our word (Membership::OnPredecessorPing); the candidate
  // notifies again.
  if (ring.PredecessorHeld(ctx_.now.mono_ms)) return;
  ring.DropFinger(check.asked);
  // The candidate is adopted only once it has answered us itself.
  Ask(kConfirmNotifier, Check{check.candidate, check.candidate, check.wants_keys, {}});
  updates_.SetPredecessor(std::nullopt, check.asked.id);
}

void NeighbourNotices::HandleLeave(ReplyToken from, const wire::Envelope& request, bool verified) {
  ctx_.out.Reply(from, request.request_id(), msg::EmptyAnswer(request));
  auto leaver = NodeRef::FromWire(request.leave().node());
  if (!leaver || !ctx_.ring.joined()) return;
  if (verified) return ApplyLeave(*leaver, request.leave(), /*verified=*/true);
  // Anyone could have sent this: act on it only if the leaver no longer says it is a member.
  Ask(kConfirmLeaver, Check{*leaver, *leaver, false, request.leave()});
}

void NeighbourNotices::OnLeaverState(const Check& check, const wire::Envelope* response) {
  if (AnswersAsMember(response, check.asked)) {
    ctx_.Log(LogLevel::kWarn, "ignored a leave notice for " + check.asked.Describe() +
                                  ", which answers that it is still a member");
    return;
  }
  ApplyLeave(check.asked, check.leave, /*verified=*/false);
}

void NeighbourNotices::ApplyLeave(const NodeRef& leaver, const wire::LeaveRequest& l,
                                  bool verified) {
  RingState& ring = ctx_.ring;
  ctx_.Log(LogLevel::kInfo, leaver.Describe() + " is leaving the ring");
  ring.DropFinger(leaver);
  book_.Forget(leaver);
  departed_.erase(std::remove_if(departed_.begin(), departed_.end(),
                                 [&leaver](const Departed& d) { return d.id == leaver.id; }),
                  departed_.end());
  departed_.push_back(Departed{leaver.id, ctx_.now.mono_ms});  // in the order of their times
  if (departed_.size() > kMaxDeparted) departed_.pop_front();
  // Our predecessor, or cleared already (it answered not as a member: a node of an older
  // build says nothing of leaving) with our range starting at it. In that second case only
  // on the leaver's own word: a notice anyone could send, confirmed by a silent leaver, would
  // otherwise move our range's start wherever its `predecessor` says.
  if ((ring.predecessor && *ring.predecessor == leaver) ||
      (verified && !ring.predecessor && ring.range_floor && *ring.range_floor == leaver.id)) {
    // Its keys are already here; its predecessor will notify us shortly. Until then our range
    // starts where the leaver's did.
    auto leaver_pred = l.has_predecessor() ? NodeRef::FromWire(l.predecessor()) : std::nullopt;
    updates_.SetPredecessor(std::nullopt, leaver_pred ? leaver_pred->id : leaver.id);
  }
  if (!ring.successors.empty() && ring.successors.front() == leaver) {
    TakeLeaverSuccessors(leaver, l);
    return stabilizer_.Run();
  }
  std::vector<NodeRef> rest = ring.successors;
  rest.erase(std::remove(rest.begin(), rest.end(), leaver), rest.end());
  if (rest.size() != ring.successors.size()) updates_.SetSuccessors(std::move(rest));
}

void NeighbourNotices::TakeLeaverSuccessors(const NodeRef& leaver, const wire::LeaveRequest& l) {
  // We just heard the leaver's list from the leaver itself. Merge it with the rest of ours,
  // in clockwise order from us: the leaver's may be stale and skip past us.
  const RingState& ring = ctx_.ring;
  std::vector<NodeRef> ours(ring.successors.begin() + 1, ring.successors.end());
  for (const auto& info : l.successors()) {
    auto n = NodeRef::FromWire(info);
    if (n && !(*n == leaver)) ours.push_back(std::move(*n));
  }
  updates_.SetSuccessors(ring.MergedSuccessorList({}, ours));
}

}  // namespace chord
