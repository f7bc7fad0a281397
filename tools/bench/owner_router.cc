#include "tools/bench/owner_router.h"

#include <algorithm>
#include <utility>

#include "tools/client/ring_walk.h"

namespace chord::bench {

OwnerRouter::OwnerRouter(std::vector<std::string> seeds, uint64_t timeout_ms)
    : seeds_(std::move(seeds)), timeout_ms_(timeout_ms) {}

Status OwnerRouter::Refresh() {
  // The given nodes first, then the members of the last copy (a seed may have left).
  std::vector<std::string> candidates = seeds_;
  for (const std::string& addr : addrs_) {
    if (std::find(candidates.begin(), candidates.end(), addr) == candidates.end()) {
      candidates.push_back(addr);
    }
  }
  std::string last_error = "no node to ask";
  for (const std::string& start : candidates) {
    Result<RingView> view = WalkRing(start, timeout_ms_);
    if (!view.ok()) {
      last_error = view.status().message();
      continue;
    }
    if (view->nodes.empty()) {
      last_error = start + " reported an empty ring";
      continue;
    }
    ids_.clear();
    addrs_.clear();
    for (const RingNode& node : view->nodes) {  // sorted by id ascending
      ids_.push_back(node.id);
      addrs_.push_back(node.addr);
    }
    ++refreshes_;
    return Status::Ok();
  }
  return Status::Unavailable("could not fetch the ring: " + last_error);
}

const std::string& OwnerRouter::OwnerOf(std::string_view key) const {
  const Id key_id = Id::Sha1(key);
  // The first id >= key id, wrapping to the lowest.
  auto it = std::lower_bound(ids_.begin(), ids_.end(), key_id);
  const size_t index = it == ids_.end() ? 0 : static_cast<size_t>(it - ids_.begin());
  return addrs_[index];
}

}  // namespace chord::bench
