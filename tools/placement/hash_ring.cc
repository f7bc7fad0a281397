#include "tools/placement/hash_ring.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace chord::placement {

uint64_t RingPoint(std::string_view name, uint32_t index) {
  std::string label(name);
  label += '#';
  label += std::to_string(index);
  return LoadBigEndian64(Sha256(label).data());
}

void HashRing::SetNodes(std::span<const std::string> nodes) {
  node_count_ = static_cast<uint32_t>(nodes.size());
  const int bits = std::max(1, static_cast<int>(std::bit_width(node_count_ - 1u)));
  node_mask_ = (uint64_t{1} << bits) - 1;
  entries_.clear();
  entries_.shrink_to_fit();
  entries_.reserve(static_cast<size_t>(node_count_) * vnodes_);
  for (uint32_t node = 0; node < node_count_; ++node) {
    for (uint32_t i = 0; i < vnodes_; ++i) {
      entries_.push_back((RingPoint(nodes[node], i) & ~node_mask_) | node);
    }
  }
  std::sort(entries_.begin(), entries_.end());
}

size_t HashRing::FirstAtOrAfter(uint64_t point) const {
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), point & ~node_mask_);
  return it == entries_.end() ? 0 : static_cast<size_t>(it - entries_.begin());
}

size_t HashRing::MemoryBytes() const { return entries_.capacity() * sizeof(uint64_t); }

std::vector<double> HashRing::ExactShares() const {
  std::vector<double> shares(node_count_, 0.0);
  if (entries_.empty()) return shares;
  const double ring = std::ldexp(1.0, 64);
  uint64_t previous = entries_.back() & ~node_mask_;  // the arc of point 0 wraps past the top
  for (const uint64_t entry : entries_) {
    const uint64_t point = entry & ~node_mask_;
    const uint64_t arc = point - previous;  // mod 2^64
    shares[entry & node_mask_] += static_cast<double>(arc) / ring;
    previous = point;
  }
  if (entries_.size() == 1) shares[entries_[0] & node_mask_] = 1.0;
  return shares;
}

}  // namespace chord::placement
