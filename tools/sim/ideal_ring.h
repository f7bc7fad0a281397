// Helpers that build and judge rings inside a SimNetwork: simulated node addresses, a
// converged ring of thousands of nodes installed directly (no join traffic), the ring order
// computed from the ids alone, and the check for Zave's ideal state. Simulator thread only.
#ifndef CHORD_TOOLS_SIM_IDEAL_RING_H_
#define CHORD_TOOLS_SIM_IDEAL_RING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/id.h"
#include "tools/sim/sim_network.h"

namespace chord::sim {

// A distinct simulated address for node number i: "10.a.b.c:4000".
std::string SimAddress(uint64_t i);

// Sorted ids with lookups of "first id clockwise at or after x".
class RingOrder {
 public:
  explicit RingOrder(std::vector<Id> ids);
  const std::vector<Id>& ids() const { return ids_; }
  // Index of the first id at or after x, wrapping to 0.
  size_t SuccessorIndex(const Id& x) const;
  const Id& Successor(const Id& x) const { return ids_[SuccessorIndex(x)]; }

 private:
  std::vector<Id> ids_;
};

// Adds nodes on SimAddress(first_index) .. SimAddress(first_index + n - 1) and installs the
// converged routing state in each: successor lists, predecessors and all fingers. Returns
// the addresses.
std::vector<std::string> BuildIdealRing(SimNetwork* net, int n, const NodeConfig& config,
                                        uint64_t first_index = 0);

// True when every live member's successor list is exactly the next min(S, N-1) live members
// clockwise and its predecessor the previous one (Zave's ideal state). `why` says what is not.
bool IsIdealRing(const SimNetwork& net, int successors, std::string* why = nullptr);

}  // namespace chord::sim

#endif  // CHORD_TOOLS_SIM_IDEAL_RING_H_
