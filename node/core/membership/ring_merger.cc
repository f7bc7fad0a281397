#include "node/core/membership/ring_merger.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "protocol/messages.h"

namespace chord {
namespace {

// Bound on the candidate checks in flight (hints from others included).
constexpr size_t kMaxChecks = 64;

}  // namespace

void RingMerger::Round() {
  const uint64_t every = std::max<uint64_t>(ctx_.config.probe_every_rounds, 1);
  if (!ctx_.ring.joined() || ++rounds_ % every != 0) return;
  if (auto m = book_.PickForgotten()) Consider(*m, kMaxHintHops);
}

void RingMerger::HandleMergeHint(ReplyToken from, const wire::Envelope& request) {
  ctx_.out.Reply(from, request.request_id(), msg::EmptyAnswer(request));
  const auto& h = request.merge_hint();
  auto c = NodeRef::FromWire(h.candidate());
  if (c && ctx_.ring.joined()) Consider(*c, std::min(h.hops_left(), kMaxHintHops));
}

void RingMerger::Consider(const NodeRef& c, uint32_t hops_left,
                          const wire::GetStateResponse* state) {
  const RingState& ring = ctx_.ring;
  if (c == ring.self) return;
  if (ring.IsNeighbour(c)) return;  // a neighbour already: nothing to heal here
  if (state != nullptr) return Place(c, *state, hops_left);
  if (checks_.size() >= kMaxChecks) return;
  const uint64_t id = next_check_++;
  checks_[id] = Check{c, hops_left};
  ctx_.out.Send(c, msg::GetState(), ctx_.config.rpc_timeout_ms, OpRef{OpKind::kMerge, 0, 0, id});
}

void RingMerger::OnRpc(OpRef op, const wire::Envelope* response) {
  auto it = checks_.find(op.id);
  if (it == checks_.end()) return;
  const Check check = it->second;
  checks_.erase(it);
  if (response == nullptr || !response->has_get_state_resp() ||
      !response->get_state_resp().joined() || !ctx_.ring.joined()) {
    return;  // not there (or not a member): nothing to merge with
  }
  // Only what the member says of itself is adopted: an address remembered without its vnode
  // suffix (a --join seed) answers as vnode 0, a ring position with another id, but of the
  // same process. An answer naming another process is not taken: that node never answered
  // (a member could otherwise make us adopt any address as successor or predecessor).
  const auto& state = response->get_state_resp();
  const auto answered = NodeRef::FromWire(state.self());
  if (!answered || answered->addr.empty() || !answered->SameProcess(check.candidate)) return;
  if (!(*answered == check.candidate)) book_.Forget(check.candidate);
  book_.Saw(*answered);
  Consider(*answered, check.hops_left, &state);
}

void RingMerger::Place(const NodeRef& c, const wire::GetStateResponse& state, uint32_t hops_left) {
  const RingState& ring = ctx_.ring;
  const NodeRef self = ring.self;
  if (ring.successors.empty() || Id::InOpen(c.id, self.id, ring.successors.front().id)) {
    // A closer successor: [c] + c's list, merged with ours (all heard from just now).
    const std::optional<NodeRef> old =
        ring.successors.empty() ? std::nullopt : std::optional<NodeRef>(ring.successors.front());
    std::vector<NodeRef> theirs{c};
    for (const auto& info : state.successors()) {
      if (auto n = NodeRef::FromWire(info)) theirs.push_back(std::move(*n));
    }
    updates_.SetSuccessors(ring.MergedSuccessorList(theirs, ring.successors));
    ++merges_;
    ctx_.Log(LogLevel::kInfo, "ring merge: " + c.Describe() + " is a closer successor");
    ctx_.out.Send(c, msg::Notify(self, ring.awaiting_transfer), ctx_.config.rpc_timeout_ms,
                  OpRef{});
    if (old) Hint(c, *old, hops_left);
    return;
  }
  // With the predecessor unknown, our range still starts at its floor (the last predecessor):
  // a member beyond it is no closer predecessor, and taken as one it would stretch our range
  // over keys that others own until a notify put it right.
  const std::optional<Id> floor =
      ring.predecessor ? std::optional<Id>(ring.predecessor->id) : ring.range_floor;
  if (!floor || c.id == *floor || Id::InOpen(c.id, *floor, self.id)) {
    // A closer predecessor: it answered just now. It learns of us, and of the one it displaces.
    const std::optional<NodeRef> old = ring.predecessor;
    updates_.SetPredecessor(c);
    ++merges_;
    ctx_.Log(LogLevel::kInfo, "ring merge: " + c.Describe() + " is a closer predecessor");
    Hint(c, self, hops_left);
    if (old) Hint(c, *old, hops_left);
    return;
  }
  // Not next to us: toward the node of our ring just before it.
  if (hops_left == 0) return;
  std::vector<NodeRef> next = ring.ClosestPreceding(c.id, 1);
  const NodeRef to = next.empty() ? ring.successor() : next.front();
  Hint(to, c, hops_left - 1);
}

void RingMerger::Hint(const NodeRef& to, const NodeRef& candidate, uint32_t hops_left) {
  if (to == candidate || to == ctx_.self()) return;
  wire::Envelope e;
  candidate.ToWire(e.mutable_merge_hint()->mutable_candidate());
  e.mutable_merge_hint()->set_hops_left(hops_left);
  ctx_.out.Send(to, std::move(e), ctx_.config.rpc_timeout_ms, OpRef{});
}

}  // namespace chord
