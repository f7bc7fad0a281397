// Kademlia placement (Maymounkov & Mazieres, IPTPS 2002): node ids and key ids are 160-bit
// SHA-1 values, and a key belongs to the node whose id is closest to it by XOR distance. Ids
// are kept sorted; the closest is found bit by bit from the top, keeping the half of the
// remaining range whose next bit matches the key's when it is not empty (what a walk down
// the binary trie of ids does). One object per thread.
#ifndef CHORD_TOOLS_PLACEMENT_KADEMLIA_H_
#define CHORD_TOOLS_PLACEMENT_KADEMLIA_H_

#include <vector>

#include "tools/placement/placement.h"

namespace chord::placement {

// True when a XOR key is closer than b XOR key.
[[nodiscard]] bool XorCloser(const Sha1Digest& a, const Sha1Digest& b, const Sha1Digest& key);

class Kademlia final : public Placement {
 public:
  void SetNodes(std::span<const std::string> nodes) override;
  [[nodiscard]] uint32_t Place(const KeyHash& key) override;
  [[nodiscard]] size_t MemoryBytes() const override {
    return ids_.capacity() * sizeof(Sha1Digest) + nodes_.capacity() * sizeof(uint32_t);
  }

 private:
  std::vector<Sha1Digest> ids_;  // ascending
  std::vector<uint32_t> nodes_;  // node index of ids_[i]
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_KADEMLIA_H_
