#include "node/core/expiry_index.h"

namespace chord {

void ExpiryIndex::Note(uint64_t expires_unix_ms, const Id& key_id, const std::string& key) {
  if (expires_unix_ms == 0) return;
  if (entries_.size() >= kMaxEntries) {
    overflowed_ = true;
    return;
  }
  entries_.emplace(expires_unix_ms, std::make_pair(key_id, key));
}

std::vector<ExpiryIndex::Entry> ExpiryIndex::TakeDue(uint64_t now_wall_ms, size_t max) {
  std::vector<Entry> out;
  auto it = entries_.begin();
  while (it != entries_.end() && it->first <= now_wall_ms && out.size() < max) {
    out.push_back(Entry{it->first, it->second.first, std::move(it->second.second)});
    it = entries_.erase(it);
  }
  return out;
}

}  // namespace chord
