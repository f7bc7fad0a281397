// The simulated network the core's unit tests run on: 1-5 ms latencies from a seed, and a
// client call that runs the network until its answer arrives. Test code only.
#ifndef CHORD_TESTS_UNIT_SIM_TEST_OPTIONS_H_
#define CHORD_TESTS_UNIT_SIM_TEST_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "tools/sim/sim_network.h"

namespace chord::test_support {

inline sim::SimOptions Net(uint64_t seed) {
  sim::SimOptions o;
  o.seed = seed;
  o.mean_latency_ms = 5;
  o.min_latency_ms = 1;
  return o;
}

// Sends `request` to `addr` as a client and runs the network until the answer (nullopt when
// none came within 20 s of simulated time).
inline std::optional<wire::Envelope> CallAndWait(sim::SimNetwork& net, const std::string& addr,
                                                 wire::Envelope request) {
  std::optional<wire::Envelope> out;
  bool done = false;
  net.ClientCall(addr, std::move(request), 20000, [&](const wire::Envelope* r) {
    done = true;
    if (r != nullptr) out = *r;
  });
  net.RunUntil([&] { return done; }, 30000);
  return out;
}

// CallAndWait for a get, put or delete: its DataResponse, if one came.
inline std::optional<wire::DataResponse> DataCall(sim::SimNetwork& net, const std::string& addr,
                                                  wire::Envelope request) {
  std::optional<wire::Envelope> r = CallAndWait(net, addr, std::move(request));
  if (!r || !r->has_data_resp()) return std::nullopt;
  return r->data_resp();
}

}  // namespace chord::test_support

#endif  // CHORD_TESTS_UNIT_SIM_TEST_OPTIONS_H_
