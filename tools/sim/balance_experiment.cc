#include "tools/sim/balance_experiment.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "protocol/id.h"
#include "tools/sim/ideal_ring.h"
#include "tools/sim/sample_stats.h"

namespace chord::sim {

BalanceReport RunBalanceExperiment(const BalanceOptions& options) {
  // (vnode id, real node) sorted by id: the ring.
  std::vector<std::pair<Id, int>> ring;
  ring.reserve(static_cast<size_t>(options.nodes) * options.vnodes);
  // The seed picks which addresses the nodes have, so different seeds give different rings.
  const uint64_t base = options.seed * 1000003ull;
  for (int n = 0; n < options.nodes; ++n) {
    const std::string addr = SimAddress(base + static_cast<uint64_t>(n));
    if (options.vnodes == 1) {
      ring.emplace_back(Id::Sha1(addr), n);
    } else {
      for (int v = 0; v < options.vnodes; ++v) {
        ring.emplace_back(Id::Sha1(addr + "#" + std::to_string(v)), n);
      }
    }
  }
  std::sort(ring.begin(), ring.end());
  std::vector<int> load(static_cast<size_t>(options.nodes), 0);
  for (int k = 0; k < options.keys; ++k) {
    const Id key = Id::Sha1("key-" + std::to_string(options.seed) + "-" + std::to_string(k));
    auto it = std::lower_bound(ring.begin(), ring.end(), std::make_pair(key, -1));
    if (it == ring.end()) it = ring.begin();
    ++load[static_cast<size_t>(it->second)];
  }
  SampleStats stats;
  for (int l : load) stats.Add(l);
  BalanceReport report;
  report.nodes = options.nodes;
  report.keys = options.keys;
  report.vnodes = options.vnodes;
  report.mean = stats.Mean();
  report.p1 = stats.Percentile(1);
  report.p99 = stats.Percentile(99);
  report.max = stats.Max();
  return report;
}

}  // namespace chord::sim
