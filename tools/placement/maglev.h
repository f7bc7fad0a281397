// Maglev hashing (Eisenbud et al., NSDI 2016, section 3.4): a lookup table of M entries
// (M prime, 65537 by default) filled by the paper's populate loop, each node taking turns to
// claim the next free entry of its own permutation offset + j * skip (mod M), where offset
// and skip come from two hashes of its name (bytes 0-7 and 8-15 of SHA-256(name)). A key
// goes to entry[key point mod M]. Near-equal shares (each node ends with floor(M/N) or
// ceil(M/N) entries), O(1) lookup; a membership change disturbs a few entries between
// surviving nodes. One object per thread.
#ifndef CHORD_TOOLS_PLACEMENT_MAGLEV_H_
#define CHORD_TOOLS_PLACEMENT_MAGLEV_H_

#include <vector>

#include "tools/placement/placement.h"

namespace chord::placement {

inline constexpr uint32_t kMaglevDefaultTableSize = 65537;

class Maglev final : public Placement {
 public:
  // `table_size` must be prime and at least the node count.
  explicit Maglev(uint32_t table_size = kMaglevDefaultTableSize) : table_size_(table_size) {}

  void SetNodes(std::span<const std::string> nodes) override;
  [[nodiscard]] uint32_t Place(const KeyHash& key) override {
    return table_[key.point % table_size_];
  }
  [[nodiscard]] size_t MemoryBytes() const override { return table_.capacity() * sizeof(uint32_t); }
  [[nodiscard]] std::vector<double> ExactShares() const override;

  [[nodiscard]] const std::vector<uint32_t>& table() const { return table_; }

 private:
  uint32_t table_size_;
  uint32_t node_count_ = 0;
  std::vector<uint32_t> table_;
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_MAGLEV_H_
