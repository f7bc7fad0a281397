#include "tools/placement/map_ring.h"

#include "tools/placement/hash_ring.h"

namespace chord::placement {

MapRing::MapRing(uint32_t vnodes)
    : vnodes_(vnodes),
      bytes_(std::make_unique<size_t>(0)),
      points_(Map::allocator_type(bytes_.get())) {}

void MapRing::SetNodes(std::span<const std::string> nodes) {
  points_.clear();
  for (uint32_t node = 0; node < nodes.size(); ++node) {
    for (uint32_t i = 0; i < vnodes_; ++i) points_.emplace(RingPoint(nodes[node], i), node);
  }
}

uint32_t MapRing::Place(const KeyHash& key) {
  auto it = points_.lower_bound(key.point);
  if (it == points_.end()) it = points_.begin();
  return it->second;
}

size_t MapRing::MemoryBytes() const { return sizeof(Map) + *bytes_; }

}  // namespace chord::placement
