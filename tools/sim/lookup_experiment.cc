#include "tools/sim/lookup_experiment.h"

#include <string>
#include <vector>

#include "tools/sim/ideal_ring.h"
#include "tools/sim/lookup_batch.h"

namespace chord::sim {

LookupReport RunLookupExperiment(const LookupOptions& options) {
  SimNetwork net(LookupNetwork(options.seed, options.mean_latency_ms, options.loss));
  const std::vector<std::string> addrs =
      BuildStaticRing(&net, options.nodes, options.successors, options.rpc_timeout_ms);
  std::vector<Id> ids;
  for (const auto& a : addrs) ids.push_back(Id::Sha1(a));
  const RingOrder order(std::move(ids));

  LookupReport report;
  report.nodes = options.nodes;
  report.lookups = options.lookups;
  LookupTally tally = RunLookupBatch(&net, addrs, order, options.lookups, /*verify_owner=*/false);
  report.failed = tally.failed;
  report.hops_mean = tally.hops.Mean();
  report.hops_p1 = tally.hops.Percentile(1);
  report.hops_p50 = tally.hops.Percentile(50);
  report.hops_p99 = tally.hops.Percentile(99);
  report.events = net.events_processed();
  report.virtual_seconds = static_cast<double>(net.now_ms()) / 1000.0;
  return report;
}

}  // namespace chord::sim
