// One-shot message digests the placement schemes are defined with: SHA-256 (key and node
// positions), SHA-1 (Kademlia ids), MD5 (Ketama). Thin wrappers over OpenSSL's EVP with each
// algorithm fetched once per process. Thread-safe.
#ifndef CHORD_TOOLS_PLACEMENT_DIGESTS_H_
#define CHORD_TOOLS_PLACEMENT_DIGESTS_H_

#include <array>
#include <cstdint>
#include <string_view>

namespace chord::placement {

using Sha256Digest = std::array<uint8_t, 32>;
using Sha1Digest = std::array<uint8_t, 20>;
using Md5Digest = std::array<uint8_t, 16>;

[[nodiscard]] Sha256Digest Sha256(std::string_view data);
[[nodiscard]] Sha1Digest Sha1(std::string_view data);
[[nodiscard]] Md5Digest Md5(std::string_view data);

// The first eight bytes of `bytes` read as a big-endian integer.
[[nodiscard]] uint64_t LoadBigEndian64(const uint8_t* bytes);

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_DIGESTS_H_
