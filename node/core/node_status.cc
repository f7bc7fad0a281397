#include "node/core/node_status.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "protocol/messages.h"

namespace chord {
namespace {

// Bounds of one ListKeys page.
constexpr uint32_t kDefaultListLimit = 1000;
constexpr uint32_t kMaxListLimit = 10000;
constexpr size_t kMaxListBytes = 8u << 20;

}  // namespace

Result<NodeStatus::KeyCounts> NodeStatus::Counts() const {
  const RingState& ring = ctx_.ring;
  KeyCounts counts;
  if (ring.state == NodeState::kJoined || ring.state == NodeState::kLeaving) {
    const auto start = ring.RangeStart();
    Result<LedgerTally> owned = ctx_.records.Tally(start ? *start : ring.self.id, ring.self.id);
    if (!owned.ok()) return owned.status();
    counts.primary = owned->live;
  }
  Result<LedgerTally> held = ctx_.records.Tally(ring.AttributedRangeStart(), ring.self.id);
  if (!held.ok()) return held.status();
  counts.replica = held->live - std::min(held->live, counts.primary);
  Result<LedgerTally> all = ctx_.records.Tally(ring.self.id, ring.self.id);
  if (!all.ok()) return all.status();
  counts.tombstones = all->tombstones;
  return counts;
}

void NodeStatus::HandleStatus(ReplyToken from, const wire::Envelope& request) {
  const RingState& ring = ctx_.ring;
  const NodeCounters& c = ctx_.counters;
  wire::Envelope reply;
  auto* s = reply.mutable_status_resp();
  ring.self.ToWire(s->mutable_self());
  if (ring.predecessor) ring.predecessor->ToWire(s->mutable_predecessor());
  for (const NodeRef& n : ring.successors) n.ToWire(s->add_successors());
  std::optional<NodeRef> last;
  for (const auto& f : ring.fingers) {
    if (f && (!last || !(*last == *f))) {
      f->ToWire(s->add_fingers());
      last = f;
    }
  }
  if (Result<KeyCounts> counts = Counts(); counts.ok()) {
    s->set_keys(counts->primary);
    s->set_replica_keys(counts->replica);
    s->set_tombstones(counts->tombstones);
  } else {
    s->set_store_error(counts.status().message());
  }
  s->set_replicas(static_cast<uint32_t>(replicas_));
  s->set_joined(ring.joined());
  s->set_leaving(ring.state == NodeState::kLeaving || ring.state == NodeState::kLeft);
  s->set_successor_list_length(static_cast<uint32_t>(ring.max_successors));
  s->set_ring_has_enough_members(static_cast<int>(ring.successors.size()) >= ring.max_successors);
  s->set_stabilize_rounds(c.stabilize_rounds);
  for (const NodeRef& m : membership_.known_members()) m.ToWire(s->add_known_members());
  s->set_ring_merges(membership_.ring_merges());
  s->set_watchers(static_cast<uint32_t>(ctx_.counters.watchers_waiting));
  s->set_watched_keys(static_cast<uint32_t>(ctx_.watches.watched_keys()));
  s->set_store_free_bytes(ctx_.store()->FreeHeldBytes());
  auto* d = s->mutable_data();
  d->set_keys_sent(c.keys_sent);
  d->set_bytes_sent(c.bytes_sent);
  d->set_keys_received(c.keys_received);
  d->set_writes_coordinated(c.writes_replicated);
  d->set_anti_entropy_rounds(c.anti_entropy_rounds);
  d->set_anti_entropy_clean(c.anti_entropy_clean);
  d->set_anti_entropy_bytes(c.anti_entropy_bytes);
  d->set_keys_repaired(c.keys_repaired);
  d->set_keys_dropped(c.keys_dropped);
  d->set_tombstones_purged(c.tombstones_purged);
  d->set_watch_resyncs(c.watch_resyncs);
  d->set_hints_stored(c.hints_stored);
  d->set_hints_replaced(c.hints_replaced);
  d->set_hints_delivered(c.hints_delivered);
  d->set_hints_dropped(c.hints_dropped);
  d->set_hints_loaded(c.hints_loaded);
  d->set_hints_refused(c.hints_refused);
  d->set_requests_shed(c.requests_shed);
  d->set_writes_failed(c.writes_failed);
  s->set_hints_pending(c.hints_pending);
  s->set_hint_bytes(c.hint_bytes);
  d->set_cas_conflicts(c.cas_conflicts);
  d->set_keys_expired(c.keys_expired);
  if (process_stats_ != nullptr) {
    const ProcessSample p = process_stats_->Sample();
    if (p.valid) {
      auto* w = s->mutable_process();
      w->set_cpu_seconds(p.cpu_seconds);
      w->set_resident_memory_bytes(p.resident_bytes);
      w->set_virtual_memory_bytes(p.virtual_bytes);
      w->set_start_time_seconds(p.start_time_seconds);
      w->set_open_fds(p.open_fds);
      w->set_max_fds(p.max_fds);
    }
  }
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

void NodeStatus::HandleListKeys(ReplyToken from, const wire::Envelope& request) {
  const auto& l = request.list_keys();
  const uint32_t limit =
      std::clamp<uint32_t>(l.limit() == 0 ? kDefaultListLimit : l.limit(), 1, kMaxListLimit);
  wire::Envelope reply;
  auto* r = reply.mutable_list_keys_resp();
  // Numeric id order: from just after `after_key_id` (or from zero) up to the top of the ring.
  std::optional<Id> after;
  if (!l.after_key_id().empty()) after = Id::FromBytes(l.after_key_id());
  if (after && *after == Id::Max())
    return ctx_.out.Reply(from, request.request_id(), std::move(reply));
  uint32_t n = 0;
  size_t bytes = 0;
  // The next page continues after the last key id listed: a page never ends between two keys
  // of one id (their SHA-1s collide), or the second would be skipped.
  std::optional<Id> last;
  Status s = ctx_.store()->Scan(after ? *after : Id::Max(), Id::Max(),
                                [&](const Id& id, const wire::Record& rec) {
                                  if (after && !(*after < id)) return true;
                                  if ((n >= limit || bytes > kMaxListBytes) &&
                                      !(last && *last == id)) {
                                    r->set_more(true);
                                    return false;
                                  }
                                  last = id;
                                  auto* out = r->add_records();
                                  out->set_key(rec.key());
                                  out->set_version(rec.version());
                                  out->set_deleted(rec.deleted());
                                  out->set_expires_unix_ms(rec.expires_unix_ms());
                                  out->set_expired(rec.expired());
                                  if (l.with_values()) out->set_value(rec.value());
                                  bytes += rec.key().size() + out->value().size();
                                  ++n;
                                  return true;
                                });
  if (!s.ok()) reply = msg::Error(wire::UNAVAILABLE, "cannot list keys: " + s.message());
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

}  // namespace chord
