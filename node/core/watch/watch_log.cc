#include "node/core/watch/watch_log.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace chord {
namespace {

wire::WatchEvent::Type TypeOf(const wire::Record& r) {
  if (!r.deleted()) return wire::WatchEvent::PUT;
  return r.expired() ? wire::WatchEvent::EXPIRE : wire::WatchEvent::DELETE;
}

}  // namespace

void WatchLog::Watch(const std::string& key, const wire::Record* current, uint64_t now_ms) {
  if (auto it = keys_.find(key); it != keys_.end()) {
    it->second.used_ms = now_ms;
    return;
  }
  if (keys_.size() >= kMaxWatchedKeys) ForgetLeastUsed();
  KeyLog& log = keys_[key];
  log.base = current != nullptr ? current->version() : 0;
  log.used_ms = now_ms;
}

void WatchLog::OnStored(const wire::Record& record, uint64_t prev_local, const ChangeLink& link,
                        uint64_t now_ms) {
  auto it = keys_.find(record.key());
  if (it == keys_.end()) return;
  KeyLog& log = it->second;
  log.used_ms = now_ms;
  if (log.events.size() >= kMaxEventsPerKey) DropOldest(log);
  const size_t bytes = (record.deleted() ? 0 : record.value().size()) + kEventOverheadBytes;
  while (held_bytes_ + bytes > kMaxHeldBytes && !log.events.empty()) DropOldest(log);
  if (held_bytes_ + bytes > kMaxHeldBytes) {
    // Other keys hold the budget: this change is not kept; watchers behind it start again.
    log.base = record.version();
    return;
  }
  Event e;
  e.event.set_type(TypeOf(record));
  e.event.set_version(record.version());
  if (!record.deleted()) e.event.set_value(record.value());
  e.linked = link.kind != ChangeLink::Kind::kUnlinked;
  e.prev = link.kind == ChangeLink::Kind::kLocal ? prev_local : link.prev;
  e.published = link.published;
  held_bytes_ += bytes;
  log.events.push_back(std::move(e));
  if (link.published) changed_.push_back(record.key());
}

void WatchLog::Publish(const std::string& key, uint64_t version) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  for (Event& e : it->second.events) {
    if (e.event.version() == version && !e.published) {
      e.published = true;
      changed_.push_back(key);
    }
  }
}

void WatchLog::Retract(const std::string& key, uint64_t version) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  std::deque<Event>& events = it->second.events;
  for (auto e = events.begin(); e != events.end(); ++e) {
    if (e->event.version() != version || e->published) continue;
    held_bytes_ -= EventBytes(e->event);
    events.erase(e);
    for (Event& later : events) {
      if (later.prev == version) later.linked = false;
    }
    return;
  }
}

void WatchLog::Unlink(const std::string& key, uint64_t version) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  for (Event& e : it->second.events) {
    if (e.event.version() == version) e.linked = false;
  }
}

bool WatchLog::LinkOf(const std::string& key, uint64_t version, uint64_t* prev) const {
  auto it = keys_.find(key);
  if (it == keys_.end()) return false;
  for (const Event& e : it->second.events) {
    if (e.event.version() == version && e.linked) {
      *prev = e.prev;
      return true;
    }
  }
  return false;
}

size_t WatchLog::HistoryBytes(const wire::WatchHistory& h) {
  size_t bytes = h.key().size() + kEventOverheadBytes;
  for (const wire::WatchChange& c : h.changes()) bytes += EventBytes(c.event());
  return bytes;
}

bool WatchLog::Export(const std::string& key, size_t max_bytes, wire::WatchHistory* out) const {
  auto it = keys_.find(key);
  if (it == keys_.end()) return false;
  const KeyLog& log = it->second;
  size_t bytes = key.size() + kEventOverheadBytes;  // as HistoryBytes counts
  if (bytes > max_bytes) return false;
  // The published prefix (later changes are held back and follow by replication).
  size_t end = 0;
  while (end < log.events.size() && log.events[end].published) ++end;
  size_t begin = end;
  while (begin > 0 && bytes + EventBytes(log.events[begin - 1].event) <= max_bytes) {
    bytes += EventBytes(log.events[begin - 1].event);
    --begin;
  }
  out->set_key(key);
  out->set_base_version(begin == 0 ? log.base : log.events[begin - 1].event.version());
  for (size_t i = begin; i < end; ++i) {
    wire::WatchChange* c = out->add_changes();
    *c->mutable_event() = log.events[i].event;
    c->set_prev_version(log.events[i].prev);
    c->set_linked(log.events[i].linked);
  }
  return true;
}

void WatchLog::Import(const wire::WatchHistory& history, const wire::Record& handed,
                      size_t max_value_bytes, uint64_t now_ms) {
  if (auto it = keys_.find(history.key()); it != keys_.end() && !it->second.events.empty()) {
    return;
  }
  if (static_cast<size_t>(history.changes_size()) > kMaxEventsPerKey) return;
  uint64_t last = history.base_version();
  size_t bytes = 0;
  for (const wire::WatchChange& c : history.changes()) {
    const wire::WatchEvent& e = c.event();
    const bool change = e.type() == wire::WatchEvent::PUT || e.type() == wire::WatchEvent::DELETE ||
                        e.type() == wire::WatchEvent::EXPIRE;
    if (!change || e.version() <= last || e.value().size() > max_value_bytes) return;
    last = e.version();
    bytes += EventBytes(e);
  }
  // A write the sender had stored but not published (its replicas had not answered yet).
  std::optional<Event> unpublished;
  if (handed.key() == history.key() && handed.version() > last) {
    Event e;
    e.event.set_type(TypeOf(handed));
    e.event.set_version(handed.version());
    if (!handed.deleted()) e.event.set_value(handed.value());
    if (e.event.value().size() > max_value_bytes) return;
    bytes += EventBytes(e.event);
    unpublished = std::move(e);
  }
  if (held_bytes_ + bytes > kMaxHeldBytes) return;
  if (keys_.count(history.key()) == 0 && keys_.size() >= kMaxWatchedKeys) ForgetLeastUsed();
  KeyLog& log = keys_[history.key()];
  log.base = history.base_version();
  log.used_ms = now_ms;
  for (const wire::WatchChange& c : history.changes()) {
    Event e;
    e.event = c.event();
    e.prev = c.prev_version();
    e.linked = c.linked();
    log.events.push_back(std::move(e));
  }
  if (unpublished) log.events.push_back(std::move(*unpublished));  // unlinked
  held_bytes_ += bytes;
  while (log.events.size() > kMaxEventsPerKey) DropOldest(log);
  changed_.push_back(history.key());
}

WatchLog::Answer WatchLog::Collect(const std::string& key, uint64_t after, size_t max_events,
                                   size_t max_value_bytes) const {
  Answer answer;
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    answer.resync = true;
    return answer;
  }
  const KeyLog& log = it->second;
  uint64_t cursor = after;
  size_t value_bytes = 0;
  bool newer_seen = false;
  for (const Event& e : log.events) {
    if (e.event.version() <= after) continue;
    newer_seen = true;
    if (!e.published) break;  // held back, and so is everything after it: wait
    if (!e.linked || e.prev != cursor) {
      // No unbroken chain leads from `after` to this change.
      answer.resync = answer.events.empty();
      break;
    }
    value_bytes += e.event.value().size();
    if (!answer.events.empty() &&
        (answer.events.size() >= max_events || value_bytes > max_value_bytes)) {
      break;  // the rest comes in the next answer
    }
    answer.events.push_back(e.event);
    cursor = e.event.version();
  }
  // The log starts after `after`, and nothing after it links back.
  if (!newer_seen && log.base > after) answer.resync = true;
  return answer;
}

std::vector<std::string> WatchLog::TakeChanged() {
  std::vector<std::string> out;
  out.swap(changed_);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void WatchLog::Forget(const std::string& key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  // Kept as watched, from nothing: its next write reaches the watchers waiting for it (as a
  // resync for one that saw the erased record, whose chain it does not follow on from).
  for (const Event& e : it->second.events) held_bytes_ -= EventBytes(e.event);
  it->second.events.clear();
  it->second.base = 0;
}

void WatchLog::Expire(uint64_t now_ms) {
  for (auto it = keys_.begin(); it != keys_.end();) {
    if (it->second.used_ms + kForgetAfterMs < now_ms) {
      for (const Event& e : it->second.events) held_bytes_ -= EventBytes(e.event);
      it = keys_.erase(it);
    } else {
      ++it;
    }
  }
}

void WatchLog::DropOldest(KeyLog& log) {
  log.base = log.events.front().event.version();
  held_bytes_ -= EventBytes(log.events.front().event);
  log.events.pop_front();
}

void WatchLog::ForgetLeastUsed() {
  auto oldest = std::min_element(keys_.begin(), keys_.end(), [](const auto& a, const auto& b) {
    return a.second.used_ms < b.second.used_ms;
  });
  if (oldest == keys_.end()) return;
  for (const Event& e : oldest->second.events) held_bytes_ -= EventBytes(e.event);
  keys_.erase(oldest);
}

}  // namespace chord
