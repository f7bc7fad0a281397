#include "tools/sim/lookup_experiment.h"

#include <string>
#include <vector>

#include "tools/sim/ideal_ring.h"
#include "tools/sim/random_ids.h"
#include "tools/sim/sample_stats.h"

namespace chord::sim {

LookupReport RunLookupExperiment(const LookupOptions& options) {
  SimOptions net_options;
  net_options.seed = options.seed;
  net_options.mean_latency_ms = options.mean_latency_ms;
  net_options.loss = options.loss;
  SimNetwork net(net_options);
  NodeConfig config;
  config.successors = options.successors;
  config.rpc_timeout_ms = options.rpc_timeout_ms;
  const std::vector<std::string> addrs = BuildIdealRing(&net, options.nodes, config);
  std::vector<Id> ids;
  for (const auto& a : addrs) {
    ids.push_back(Id::Sha1(a));
    net.node(a)->SetMaintenance(false);
  }
  const RingOrder order(std::move(ids));

  LookupReport report;
  report.nodes = options.nodes;
  report.lookups = options.lookups;
  SampleStats hops;
  int finished = 0;
  for (int j = 0; j < options.lookups; ++j) {
    const std::string& from = addrs[net.rng()() % addrs.size()];
    const Id key = RandomId(net.rng());
    // One lookup per virtual millisecond keeps a few hundred in flight at a time.
    net.At(static_cast<uint64_t>(j), from, [&, key](ChordNode* node) {
      node->Lookup(key, /*verify_owner=*/false, [&, key](Result<LookupResult> r) {
        ++finished;
        if (!r.ok() || !(r->owner.id == order.Successor(key))) {
          ++report.failed;
          return;
        }
        hops.Add(r->hops);
      });
    });
  }
  const uint64_t bound_ms = static_cast<uint64_t>(options.lookups) + 3600 * 1000;
  (void)net.RunUntil([&] { return finished == options.lookups; }, bound_ms);
  report.failed += options.lookups - finished;
  report.hops_mean = hops.Mean();
  report.hops_p1 = hops.Percentile(1);
  report.hops_p50 = hops.Percentile(50);
  report.hops_p99 = hops.Percentile(99);
  report.events = net.events_processed();
  report.virtual_seconds = static_cast<double>(net.now_ms()) / 1000.0;
  return report;
}

}  // namespace chord::sim
