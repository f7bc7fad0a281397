#include "tools/placement/kademlia.h"

#include <algorithm>
#include <numeric>

namespace chord::placement {
namespace {

bool Bit(const Sha1Digest& id, int bit) { return ((id[bit / 8] >> (7 - bit % 8)) & 1) != 0; }

}  // namespace

bool XorCloser(const Sha1Digest& a, const Sha1Digest& b, const Sha1Digest& key) {
  for (size_t i = 0; i < key.size(); ++i) {
    const auto da = static_cast<uint8_t>(a[i] ^ key[i]);
    const auto db = static_cast<uint8_t>(b[i] ^ key[i]);
    if (da != db) return da < db;
  }
  return false;
}

void Kademlia::SetNodes(std::span<const std::string> nodes) {
  std::vector<std::pair<Sha1Digest, uint32_t>> sorted;
  sorted.reserve(nodes.size());
  for (uint32_t node = 0; node < nodes.size(); ++node) sorted.emplace_back(Sha1(nodes[node]), node);
  std::sort(sorted.begin(), sorted.end());
  ids_.clear();
  nodes_.clear();
  ids_.shrink_to_fit();
  nodes_.shrink_to_fit();
  ids_.reserve(sorted.size());
  nodes_.reserve(sorted.size());
  for (const auto& [id, node] : sorted) {
    ids_.push_back(id);
    nodes_.push_back(node);
  }
}

uint32_t Kademlia::Place(const KeyHash& key) {
  // Invariant: ids_[lo, hi) share their first `bit` bits, and the closest id is among them.
  size_t lo = 0;
  size_t hi = ids_.size();
  for (int bit = 0; bit < 160 && hi - lo > 1; ++bit) {
    const auto split = static_cast<size_t>(
        std::partition_point(ids_.begin() + lo, ids_.begin() + hi,
                             [bit](const Sha1Digest& id) { return !Bit(id, bit); }) -
        ids_.begin());
    if (Bit(key.sha1, bit)) {
      if (split < hi) lo = split;
    } else {
      if (split > lo) hi = split;
    }
  }
  return nodes_[lo];
}

}  // namespace chord::placement
