#include "tools/placement/jump_hash.h"

namespace chord::placement {

int32_t JumpConsistentHash(uint64_t key, int32_t num_buckets) {
  int64_t b = -1;
  int64_t j = 0;
  while (j < num_buckets) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    j = static_cast<int64_t>(static_cast<double>(b + 1) * (static_cast<double>(1LL << 31) /
                                                           static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<int32_t>(b);
}

void JumpPlacement::SetNodes(std::span<const std::string> nodes) {
  buckets_ = static_cast<int32_t>(nodes.size());
}

uint32_t JumpPlacement::Place(const KeyHash& key) {
  return static_cast<uint32_t>(JumpConsistentHash(key.point, buckets_));
}

}  // namespace chord::placement
