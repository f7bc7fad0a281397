// A 64-bit mixing function (the SplitMix64 / Stafford "Mix13" finalizer): a bijection whose
// output bits each depend on every input bit. Rendezvous hashing scores (key, node) pairs
// with it. Pure; any thread.
#ifndef CHORD_TOOLS_PLACEMENT_MIX64_H_
#define CHORD_TOOLS_PLACEMENT_MIX64_H_

#include <cstdint>

namespace chord::placement {

[[nodiscard]] constexpr uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_MIX64_H_
