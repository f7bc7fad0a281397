// The simultaneous-failure experiment (Chord ToN paper, Table II): a converged ring of N
// nodes with successor lists of length R; a fraction P crash at once, stabilization stays
// off, then L lookups of random ids from random survivors. A lookup succeeds when it returns
// the id's current live successor. Simulator thread only.
#ifndef CHORD_TOOLS_SIM_FAIL_EXPERIMENT_H_
#define CHORD_TOOLS_SIM_FAIL_EXPERIMENT_H_

#include <cstdint>

namespace chord::sim {

struct FailOptions {
  int nodes = 1000;
  int successors = 20;
  double fail_fraction = 0.1;
  int lookups = 10000;
  uint64_t seed = 1;
  double mean_latency_ms = 50;
  double loss = 0;  // probability that any one message is dropped
  uint64_t rpc_timeout_ms = 500;
};

struct FailReport {
  int nodes = 0;
  int crashed = 0;
  int lookups = 0;
  int failed = 0;
  double hops_mean = 0;
  double timeouts_mean = 0;
  uint64_t events = 0;
};

FailReport RunFailExperiment(const FailOptions& options);

}  // namespace chord::sim

#endif  // CHORD_TOOLS_SIM_FAIL_EXPERIMENT_H_
