#include "node/core/replication/hint_deliverer.h"

#include <algorithm>
#include <utility>

#include "node/core/record_order.h"
#include "protocol/messages.h"

namespace chord {

void HintDeliverer::Round() {
  const uint64_t now = ctx_.now.mono_ms;
  const std::vector<NodeRef> targets = hints_.Targets();
  // States of members no hint is held for any more are dropped (bounded by the store).
  std::erase_if(targets_, [&](const auto& entry) {
    return !entry.second.in_flight &&
           std::none_of(targets.begin(), targets.end(),
                        [&](const NodeRef& t) { return t.addr == entry.first; });
  });
  size_t started = 0;
  for (const NodeRef& target : targets) {
    if (started >= kMaxTargetsPerRound) break;
    TargetState& state = targets_[target.addr];
    if (state.in_flight || state.next_try_ms > now) continue;
    // Within what a paced (slow) link to the member carries in time (LinkPace, learnt by bulk
    // exchanges).
    const size_t batch_bytes = ctx_.pace().Paced(target.process())
                                   ? std::min(kBatchBytes, ctx_.pace().BatchBytes(target.process()))
                                   : kBatchBytes;
    auto page = hints_.Page(target, batch_bytes, kBatchRecords);
    if (!page.ok()) {
      ctx_.Log(LogLevel::kError,
               "cannot read the hints kept for " + target.addr + ": " + page.status().message());
      state.next_try_ms = now + state.backoff_ms;
      continue;
    }
    // A hint older than half the tombstone grace (less the allowed skew: this node's clock
    // may be behind) is dropped, not delivered: a delete of the key may have been purged
    // meanwhile, and the copy would bring the key back. Anti-entropy has restored the
    // member's copies by then.
    const uint64_t window =
        HintDeliveryWindowMs(ctx_.config.tombstone_grace_ms, ctx_.config.max_clock_skew_ms);
    std::vector<wire::Record> fresh;
    std::vector<wire::Record> stale;
    for (const wire::Record& r : *page) {
      const bool old = VersionWallMs(r.version()) + window <= ctx_.now.wall_ms;
      (old ? stale : fresh).push_back(r);
    }
    if (!stale.empty()) {
      if (auto erased = hints_.EraseDelivered(target, stale, /*too_old=*/true); !erased.ok()) {
        ctx_.Log(LogLevel::kError, "cannot erase stale hints: " + erased.status().message());
      }
    }
    if (fresh.empty()) continue;
    const uint64_t id = next_id_++;
    state.in_flight = true;
    ++started;
    Delivery& d = deliveries_[id];
    d.target = target;
    d.records = std::move(fresh);
    ctx_.out.Send(target, msg::Replicate(ctx_.self(), d.records), ctx_.config.transfer_timeout_ms,
                  OpRef{OpKind::kHint, 0, 0, id});
  }
}

void HintDeliverer::OnRpc(OpRef op, const wire::Envelope* response) {
  auto it = deliveries_.find(op.id);
  if (it == deliveries_.end()) return;
  Delivery d = std::move(it->second);
  deliveries_.erase(it);
  TargetState& state = targets_[d.target.addr];
  state.in_flight = false;
  const uint64_t now = ctx_.now.mono_ms;
  // A record the member refused (outside its limits) counts as delivered: kept here, it would
  // hold back every later hint for it; the owner's copy reaches it by anti-entropy.
  if (response == nullptr || !response->has_replicate_resp() ||
      response->replicate_resp().code() != wire::OK) {
    // Not back yet (or leaving): try again later, less often each time.
    state.next_try_ms = now + state.backoff_ms;
    state.backoff_ms = std::min(state.backoff_ms * 2, kMaxBackoffMs);
    return;
  }
  state.backoff_ms = kFirstBackoffMs;
  state.next_try_ms = now;
  auto erased = hints_.EraseDelivered(d.target, d.records);  // counts them
  if (!erased.ok()) {
    ctx_.Log(LogLevel::kError, "cannot erase delivered hints: " + erased.status().message());
  }
}

}  // namespace chord
