// Placement: what every key-placement scheme of the lab implements, given a list of node
// names, which node (an index into that list) holds a key. One object per thread.
#ifndef CHORD_TOOLS_PLACEMENT_PLACEMENT_H_
#define CHORD_TOOLS_PLACEMENT_PLACEMENT_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tools/placement/key_hash.h"

namespace chord::placement {

class Placement {
 public:
  virtual ~Placement() = default;

  // Takes `nodes` (non-empty, distinct names, in list order) as the membership. A scheme that
  // keeps state across membership changes (Redis slots) moves only what its rebalancing
  // moves; the others rebuild from the names. Resets bounded-load counts.
  virtual void SetNodes(std::span<const std::string> nodes) = 0;

  // The index into the node list of the node that holds `key`. Only bounded loads has a
  // side effect: the key counts towards its node's load.
  [[nodiscard]] virtual uint32_t Place(const KeyHash& key) = 0;

  // Bounded loads: forgets the keys placed so far (the membership stays). Others: nothing.
  virtual void ClearLoads() {}

  // Bytes of the lookup structure (what a client must keep to place keys).
  [[nodiscard]] virtual size_t MemoryBytes() const = 0;

  // Each node's exact share of the key space when the structure determines it (arcs of a
  // ring, entries of a Maglev table); empty when shares can only be counted from keys.
  [[nodiscard]] virtual std::vector<double> ExactShares() const { return {}; }
};

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_PLACEMENT_H_
