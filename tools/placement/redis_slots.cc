#include "tools/placement/redis_slots.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace chord::placement {
namespace {

constexpr uint32_t kNoOwner = std::numeric_limits<uint32_t>::max();

}  // namespace

void RedisSlots::SetNodes(std::span<const std::string> nodes) {
  const auto n = static_cast<uint32_t>(nodes.size());
  if (names_.empty()) {
    owner_.assign(kRedisSlots, 0);
    for (uint32_t node = 0; node < n; ++node) {
      const uint64_t first = static_cast<uint64_t>(node) * kRedisSlots / n;
      const uint64_t last = static_cast<uint64_t>(node + 1) * kRedisSlots / n;
      for (uint64_t slot = first; slot < last; ++slot) owner_[slot] = node;
    }
    names_.assign(nodes.begin(), nodes.end());
    return;
  }
  // Re-number the current owners by the new list; departed nodes leave their slots unowned.
  std::unordered_map<std::string, uint32_t> index;
  for (uint32_t node = 0; node < n; ++node) index.emplace(nodes[node], node);
  std::vector<uint32_t> held(n, 0);
  for (uint32_t& owner : owner_) {
    const auto it = index.find(names_[owner]);
    owner = it == index.end() ? kNoOwner : it->second;
    if (owner != kNoOwner) ++held[owner];
  }
  // Even targets: the nodes holding most keep the extra slot of the remainder.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return held[a] > held[b]; });
  std::vector<uint32_t> target(n, kRedisSlots / n);
  for (uint32_t i = 0; i < kRedisSlots % n; ++i) ++target[order[i]];
  // Surplus slots (highest-numbered first) join the unowned ones; then fill deficits in list
  // order from the lowest free slot.
  for (uint32_t slot = kRedisSlots; slot-- > 0;) {
    const uint32_t owner = owner_[slot];
    if (owner != kNoOwner && held[owner] > target[owner]) {
      --held[owner];
      owner_[slot] = kNoOwner;
    }
  }
  uint32_t node = 0;
  for (uint32_t slot = 0; slot < kRedisSlots; ++slot) {
    if (owner_[slot] != kNoOwner) continue;
    while (held[node] >= target[node]) ++node;
    owner_[slot] = node;
    ++held[node];
  }
  names_.assign(nodes.begin(), nodes.end());
}

}  // namespace chord::placement
