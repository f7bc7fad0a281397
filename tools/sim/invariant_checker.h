// InvariantChecker: checks Zave's ring invariants (shared/RING.md) on the nodes of a
// SimNetwork and counts violations. Local properties of one node's extended successor list
// (OneLiveSuccessor, NoDuplicates, OrderedSuccessorLists) are cheap and meant to be checked
// on the node an event touched; the global ones (exactly one ring of best successors, and
// that ring ordered) walk every member and are meant for after membership events and at a
// fixed virtual-time period. Simulator thread only.
#ifndef CHORD_TOOLS_SIM_INVARIANT_CHECKER_H_
#define CHORD_TOOLS_SIM_INVARIANT_CHECKER_H_

#include <cstdint>
#include <string>

#include "tools/sim/sim_network.h"

namespace chord::sim {

struct InvariantCounts {
  uint64_t node_checks = 0;
  uint64_t ring_checks = 0;
  uint64_t one_live_successor = 0;  // a member whose successor list has no live entry
  uint64_t no_duplicates = 0;       // an extended successor list with a repeated entry
  uint64_t ordered_lists = 0;       // an extended successor list out of clockwise order
  uint64_t ring_count = 0;          // not exactly one ring of best successors
  uint64_t ring_order = 0;          // the ring wraps around the id space more than once
  uint64_t total() const {
    return one_live_successor + no_duplicates + ordered_lists + ring_count + ring_order;
  }
};

class InvariantChecker {
 public:
  explicit InvariantChecker(const SimNetwork* net) : net_(net) {}

  // Local properties of `node`'s extended successor list. Non-members are skipped.
  void CheckNode(const ChordNode& node);
  void CheckAllNodes();
  // Global: the best-successor graph of the members has exactly one cycle, and it is
  // ordered (one pass around the identifier ring).
  void CheckRing();

  const InvariantCounts& counts() const { return counts_; }
  // The first violation seen, with the virtual time, for replaying a failing seed.
  const std::string& first_violation() const { return first_violation_; }

 private:
  bool IsMember(const ChordNode* n) const;
  void Violation(uint64_t* counter, const std::string& what);

  const SimNetwork* net_;
  InvariantCounts counts_;
  std::string first_violation_;
};

}  // namespace chord::sim

#endif  // CHORD_TOOLS_SIM_INVARIANT_CHECKER_H_
