// The lookup path-length experiment (Chord ToN paper, Fig. 10): a converged ring of N nodes,
// stabilization off, L lookups of random ids from random nodes. Simulator thread only.
#ifndef CHORD_TOOLS_SIM_LOOKUP_EXPERIMENT_H_
#define CHORD_TOOLS_SIM_LOOKUP_EXPERIMENT_H_

#include <cstdint>

namespace chord::sim {

struct LookupOptions {
  int nodes = 1000;
  int lookups = 10000;
  uint64_t seed = 1;
  int successors = 8;
  double mean_latency_ms = 50;
  double loss = 0;  // probability that any one message is dropped
  uint64_t rpc_timeout_ms = 500;
};

struct LookupReport {
  int nodes = 0;
  int lookups = 0;
  int failed = 0;  // errors or a wrong owner
  double hops_mean = 0;
  double hops_p1 = 0;
  double hops_p50 = 0;
  double hops_p99 = 0;
  uint64_t events = 0;
  double virtual_seconds = 0;
};

LookupReport RunLookupExperiment(const LookupOptions& options);

}  // namespace chord::sim

#endif  // CHORD_TOOLS_SIM_LOOKUP_EXPERIMENT_H_
