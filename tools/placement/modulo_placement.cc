#include "tools/placement/modulo_placement.h"

namespace chord::placement {

void ModuloPlacement::SetNodes(std::span<const std::string> nodes) { count_ = nodes.size(); }

uint32_t ModuloPlacement::Place(const KeyHash& key) {
  // The 256-bit big-endian value reduced limb by limb: r = (r * 2^64 + limb) mod N.
  unsigned __int128 r = 0;
  for (size_t limb = 0; limb < 4; ++limb) {
    r = ((r << 64) | LoadBigEndian64(key.sha256.data() + limb * 8)) % count_;
  }
  return static_cast<uint32_t>(r);
}

}  // namespace chord::placement
