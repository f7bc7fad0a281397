#include "tools/sim/lookup_batch.h"

#include "tools/sim/random_ids.h"

namespace chord::sim {

SimOptions LookupNetwork(uint64_t seed, double mean_latency_ms, double loss) {
  SimOptions o;
  o.seed = seed;
  o.mean_latency_ms = mean_latency_ms;
  o.loss = loss;
  return o;
}

std::vector<std::string> BuildStaticRing(SimNetwork* net, int nodes, int successors,
                                         uint64_t rpc_timeout_ms) {
  NodeConfig config;
  config.successors = successors;
  // The paper's experiments measure routing alone: one copy of each key, no replica traffic.
  config.replicas = 1;
  config.rpc_timeout_ms = rpc_timeout_ms;
  std::vector<std::string> addrs = BuildIdealRing(net, nodes, config);
  for (const auto& a : addrs) net->SetMaintenance(a, false);
  return addrs;
}

LookupTally RunLookupBatch(SimNetwork* net, const std::vector<std::string>& from,
                           const RingOrder& order, int count, bool verify_owner) {
  LookupTally tally;
  int finished = 0;
  for (int j = 0; j < count; ++j) {
    const std::string& origin = from[net->rng()() % from.size()];
    const Id key = RandomId(net->rng());
    // One lookup per virtual millisecond keeps a few hundred in flight at a time.
    net->At(static_cast<uint64_t>(j), origin, [&, origin, key, verify_owner] {
      net->Lookup(origin, key, verify_owner, [&, key](Result<LookupResult> r) {
        ++finished;
        if (!r.ok() || !(r->owner.id == order.Successor(key))) {
          ++tally.failed;
          return;
        }
        tally.hops.Add(r->hops);
        tally.timeouts.Add(r->timeouts);
      });
    });
  }
  const uint64_t bound_ms = static_cast<uint64_t>(count) + 3600 * 1000;
  (void)net->RunUntil([&] { return finished == count; }, bound_ms);
  tally.failed += count - finished;  // never finished: its origin or its path was lost
  return tally;
}

}  // namespace chord::sim
