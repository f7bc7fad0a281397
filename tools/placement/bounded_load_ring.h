// BoundedLoadRing: consistent hashing with bounded loads (Mirrokni, Thorup & Zadimoghaddam,
// SODA 2018). Nodes sit on a HashRing; every node may hold at most
// ceil((1 + epsilon) * K / N) keys, K the expected key count; a key walks clockwise from its
// ring position past every full node to the first node with room. With no expected count the
// bound follows the keys placed so far (K = placed + 1). Placing is stateful: SetNodes clears
// the loads. One object per thread.
#ifndef CHORD_TOOLS_PLACEMENT_BOUNDED_LOAD_RING_H_
#define CHORD_TOOLS_PLACEMENT_BOUNDED_LOAD_RING_H_

#include <vector>

#include "tools/placement/hash_ring.h"

namespace chord::placement {

// ceil((1 + epsilon) * keys / nodes), computed so that exact quotients are not rounded up.
// epsilon must be finite and non-negative (the CLI checks); anything else is treated as 0.
[[nodiscard]] uint64_t BoundedLoadCapacity(double epsilon, uint64_t keys, uint32_t nodes);

class BoundedLoadRing final : public Placement {
 public:
  BoundedLoadRing(uint32_t vnodes, double epsilon, uint64_t expected_keys)
      : ring_(vnodes), epsilon_(epsilon), expected_keys_(expected_keys) {}

  void SetNodes(std::span<const std::string> nodes) override;
  [[nodiscard]] uint32_t Place(const KeyHash& key) override;
  void ClearLoads() override;
  [[nodiscard]] size_t MemoryBytes() const override {
    return ring_.MemoryBytes() + loads_.capacity() * sizeof(uint64_t);
  }

  [[nodiscard]] uint64_t Capacity() const;
  [[nodiscard]] const std::vector<uint64_t>& loads() const { return loads_; }

 private:
  HashRing ring_;
  double epsilon_;
  uint64_t expected_keys_;
  uint64_t placed_ = 0;
  std::vector<uint64_t> loads_;
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_BOUNDED_LOAD_RING_H_
