#include "tools/placement/ketama.h"

#include <algorithm>
#include <string>

namespace chord::placement {

std::vector<uint32_t> KetamaPoints(std::string_view name) {
  std::vector<uint32_t> points;
  points.reserve(kKetamaDigestsPerServer * kKetamaPointsPerDigest);
  for (uint32_t k = 0; k < kKetamaDigestsPerServer; ++k) {
    std::string label(name);
    label += '-';
    label += std::to_string(k);
    const Md5Digest d = Md5(label);
    for (uint32_t h = 0; h < kKetamaPointsPerDigest; ++h) {
      points.push_back(static_cast<uint32_t>(d[3 + h * 4]) << 24 |
                       static_cast<uint32_t>(d[2 + h * 4]) << 16 |
                       static_cast<uint32_t>(d[1 + h * 4]) << 8 | d[h * 4]);
    }
  }
  return points;
}

void Ketama::SetNodes(std::span<const std::string> nodes) {
  node_count_ = static_cast<uint32_t>(nodes.size());
  entries_.clear();
  entries_.shrink_to_fit();
  entries_.reserve(nodes.size() * kKetamaDigestsPerServer * kKetamaPointsPerDigest);
  for (uint32_t node = 0; node < node_count_; ++node) {
    for (const uint32_t point : KetamaPoints(nodes[node])) {
      entries_.push_back(static_cast<uint64_t>(point) << 32 | node);
    }
  }
  std::sort(entries_.begin(), entries_.end());
}

uint32_t Ketama::Place(const KeyHash& key) {
  auto it =
      std::lower_bound(entries_.begin(), entries_.end(), static_cast<uint64_t>(key.ketama) << 32);
  if (it == entries_.end()) it = entries_.begin();
  return static_cast<uint32_t>(*it & 0xffffffffu);
}

std::vector<double> Ketama::ExactShares() const {
  std::vector<double> shares(node_count_, 0.0);
  if (entries_.empty()) return shares;
  uint32_t previous = static_cast<uint32_t>(entries_.back() >> 32);
  for (const uint64_t entry : entries_) {
    const auto point = static_cast<uint32_t>(entry >> 32);
    shares[entry & 0xffffffffu] +=
        static_cast<double>(static_cast<uint32_t>(point - previous)) / 4294967296.0;
    previous = point;
  }
  return shares;
}

}  // namespace chord::placement
