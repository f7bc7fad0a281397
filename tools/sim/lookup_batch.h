// RunLookupBatch: the lookup workload shared by the `lookups` and `fail` experiments. Issues
// lookups of uniformly random ids from uniformly random nodes, one per virtual millisecond,
// runs the network until every one has finished, and tallies hops, timeouts and failures
// (an error, or an owner other than the id's successor in `order`). Simulator thread only.
#ifndef CHORD_TOOLS_SIM_LOOKUP_BATCH_H_
#define CHORD_TOOLS_SIM_LOOKUP_BATCH_H_

#include <string>
#include <vector>

#include "tools/sim/ideal_ring.h"
#include "tools/sim/sample_stats.h"
#include "tools/sim/sim_network.h"

namespace chord::sim {

struct LookupTally {
  SampleStats hops;      // of the successful lookups
  SampleStats timeouts;  // of the successful lookups
  int failed = 0;
};

// The network model of the paper's lookup experiments: `seed`, exponential one-way delay of
// mean `mean_latency_ms`, each message lost with probability `loss`.
SimOptions LookupNetwork(uint64_t seed, double mean_latency_ms, double loss);

// Adds a converged ring of `nodes` nodes (successor lists of `successors`) with stabilization
// stopped, as the lookup and failure experiments use it. Returns the addresses.
std::vector<std::string> BuildStaticRing(SimNetwork* net, int nodes, int successors,
                                         uint64_t rpc_timeout_ms);

LookupTally RunLookupBatch(SimNetwork* net, const std::vector<std::string>& from,
                           const RingOrder& order, int count, bool verify_owner);

}  // namespace chord::sim

#endif  // CHORD_TOOLS_SIM_LOOKUP_BATCH_H_
