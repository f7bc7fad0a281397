#include "tools/placement/rendezvous.h"

#include "tools/placement/mix64.h"

namespace chord::placement {

void Rendezvous::SetNodes(std::span<const std::string> nodes) {
  seeds_.clear();
  seeds_.shrink_to_fit();
  seeds_.reserve(nodes.size());
  for (const std::string& name : nodes) seeds_.push_back(LoadBigEndian64(Sha256(name).data()));
}

uint32_t Rendezvous::Place(const KeyHash& key) {
  uint32_t best = 0;
  uint64_t best_score = 0;
  for (uint32_t node = 0; node < seeds_.size(); ++node) {
    const uint64_t score = Mix64(key.point ^ seeds_[node]);
    if (node == 0 || score > best_score) {
      best = node;
      best_score = score;
    }
  }
  return best;
}

}  // namespace chord::placement
