#include "tools/placement/bounded_load_ring.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace chord::placement {

uint64_t BoundedLoadCapacity(double epsilon, uint64_t keys, uint32_t nodes) {
  if (!std::isfinite(epsilon) || epsilon < 0) epsilon = 0;
  if (nodes == 0) return 1;
  const long double exact = (1.0L + epsilon) * static_cast<long double>(keys) / nodes;
  // Rounded to 1e-9 first, so that a quotient that is mathematically whole (1.5 * 1000 / 3)
  // is not pushed to the next integer by floating-point error.
  const long double rounded = std::round(exact * 1e9L) / 1e9L;
  if (rounded >= 1.8e19L) return std::numeric_limits<uint64_t>::max();
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(rounded)));
}

void BoundedLoadRing::SetNodes(std::span<const std::string> nodes) {
  ring_.SetNodes(nodes);
  loads_.assign(nodes.size(), 0);
  placed_ = 0;
}

void BoundedLoadRing::ClearLoads() {
  std::fill(loads_.begin(), loads_.end(), 0);
  placed_ = 0;
}

uint64_t BoundedLoadRing::Capacity() const {
  const uint64_t keys = std::max(expected_keys_, placed_ + 1);
  return BoundedLoadCapacity(epsilon_, keys, static_cast<uint32_t>(loads_.size()));
}

uint32_t BoundedLoadRing::Place(const KeyHash& key) {
  const uint64_t capacity = Capacity();
  size_t index = ring_.FirstAtOrAfter(key.point);
  // Total room N * capacity >= (1 + epsilon) * (placed + 1) > placed, so some node has room
  // and every node has a point: the walk ends within one turn.
  for (size_t step = 0; step < ring_.PointCount(); ++step) {
    const uint32_t node = ring_.NodeAt(index);
    if (loads_[node] < capacity) {
      ++loads_[node];
      ++placed_;
      return node;
    }
    index = index + 1 == ring_.PointCount() ? 0 : index + 1;
  }
  // Unreachable by the argument above; answer the plain ring's node rather than loop.
  return ring_.NodeAt(ring_.FirstAtOrAfter(key.point));
}

}  // namespace chord::placement
