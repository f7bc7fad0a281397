// RandomId: a uniformly random 160-bit ring id drawn from the simulator's seeded generator.
#ifndef CHORD_TOOLS_SIM_RANDOM_IDS_H_
#define CHORD_TOOLS_SIM_RANDOM_IDS_H_

#include <array>
#include <cstdint>
#include <random>

#include "protocol/id.h"

namespace chord::sim {

inline Id RandomId(std::mt19937_64& rng) {
  std::array<uint8_t, Id::kBytes> bytes{};
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t r = rng();
    for (size_t j = i; j < i + 8 && j < bytes.size(); ++j, r >>= 8) {
      bytes[j] = static_cast<uint8_t>(r);
    }
  }
  return Id(bytes);
}

}  // namespace chord::sim

#endif  // CHORD_TOOLS_SIM_RANDOM_IDS_H_
