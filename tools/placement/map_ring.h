// MapRing: the same ring as HashRing (V points per node at SHA-256("name#i")) kept in a
// std::map from full 64-bit point to node, the textbook form whose memory Lamping & Veach
// report (46 MB for 1000 x 1000 points). Exists to measure that memory and lookup cost beside
// the sorted vector; answers are HashRing's. One object per thread.
#ifndef CHORD_TOOLS_PLACEMENT_MAP_RING_H_
#define CHORD_TOOLS_PLACEMENT_MAP_RING_H_

#include <functional>
#include <map>
#include <memory>

#include "tools/placement/counting_allocator.h"
#include "tools/placement/placement.h"

namespace chord::placement {

class MapRing final : public Placement {
 public:
  explicit MapRing(uint32_t vnodes);

  void SetNodes(std::span<const std::string> nodes) override;
  [[nodiscard]] uint32_t Place(const KeyHash& key) override;
  // Bytes the map's nodes requested from the heap (the map object itself included).
  [[nodiscard]] size_t MemoryBytes() const override;
  [[nodiscard]] std::vector<double> ExactShares() const override;

 private:
  uint32_t node_count_ = 0;
  using Map = std::map<uint64_t, uint32_t, std::less<>,
                       CountingAllocator<std::pair<const uint64_t, uint32_t>>>;

  uint32_t vnodes_;
  std::unique_ptr<size_t> bytes_;  // heap-held so the allocator's pointer survives moves
  Map points_;
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_MAP_RING_H_
