#include "node/core/watch/watch_service.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "protocol/limits.h"

namespace chord {

bool WatchService::Serving(const Id& key_id) const {
  const RingState& ring = ctx_.ring;
  return ring.joined() && !ring.awaiting_transfer && ring.Owns(key_id);
}

void WatchService::HandleRequest(ReplyToken from, const wire::Envelope& request) {
  const wire::WatchRequest& w = request.watch();
  wire::WatchResponse resp;
  ctx_.self().ToWire(resp.mutable_owner());
  if (std::string problem = KeyProblem(w.key()); !problem.empty()) {
    resp.set_code(wire::INVALID);
    resp.set_error(problem);
    return Reply(from, request.request_id(), std::move(resp));
  }
  const Id key_id = Id::Sha1(w.key());
  const bool serving = Serving(key_id);
  if (serving) {
    wire::Record current;
    const bool have = ctx_.store()->Get(key_id, w.key(), &current).ok();
    ctx_.watches.Watch(w.key(), have ? &current : nullptr, ctx_.now.mono_ms);
  }
  if (w.start()) {
    // The start of a watch: the current state, from the owner.
    if (!serving) {
      NotOwner(key_id, &resp);
    } else {
      resp.set_code(wire::OK);
      AddCurrent(w.key(), wire::WatchEvent::CURRENT, &resp);
    }
    return Reply(from, request.request_id(), std::move(resp));
  }
  if (Collect(w.key(), w.after_version(), serving, &resp)) {
    return Reply(from, request.request_id(), std::move(resp));
  }
  if (!serving) {
    NotOwner(key_id, &resp);
    return Reply(from, request.request_id(), std::move(resp));
  }
  if (waiters_.size() >= kMaxWaiting) {
    resp.set_code(wire::UNAVAILABLE);
    resp.set_error(ctx_.self().addr + " already holds " + std::to_string(kMaxWaiting) +
                   " waiting watchers; retry later or watch fewer keys");
    return Reply(from, request.request_id(), std::move(resp));
  }
  const uint64_t id = next_id_++;
  waiters_[id] = Waiter{from, request.request_id(), w.key(), w.after_version()};
  by_key_.emplace(w.key(), id);
  ctx_.counters.watchers_waiting = waiters_.size();
  const uint32_t wait = std::min(std::max<uint32_t>(w.wait_ms(), 1), kMaxWaitMs);
  ctx_.timers.Arm(OpRef{OpKind::kWatch, 0, 0, id}, ctx_.now.mono_ms + wait);
}

bool WatchService::Collect(const std::string& key, uint64_t after, bool serving,
                           wire::WatchResponse* resp) {
  if (!ctx_.watches.Watched(key)) return false;
  // An answer stays well inside the frame limit, as a transfer batch does.
  WatchLog::Answer a =
      ctx_.watches.Collect(key, after, kMaxEventsPerAnswer, ctx_.config.transfer_batch_bytes);
  if (!a.events.empty()) {
    resp->set_code(wire::OK);
    for (wire::WatchEvent& e : a.events) *resp->add_events() = std::move(e);
    return true;
  }
  // Only the owner's current state is worth a resync; elsewhere the watcher moves on.
  if (!a.resync || !serving) return false;
  wire::WatchResponse current;
  AddCurrent(key, wire::WatchEvent::RESYNC, &current);
  // A resync to the version the watcher has tells it nothing, and it would ask again at once
  // (a key absent at version 0 whose history still led elsewhere looped so): it waits.
  if (current.events(0).version() == after) return false;
  ++ctx_.counters.watch_resyncs;
  resp->set_code(wire::OK);
  *resp->add_events() = std::move(*current.mutable_events(0));
  return true;
}

void WatchService::AddCurrent(const std::string& key, wire::WatchEvent::Type type,
                              wire::WatchResponse* resp) {
  wire::WatchEvent* e = resp->add_events();
  e->set_type(type);
  wire::Record rec;
  if (!ctx_.store()->Get(Id::Sha1(key), key, &rec).ok()) {
    e->set_deleted(true);
    return;
  }
  const bool expired = rec.expires_unix_ms() != 0 && rec.expires_unix_ms() <= ctx_.now.wall_ms;
  // An expired record reads as the tombstone every holder turns it into (version + 1).
  e->set_version(expired ? rec.version() + 1 : rec.version());
  e->set_deleted(rec.deleted() || expired);
  if (!e->deleted()) e->set_value(rec.value());
}

void WatchService::NotOwner(const Id& key_id, wire::WatchResponse* resp) const {
  const RingState& ring = ctx_.ring;
  resp->set_code(wire::NOT_OWNER);
  resp->set_error(ring.awaiting_transfer ? ring.self.addr + " is still receiving its keys"
                                         : ring.self.addr + " does not own the key");
  if (const NodeRef* hint = ring.OwnerHint(key_id)) hint->ToWire(resp->mutable_hint());
}

void WatchService::Reply(ReplyToken from, uint64_t request_id, wire::WatchResponse resp) {
  wire::Envelope reply;
  *reply.mutable_watch_resp() = std::move(resp);
  ctx_.out.Reply(from, request_id, std::move(reply));
}

void WatchService::Release(uint64_t id, wire::WatchResponse resp) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  const Waiter w = std::move(it->second);
  waiters_.erase(it);
  auto [lo, hi] = by_key_.equal_range(w.key);
  for (auto k = lo; k != hi; ++k) {
    if (k->second == id) {
      by_key_.erase(k);
      break;
    }
  }
  ctx_.timers.Cancel(OpRef{OpKind::kWatch, 0, 0, id});
  ctx_.counters.watchers_waiting = waiters_.size();
  Reply(w.from, w.request_id, std::move(resp));
}

void WatchService::OnTimer(OpRef op) {
  wire::WatchResponse resp;
  resp.set_code(wire::OK);
  ctx_.self().ToWire(resp.mutable_owner());
  Release(op.id, std::move(resp));
}

void WatchService::Wake() {
  if (waiters_.empty()) {
    ctx_.watches.TakeChanged();  // nobody waits here: nothing to wake
    return;
  }
  for (const std::string& key : ctx_.watches.TakeChanged()) {
    std::vector<uint64_t> ids;
    auto [lo, hi] = by_key_.equal_range(key);
    for (auto k = lo; k != hi; ++k) ids.push_back(k->second);
    const bool serving = Serving(Id::Sha1(key));
    for (uint64_t id : ids) {
      wire::WatchResponse resp;
      ctx_.self().ToWire(resp.mutable_owner());
      if (Collect(key, waiters_[id].after, serving, &resp)) Release(id, std::move(resp));
    }
  }
}

void WatchService::Round() {
  ctx_.watches.Expire(ctx_.now.mono_ms);
  std::vector<uint64_t> gone;
  for (const auto& [id, w] : waiters_) {
    if (!Serving(Id::Sha1(w.key))) gone.push_back(id);
  }
  for (uint64_t id : gone) {
    wire::WatchResponse resp;
    ctx_.self().ToWire(resp.mutable_owner());
    const Waiter& w = waiters_[id];
    if (!Collect(w.key, w.after, /*serving=*/false, &resp)) NotOwner(Id::Sha1(w.key), &resp);
    Release(id, std::move(resp));
  }
}

}  // namespace chord
