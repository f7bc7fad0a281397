#include "tools/sim/fail_experiment.h"

#include <algorithm>
#include <string>
#include <vector>

#include "tools/sim/ideal_ring.h"
#include "tools/sim/lookup_batch.h"

namespace chord::sim {

FailReport RunFailExperiment(const FailOptions& options) {
  SimNetwork net(LookupNetwork(options.seed, options.mean_latency_ms, options.loss));
  std::vector<std::string> addrs =
      BuildStaticRing(&net, options.nodes, options.successors, options.rpc_timeout_ms);

  // Crash a random subset at once (a seeded Fisher-Yates shuffle picks it).
  FailReport report;
  report.nodes = options.nodes;
  const int crash = std::clamp(static_cast<int>(options.fail_fraction * options.nodes + 0.5), 0,
                               options.nodes - 1);
  for (size_t i = addrs.size() - 1; i > 0; --i) {
    std::swap(addrs[i], addrs[net.rng()() % (i + 1)]);
  }
  for (int i = 0; i < crash; ++i) net.Crash(addrs[i]);
  addrs.erase(addrs.begin(), addrs.begin() + crash);
  report.crashed = crash;
  std::vector<Id> live;
  for (const auto& a : addrs) live.push_back(Id::Sha1(a));
  const RingOrder order(std::move(live));

  LookupTally tally = RunLookupBatch(&net, addrs, order, options.lookups, /*verify_owner=*/true);
  report.lookups = options.lookups;
  report.failed = tally.failed;
  report.hops_mean = tally.hops.Mean();
  report.timeouts_mean = tally.timeouts.Mean();
  report.events = net.events_processed();
  return report;
}

}  // namespace chord::sim
