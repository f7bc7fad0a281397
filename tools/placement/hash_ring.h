// HashRing: consistent hashing on a 2^64 ring (Karger et al.) with V points per node; point i
// of node "s" is the first 8 bytes of SHA-256("s#i") (../background/004's naming, so V = 1
// and V = 100 reproduce its figures). A key goes to the first point at or clockwise after
// SHA-256(key), wrapping past the top. Stored as one sorted vector of 8-byte entries, each a
// point whose low bits are replaced by its node's index (the compact form Lamping & Veach
// measured at 7.6 MB for 1000 x 1000 points); a lookup is one binary search.
// One object per thread.
#ifndef CHORD_TOOLS_PLACEMENT_HASH_RING_H_
#define CHORD_TOOLS_PLACEMENT_HASH_RING_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tools/placement/placement.h"

namespace chord::placement {

// The ring position of point `index` of node `name`.
[[nodiscard]] uint64_t RingPoint(std::string_view name, uint32_t index);

class HashRing final : public Placement {
 public:
  explicit HashRing(uint32_t vnodes) : vnodes_(vnodes) {}

  void SetNodes(std::span<const std::string> nodes) override;
  [[nodiscard]] uint32_t Place(const KeyHash& key) override {
    return NodeAt(FirstAtOrAfter(key.point));
  }
  [[nodiscard]] size_t MemoryBytes() const override;
  [[nodiscard]] std::vector<double> ExactShares() const override;

  // The walk bounded loads takes: the index of the first point at or after `point` (wrapping),
  // the node of the point at an index, and the number of points.
  [[nodiscard]] size_t FirstAtOrAfter(uint64_t point) const;
  [[nodiscard]] uint32_t NodeAt(size_t index) const {
    return static_cast<uint32_t>(entries_[index] & node_mask_);
  }
  [[nodiscard]] size_t PointCount() const { return entries_.size(); }
  [[nodiscard]] uint32_t vnodes() const { return vnodes_; }

 private:
  uint32_t vnodes_;
  uint32_t node_count_ = 0;
  uint64_t node_mask_ = 1;
  std::vector<uint64_t> entries_;  // (point & ~node_mask_) | node index, ascending
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_HASH_RING_H_
