// Rendezvous / highest-random-weight hashing (Thaler & Ravishankar 1996): every node scores
// the key with a pseudo-random weight w(key, node) and the highest score wins. Here
// w = Mix64(key point XOR node seed), the seed being the first 8 bytes of SHA-256(name).
// O(N) per lookup, no table; growth moves keys only to the new node. One object per thread.
#ifndef CHORD_TOOLS_PLACEMENT_RENDEZVOUS_H_
#define CHORD_TOOLS_PLACEMENT_RENDEZVOUS_H_

#include <vector>

#include "tools/placement/placement.h"

namespace chord::placement {

class Rendezvous final : public Placement {
 public:
  void SetNodes(std::span<const std::string> nodes) override;
  [[nodiscard]] uint32_t Place(const KeyHash& key) override;
  [[nodiscard]] size_t MemoryBytes() const override { return seeds_.capacity() * sizeof(uint64_t); }

 private:
  std::vector<uint64_t> seeds_;
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_RENDEZVOUS_H_
