// RingWalk: a client-side view of a whole ring, gathered by asking one node for its status
// and following successor pointers from node to node until the walk comes back around. Used
// by chordctl (ring, dump) and the integration tests to see every member and to check that
// all successor and predecessor pointers agree with the ring order. Blocking; one thread.
#ifndef CHORD_TOOLS_CLIENT_RING_WALK_H_
#define CHORD_TOOLS_CLIENT_RING_WALK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"

namespace chord {

// The most nodes one walk visits, and the most remembered members it then asks.
inline constexpr int kMaxRingWalkSteps = 10000;
inline constexpr size_t kMaxOutsideProbes = 1024;

// One member met by the walk, with the status it reported.
struct RingNode {
  Id id;
  std::string addr;
  wire::StatusResponse status;
};

struct RingView {
  std::vector<RingNode> nodes;        // every member met, sorted by id ascending
  bool consistent = false;            // every pointer agrees and no member is outside
  std::vector<std::string> problems;  // one readable sentence per disagreement
  // Members that the nodes of this ring remember, that answer and are joined, but that the
  // walk did not meet: another ring (a partition that has not healed), sorted by id.
  std::vector<RingNode> outside;

  // The member before / after nodes[i] in ring order (wrapping). Requires i < nodes.size().
  const RingNode& RingPredecessor(size_t i) const {
    return nodes[(i + nodes.size() - 1) % nodes.size()];
  }
  const RingNode& RingSuccessor(size_t i) const { return nodes[(i + 1) % nodes.size()]; }
};

// Walks the ring from `start_addr` (HOST:PORT), following each node's first successor; when a
// successor cannot be reached, it is reported as a problem and the walk continues with the
// next entry of the successor list. Then it asks the members the walked nodes remember
// (StatusResponse.known_members) that it did not meet, a few at a time: those that answer as
// joined members are `outside`. Each status call is bounded by `timeout_ms`, the walk by
// kMaxRingWalkSteps nodes and the members asked by kMaxOutsideProbes. Fails only when the
// start node itself cannot be asked. `cancelled`, when given, is asked before every status call:
// once it returns true the walk ends with Unavailable.
Result<RingView> WalkRing(const std::string& start_addr, uint64_t timeout_ms,
                          const std::function<bool()>& cancelled = {});

// Recomputes view->consistent from view->nodes (which must be sorted by id) and appends a
// problem for every pointer that disagrees with the ring order. Problems already in the view
// (e.g. unreachable nodes) make it inconsistent too.
void CheckRingPointers(RingView* view);

// "127.0.0.1:4001 [1a2b3c4d5e6f]": how problems and tables name a node.
std::string DescribeNode(const std::string& addr, const Id& id);

}  // namespace chord

#endif  // CHORD_TOOLS_CLIENT_RING_WALK_H_
