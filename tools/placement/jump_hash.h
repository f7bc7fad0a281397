// Jump consistent hash (Lamping & Veach 2014, Figure 1) and the placement built on it:
// node = nodes[JumpConsistentHash(key, N)]. Buckets are numbered, so only the last one can be
// removed; removing one from the middle of the list re-indexes the rest (the naive use
// ../background/000 warns about, which `chord-placement remove` measures). Any thread.
#ifndef CHORD_TOOLS_PLACEMENT_JUMP_HASH_H_
#define CHORD_TOOLS_PLACEMENT_JUMP_HASH_H_

#include <cstdint>

#include "tools/placement/placement.h"

namespace chord::placement {

// Bit-exact to the paper: 64-bit wrapping multiply, unsigned shift, double division.
// Returns -1 when num_buckets < 1, as the paper's code does; callers pass at least 1.
[[nodiscard]] int32_t JumpConsistentHash(uint64_t key, int32_t num_buckets);

class JumpPlacement final : public Placement {
 public:
  void SetNodes(std::span<const std::string> nodes) override;
  [[nodiscard]] uint32_t Place(const KeyHash& key) override;
  [[nodiscard]] size_t MemoryBytes() const override { return 0; }

 private:
  int32_t buckets_ = 1;
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_JUMP_HASH_H_
