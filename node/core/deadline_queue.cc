#include "node/core/deadline_queue.h"

#include <algorithm>

namespace chord {

void DeadlineQueue::Add(uint64_t timeout_ms, uint64_t deadline_ms, uint64_t id) {
  auto it = std::find_if(fifos_.begin(), fifos_.end(),
                         [timeout_ms](const Fifo& f) { return f.timeout_ms == timeout_ms; });
  if (it == fifos_.end()) {
    fifos_.push_back(Fifo{timeout_ms, {}});
    it = std::prev(fifos_.end());
  }
  auto& entries = it->entries;
  const std::pair<uint64_t, uint64_t> entry{deadline_ms, id};
  if (entries.empty() || entries.back() <= entry) {
    entries.push_back(entry);
  } else {
    entries.insert(std::upper_bound(entries.begin(), entries.end(), entry), entry);
  }
}

size_t DeadlineQueue::size() const {
  size_t n = 0;
  for (const Fifo& f : fifos_) n += f.entries.size();
  return n;
}

}  // namespace chord
