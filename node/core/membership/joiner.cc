#include "node/core/membership/joiner.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "protocol/messages.h"

namespace chord {
namespace {

// Bound on the addresses a joining node remembers as further bootstraps.
constexpr size_t kMaxRemembered = 16;

}  // namespace

void Joiner::Start(const std::vector<std::string>& bootstraps, OpRef joined) {
  joined_ = joined;
  for (const std::string& a : bootstraps) {
    if (!a.empty() && a != ctx_.self().addr) bootstraps_.push_back(a);
  }
  Attempt();
}

void Joiner::Attempt() {
  if (ctx_.ring.state != NodeState::kJoining || bootstraps_.empty()) return;
  ++attempt_;
  // Find p with between(p, me, head(p.succ)), then ask p itself for its successor list.
  via_ = bootstraps_[attempts_ % bootstraps_.size()];
  lookups_.StartThrough(ctx_.self().id, NodeRef{Id::Sha1(via_), via_}, Ref(kLookup));
}

void Joiner::Remember(const std::string& addr) {
  if (addr == ctx_.self().addr || bootstraps_.size() >= kMaxRemembered) return;
  if (std::find(bootstraps_.begin(), bootstraps_.end(), addr) == bootstraps_.end()) {
    bootstraps_.push_back(addr);
  }
}

void Joiner::Retry(const std::string& why) {
  // The next attempt goes through the next bootstrap address given, if there are several.
  ++attempts_;
  ctx_.Log(LogLevel::kWarn, "join through " + via_ + " failed (" + why + "); retrying in " +
                                std::to_string(ctx_.config.join_retry_ms) + " ms");
  ctx_.timers.Arm(Ref(kRetry), ctx_.now.mono_ms + ctx_.config.join_retry_ms);
}

void Joiner::OnTimer(OpRef op) {
  if (op.step == kRetry && op.id == attempt_) Attempt();
}

void Joiner::OnLookupDone(OpRef op, const LookupOutcome& outcome) {
  if (op.id != attempt_ || ctx_.ring.state != NodeState::kJoining) return;
  // Every member that answered is a further way into the ring, should the bootstraps given
  // at start leave before the join completes.
  for (const std::string& a : outcome.answered) Remember(a);
  if (!outcome.result.ok()) return Retry(outcome.result.status().message());
  const LookupResult& r = *outcome.result;
  Remember(r.owner.addr);
  for (const NodeRef& n : r.successors) Remember(n.addr);
  if (r.predecessor == ctx_.self()) {
    return Retry("the ring still lists an earlier life of this node");
  }
  predecessor_ = r.predecessor;
  ctx_.out.Send(predecessor_, msg::GetState(), ctx_.config.rpc_timeout_ms, Ref(kGetState));
}

void Joiner::OnRpc(OpRef op, const wire::Envelope* response) {
  if (op.id != attempt_ || op.step != kGetState || ctx_.ring.state != NodeState::kJoining) return;
  const NodeRef p = predecessor_;
  if (response == nullptr || !response->has_get_state_resp() ||
      !response->get_state_resp().joined()) {
    return Retry("the predecessor-to-be " + p.addr + " did not answer");
  }
  // succ := p.succ, skipping an earlier life of ourselves at its head; p must still be the
  // node whose successor range holds our id.
  RingState& ring = ctx_.ring;
  std::vector<NodeRef> candidates;
  for (const auto& info : response->get_state_resp().successors()) {
    if (auto n = NodeRef::FromWire(info)) candidates.push_back(std::move(*n));
  }
  std::optional<NodeRef> head;
  if (!candidates.empty()) head = candidates.front();
  if (head && *head == ring.self) candidates.erase(candidates.begin());
  std::vector<NodeRef> mine = ring.OrderedSuccessorList(candidates);
  Remember(p.addr);
  for (const NodeRef& n : candidates) Remember(n.addr);
  if (head && !(*head == ring.self) && !Id::InOpen(ring.self.id, p.id, head->id)) {
    return Retry("the ring changed around this node's position");
  }
  if (mine.empty()) mine.push_back(p);  // p was alone
  ring.state = NodeState::kJoined;
  ring.awaiting_transfer = true;
  updates_.SetSuccessors(std::move(mine));
  ring.predecessor = p;  // prdc := p; set directly: nothing of ours needs handing to p
  ctx_.Log(LogLevel::kInfo, "joined the ring through " + via_ + " as " + ring.self.Describe() +
                                "; successor " + ring.successor().Describe() + ", predecessor " +
                                p.Describe());
  // Tell the successor at once, so that it hands over our keys without waiting a period, and
  // ask the predecessor to stabilize now, so that it adopts us as its successor.
  stabilizer_.Run();
  ctx_.out.Send(p, msg::StabilizeNow(), ctx_.config.rpc_timeout_ms, OpRef{});
  ctx_.completions.Post(joined_, true);
}

}  // namespace chord
