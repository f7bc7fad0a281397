// The churn experiment (Chord ToN paper, Table III): a converged ring of N nodes; joins and
// departures arrive as Poisson processes of X per second each, stabilization periods are
// uniform in [15, 45] s, lookups arrive at one per second. When L lookups have been issued the
// churn stops and the ring runs until it is ideal again. Departures are graceful leaves (or
// crashes, for a chosen fraction) and respect Zave's operating assumption: no departure
// leaves a member without a live successor, and at least R + 2 members remain. Optionally
// checks Zave's invariants after every event. Simulator thread only.
#ifndef CHORD_TOOLS_SIM_CHURN_EXPERIMENT_H_
#define CHORD_TOOLS_SIM_CHURN_EXPERIMENT_H_

#include <cstdint>
#include <string>

#include "tools/sim/invariant_checker.h"

namespace chord::sim {

struct ChurnOptions {
  int nodes = 1000;
  int successors = 20;
  double rate = 0.05;   // joins per second, and departures per second
  int lookups = 10000;  // one per second: the churn lasts about this many seconds
  uint64_t seed = 1;
  bool check_invariants = false;
  double crash_fraction = 0;  // share of departures that are crashes instead of leaves
  uint64_t stabilize_ms = 30000;
  double stabilize_jitter = 0.5;  // periods uniform in stabilize_ms * [0.5, 1.5]
  double mean_latency_ms = 50;
  double loss = 0;  // probability that any one message is dropped
  uint64_t rpc_timeout_ms = 500;
  int max_converge_rounds = 500;
  // A partition: from partition_at_s for partition_seconds, nodes whose ids lie in the first
  // partition_fraction of the ring cannot exchange messages with the others.
  double partition_at_s = 0;  // 0: no partition
  double partition_seconds = 0;
  double partition_fraction = 0.3;
  int min_nodes = 0;       // departures keep at least max(this, R + 2) members
  int max_nodes = 0;       // joins keep at most this many nodes; 0: no limit
  bool log_nodes = false;  // print every node's log lines to stderr (for replaying a seed)
};

struct ChurnReport {
  int lookups = 0;
  int failed = 0;
  double hops_mean = 0;
  double timeouts_mean = 0;
  uint64_t invariant_violations = 0;
  InvariantCounts invariants;
  std::string first_violation;
  bool converged = false;
  std::string not_converged_why;  // what was still not ideal at the bound
  int rounds_to_converge = -1;
  int joins = 0;
  int leaves = 0;
  int crashes = 0;
  int skipped_departures = 0;  // departures deferred by a second (operating assumption)
  int skipped_joins = 0;       // joins refused by max_nodes
  int final_nodes = 0;
  uint64_t events = 0;
  double virtual_seconds = 0;
};

ChurnReport RunChurnExperiment(const ChurnOptions& options);

}  // namespace chord::sim

#endif  // CHORD_TOOLS_SIM_CHURN_EXPERIMENT_H_
