// Ketama (libketama, last.fm 2007): each server gets 40 MD5 digests of "<name>-<k>",
// k = 0..39, and each 16-byte digest gives 4 points (bytes 4h..4h+3, little-endian), 160
// points on a 2^32 ring; a key (MD5 bytes 0-3, little-endian) goes to the first point at or
// after it, wrapping to the first point. Equal weights. One object per thread.
#ifndef CHORD_TOOLS_PLACEMENT_KETAMA_H_
#define CHORD_TOOLS_PLACEMENT_KETAMA_H_

#include <string_view>
#include <vector>

#include "tools/placement/placement.h"

namespace chord::placement {

inline constexpr uint32_t kKetamaDigestsPerServer = 40;
inline constexpr uint32_t kKetamaPointsPerDigest = 4;

// The 160 points of one server, in generation order.
[[nodiscard]] std::vector<uint32_t> KetamaPoints(std::string_view name);

class Ketama final : public Placement {
 public:
  void SetNodes(std::span<const std::string> nodes) override;
  [[nodiscard]] uint32_t Place(const KeyHash& key) override;
  [[nodiscard]] size_t MemoryBytes() const override {
    return entries_.capacity() * sizeof(uint64_t);
  }
  [[nodiscard]] std::vector<double> ExactShares() const override;

 private:
  uint32_t node_count_ = 0;
  std::vector<uint64_t> entries_;  // point << 32 | node, ascending
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_KETAMA_H_
