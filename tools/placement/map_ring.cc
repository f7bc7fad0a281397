#include "tools/placement/map_ring.h"

#include <cmath>

#include "tools/placement/hash_ring.h"

namespace chord::placement {

MapRing::MapRing(uint32_t vnodes)
    : vnodes_(vnodes),
      bytes_(std::make_unique<size_t>(0)),
      points_(Map::allocator_type(bytes_.get())) {}

void MapRing::SetNodes(std::span<const std::string> nodes) {
  node_count_ = static_cast<uint32_t>(nodes.size());
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

std::vector<double> MapRing::ExactShares() const {
  std::vector<double> shares(node_count_, 0.0);
  if (points_.size() == 1) shares[points_.begin()->second] = 1.0;
  if (points_.size() <= 1) return shares;
  const double ring = std::ldexp(1.0, 64);
  uint64_t previous = points_.rbegin()->first;  // the first point's arc wraps past the top
  for (const auto& [point, node] : points_) {
    shares[node] += static_cast<double>(point - previous) / ring;  // mod 2^64
    previous = point;
  }
  return shares;
}

size_t MapRing::MemoryBytes() const { return sizeof(Map) + *bytes_; }

}  // namespace chord::placement
