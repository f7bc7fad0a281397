#include "node/core/membership/membership.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "protocol/messages.h"

namespace chord {
namespace {

// Bound on the departed nodes remembered.
constexpr size_t kMaxDeparted = 16;
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
      return OnRectifyPing(op.id, response);
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
  ctx_.out.Send(pinged_predecessor_, msg::Ping(), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kCheckPredecessor, kPing, 0, 0});
}

void Membership::OnPredecessorPing(const wire::Envelope* response) {
  checking_predecessor_ = false;
  RingState& ring = ctx_.ring;
  const NodeRef p = pinged_predecessor_;
  if (response != nullptr || !ring.predecessor || !(*ring.predecessor == p)) return;
  ring.DropFinger(p);
  ctx_.Log(LogLevel::kInfo, "predecessor " + p.Describe() + " did not answer; cleared");
  updates_.SetPredecessor(std::nullopt, p.id);
}

void Membership::Rectify(const NodeRef& n, bool wants_keys) {
  RingState& ring = ctx_.ring;
  if (n == ring.self || !ring.joined()) return;
  auto gone = std::find(departed_.begin(), departed_.end(), n.id);
  if (gone != departed_.end()) {
    // A late notify from a node that has told us it left. Only a fresh join (a restart on
    // the same address) brings it back.
    if (!wants_keys) return;
    departed_.erase(gone);
  }
  if (!ring.predecessor || Id::InOpen(n.id, ring.predecessor->id, ring.self.id)) {
    updates_.SetPredecessor(n);
    return updates_.NotifiedByPredecessor(wants_keys, /*adopted=*/true);
  }
  if (*ring.predecessor == n) return updates_.NotifiedByPredecessor(wants_keys, /*adopted=*/false);
  // n is not between: keep the current predecessor unless it is dead.
  const uint64_t id = next_rectify_++;
  rectify_checks_[id] = RectifyCheck{*ring.predecessor, n};
  ctx_.out.Send(*ring.predecessor, msg::Ping(), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kRectify, kPing, 0, id});
}

void Membership::OnRectifyPing(uint64_t id, const wire::Envelope* response) {
  auto it = rectify_checks_.find(id);
  if (it == rectify_checks_.end()) return;
  const RectifyCheck check = it->second;
  rectify_checks_.erase(it);
  RingState& ring = ctx_.ring;
  if (!ring.joined() || response != nullptr) return;
  if (ring.predecessor && *ring.predecessor == check.current) {
    ring.DropFinger(check.current);
    updates_.SetPredecessor(check.candidate);
  }
}

void Membership::HandleGetState(ReplyToken from, const wire::Envelope& request) {
  const RingState& ring = ctx_.ring;
  wire::Envelope reply;
  auto* r = reply.mutable_get_state_resp();
  ring.self.ToWire(r->mutable_self());
  if (ring.predecessor) ring.predecessor->ToWire(r->mutable_predecessor());
  for (const NodeRef& s : ring.successors) s.ToWire(r->add_successors());
  r->set_joined(ring.joined());
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

void Membership::HandleNotify(ReplyToken from, const wire::Envelope& request) {
  ctx_.out.Reply(from, request.request_id(), msg::EmptyAnswer(request));
  if (auto n = NodeRef::FromWire(request.notify().node())) {
    book_.Saw(*n);
    Rectify(*n, request.notify().want_keys());
  }
}

void Membership::HandleStabilizeNow(ReplyToken from, const wire::Envelope& request) {
  ctx_.out.Reply(from, request.request_id(), msg::EmptyAnswer(request));
  stabilizer_.RunSoon();
}

void Membership::HandleLeave(ReplyToken from, const wire::Envelope& request) {
  ctx_.out.Reply(from, request.request_id(), msg::EmptyAnswer(request));
  RingState& ring = ctx_.ring;
  const auto& l = request.leave();
  auto leaver = NodeRef::FromWire(l.node());
  if (!leaver || !ring.joined()) return;
  ctx_.Log(LogLevel::kInfo, leaver->Describe() + " is leaving the ring");
  ring.DropFinger(*leaver);
  if (std::find(departed_.begin(), departed_.end(), leaver->id) == departed_.end()) {
    departed_.push_back(leaver->id);
    if (departed_.size() > kMaxDeparted) departed_.pop_front();
  }
  if (ring.predecessor && *ring.predecessor == *leaver) {
    // Its keys are already here; its predecessor will notify us shortly. Until then our range
    // starts where the leaver's did.
    auto leaver_pred = l.has_predecessor() ? NodeRef::FromWire(l.predecessor()) : std::nullopt;
    updates_.SetPredecessor(std::nullopt, leaver_pred ? leaver_pred->id : leaver->id);
  }
  if (!ring.successors.empty() && ring.successors.front() == *leaver) {
    TakeLeaverSuccessors(*leaver, l);
    return stabilizer_.Run();
  }
  std::vector<NodeRef> rest = ring.successors;
  rest.erase(std::remove(rest.begin(), rest.end(), *leaver), rest.end());
  if (rest.size() != ring.successors.size()) updates_.SetSuccessors(std::move(rest));
}

void Membership::TakeLeaverSuccessors(const NodeRef& leaver, const wire::LeaveRequest& leave) {
  // We just heard the leaver's list from the leaver itself. Merge it with the rest of ours,
  // in clockwise order from us: the leaver's may be stale and skip past us.
  const RingState& ring = ctx_.ring;
  std::vector<NodeRef> theirs;
  for (const auto& info : leave.successors()) {
    auto n = NodeRef::FromWire(info);
    if (n && !(*n == leaver)) theirs.push_back(std::move(*n));
  }
  std::vector<NodeRef> ours(ring.successors.begin() + 1, ring.successors.end());
  ours.insert(ours.end(), theirs.begin(), theirs.end());
  updates_.SetSuccessors(ring.MergedSuccessorList({}, ours));
}

}  // namespace chord
