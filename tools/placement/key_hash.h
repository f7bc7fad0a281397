// KeyHash: every hash of one key that some placement scheme is defined with, computed once so
// that a scheme's lookup cost is its placement alone (the key hashes are measured apart).
// Plain value; any thread.
#ifndef CHORD_TOOLS_PLACEMENT_KEY_HASH_H_
#define CHORD_TOOLS_PLACEMENT_KEY_HASH_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tools/placement/digests.h"

namespace chord::placement {

struct KeyHash {
  Sha256Digest sha256{};  // modulo reduces all 256 bits, as ../background/004 does
  uint64_t point = 0;     // first 8 bytes of sha256, big-endian: the key's place on a 2^64 ring
  Sha1Digest sha1{};      // Kademlia key id
  uint32_t ketama = 0;    // Ketama's key hash: MD5 bytes 0-3, little-endian
  uint16_t slot = 0;      // Redis Cluster slot
};

[[nodiscard]] KeyHash HashKey(std::string_view key);

// The lab's key set: "user-1" ... "user-<count>".
[[nodiscard]] std::string UserKey(uint64_t index);
[[nodiscard]] std::vector<KeyHash> HashUserKeys(uint64_t count);

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_KEY_HASH_H_
