#include "node/core/link_pace.h"

#include <algorithm>

namespace chord {

LinkPace::LinkPace(size_t max_bytes, uint64_t rpc_timeout_ms)
    : max_bytes_(max_bytes),
      min_bytes_(std::min(max_bytes, kMinBytes)),
      target_ms_(std::max<uint64_t>(1, rpc_timeout_ms / 4)) {}

size_t LinkPace::BatchBytes(std::string_view process) const {
  auto it = paced_.find(std::string(process));
  return it == paced_.end() ? max_bytes_ : it->second;
}

size_t LinkPace::BatchBytesForAll(const std::vector<NodeRef>& peers) const {
  size_t bytes = max_bytes_;
  for (const NodeRef& p : peers) bytes = std::min(bytes, BatchBytes(p.process()));
  return bytes;
}

void LinkPace::Answered(std::string_view process, uint64_t bytes, uint64_t elapsed_ms,
                        size_t sent_at) {
  if (TooSmallToTime(bytes, sent_at)) return;
  // What the link carried in the target time: the next exchange's size, though at most twice
  // this one's (a quick answer says little about how much more the link could carry).
  const uint64_t elapsed = std::max<uint64_t>(1, elapsed_ms);
  const uint64_t carried = bytes > UINT64_MAX / target_ms_ ? UINT64_MAX  // no overflow
                                                           : bytes * target_ms_ / elapsed;
  const uint64_t next = std::min(carried, bytes > UINT64_MAX / 2 ? UINT64_MAX : bytes * 2);
  Set(process, next >= max_bytes_ ? max_bytes_ : static_cast<size_t>(next));
}

void LinkPace::Failed(std::string_view process, uint64_t bytes, size_t sent_at) {
  if (TooSmallToTime(bytes, sent_at)) return;  // a small one fails for other reasons
  // Exchanges lost together (one reset fails all in flight) cut it once, not once each.
  Set(process, std::min(BatchBytes(process), sent_at / 8));
}

void LinkPace::Set(std::string_view process, size_t bytes) {
  bytes = std::clamp(bytes, min_bytes_, max_bytes_);
  const std::string key(process);
  if (bytes == max_bytes_) {
    paced_.erase(key);
    return;
  }
  if (paced_.size() >= kMaxPeers && paced_.find(key) == paced_.end()) paced_.erase(paced_.begin());
  paced_[key] = bytes;
}

}  // namespace chord
