#include "tools/sim/fail_experiment.h"

#include <algorithm>
#include <string>
#include <vector>

#include "tools/sim/ideal_ring.h"
#include "tools/sim/random_ids.h"
#include "tools/sim/sample_stats.h"

namespace chord::sim {

FailReport RunFailExperiment(const FailOptions& options) {
  SimOptions net_options;
  net_options.seed = options.seed;
  net_options.mean_latency_ms = options.mean_latency_ms;
  net_options.loss = options.loss;
  SimNetwork net(net_options);
  NodeConfig config;
  config.successors = options.successors;
  config.rpc_timeout_ms = options.rpc_timeout_ms;
  std::vector<std::string> addrs = BuildIdealRing(&net, options.nodes, config);
  for (const auto& a : addrs) net.node(a)->SetMaintenance(false);

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

  SampleStats hops, timeouts;
  int finished = 0;
  for (int j = 0; j < options.lookups; ++j) {
    const std::string& from = addrs[net.rng()() % addrs.size()];
    const Id key = RandomId(net.rng());
    net.At(static_cast<uint64_t>(j), from, [&, key](ChordNode* node) {
      node->Lookup(key, /*verify_owner=*/true, [&, key](Result<LookupResult> r) {
        ++finished;
        if (!r.ok() || !(r->owner.id == order.Successor(key))) {
          ++report.failed;
          return;
        }
        hops.Add(r->hops);
        timeouts.Add(r->timeouts);
      });
    });
  }
  const uint64_t bound_ms = static_cast<uint64_t>(options.lookups) + 3600 * 1000;
  (void)net.RunUntil([&] { return finished == options.lookups; }, bound_ms);
  report.lookups = options.lookups;
  report.failed += options.lookups - finished;
  report.hops_mean = hops.Mean();
  report.timeouts_mean = timeouts.Mean();
  report.events = net.events_processed();
  return report;
}

}  // namespace chord::sim
