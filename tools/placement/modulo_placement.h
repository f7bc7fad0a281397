// ModuloPlacement: node = hash(key) mod N, with the key's whole 256-bit SHA-256 value as the
// hash (the definition ../background/004 measures). Not consistent: growing N moves almost
// every key. One object per thread.
#ifndef CHORD_TOOLS_PLACEMENT_MODULO_PLACEMENT_H_
#define CHORD_TOOLS_PLACEMENT_MODULO_PLACEMENT_H_

#include "tools/placement/placement.h"

namespace chord::placement {

class ModuloPlacement final : public Placement {
 public:
  void SetNodes(std::span<const std::string> nodes) override;
  [[nodiscard]] uint32_t Place(const KeyHash& key) override;
  [[nodiscard]] size_t MemoryBytes() const override { return 0; }

 private:
  uint64_t count_ = 1;
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_MODULO_PLACEMENT_H_
