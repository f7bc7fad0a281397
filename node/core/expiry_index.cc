#include "node/core/expiry_index.h"

namespace chord {

void ExpiryIndex::Note(uint64_t expires_unix_ms, const Id& key_id, const std::string& key) {
  if (expires_unix_ms == 0) return;
  const std::pair<const Id&, std::string_view> probe(key_id, key);
  auto it = by_key_.find(probe);
  if (it != by_key_.end()) {
    if (it->second == expires_unix_ms) return;
    by_time_.erase(Due{it->second, &it->first});
    it->second = expires_unix_ms;
    by_time_.insert(Due{expires_unix_ms, &it->first});
    return;
  }
  if (by_key_.size() >= max_entries_) {
    ++*refusals_;
    return;
  }
  it = by_key_.emplace(Key(key_id, key), expires_unix_ms).first;
  by_time_.insert(Due{expires_unix_ms, &it->first});
}

void ExpiryIndex::Forget(const Id& key_id, const std::string& key) {
  const std::pair<const Id&, std::string_view> probe(key_id, key);
  auto it = by_key_.find(probe);
  if (it == by_key_.end()) return;
  by_time_.erase(Due{it->second, &it->first});
  by_key_.erase(it);
}

std::vector<ExpiryIndex::Entry> ExpiryIndex::TakeDue(uint64_t now_wall_ms, size_t max) {
  std::vector<Entry> out;
  while (!by_time_.empty() && by_time_.begin()->first <= now_wall_ms && out.size() < max) {
    const auto [expires, key] = *by_time_.begin();
    by_time_.erase(by_time_.begin());
    auto node = by_key_.extract(*key);
    out.push_back(Entry{expires, node.key().first, std::move(node.key().second)});
  }
  return out;
}

}  // namespace chord
