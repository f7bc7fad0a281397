// The simulated network the core's unit tests run on: 1-5 ms latencies from a seed. Test code
// only.
#ifndef CHORD_TESTS_UNIT_SIM_TEST_OPTIONS_H_
#define CHORD_TESTS_UNIT_SIM_TEST_OPTIONS_H_

#include <cstdint>

#include "tools/sim/sim_network.h"

namespace chord::test_support {

inline sim::SimOptions Net(uint64_t seed) {
  sim::SimOptions o;
  o.seed = seed;
  o.mean_latency_ms = 5;
  o.min_latency_ms = 1;
  return o;
}

}  // namespace chord::test_support

#endif  // CHORD_TESTS_UNIT_SIM_TEST_OPTIONS_H_
