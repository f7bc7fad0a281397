// The load-balance experiment (Chord ToN paper, Fig. 8 and 9): N real nodes with V virtual
// nodes each (vnode i of node a has id SHA-1("a#i"); with V = 1 the id is SHA-1("a")), K keys,
// keys per real node counted from the ids alone. Any thread.
#ifndef CHORD_TOOLS_SIM_BALANCE_EXPERIMENT_H_
#define CHORD_TOOLS_SIM_BALANCE_EXPERIMENT_H_

#include <cstdint>

namespace chord::sim {

struct BalanceOptions {
  int nodes = 10000;
  int keys = 1000000;
  int vnodes = 1;
  uint64_t seed = 1;
};

struct BalanceReport {
  int nodes = 0;
  int keys = 0;
  int vnodes = 0;
  double mean = 0;
  double p1 = 0;
  double p99 = 0;
  double max = 0;
};

BalanceReport RunBalanceExperiment(const BalanceOptions& options);

}  // namespace chord::sim

#endif  // CHORD_TOOLS_SIM_BALANCE_EXPERIMENT_H_
