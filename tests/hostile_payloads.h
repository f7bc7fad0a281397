// Payloads of frames a hostile peer sends, built byte by byte, for the unit tests of the frame
// decoder and the integration tests of a node's resource bounds alike. Header-only; tests only.
#ifndef CHORD_TESTS_HOSTILE_PAYLOADS_H_
#define CHORD_TESTS_HOSTILE_PAYLOADS_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace chord::testing {

// An Envelope of nearly `max_bytes`: a ReplicateRequest (Envelope field 40) of nothing but
// empty records (its field 2), two bytes each, which the parser would hold at some 45 times
// their size; its length says `overstated` bytes more than follow it.
inline std::string EmptyRecordsPayload(size_t max_bytes, size_t overstated) {
  const size_t count = (max_bytes - 16) / 2;
  std::string records;
  records.reserve(2 * count);
  for (size_t i = 0; i < count; ++i) records += std::string("\x12\x00", 2);
  std::string payload = "\xc2\x02";  // field 40, length-delimited
  for (uint64_t n = records.size() + overstated;; n >>= 7) {
    payload.push_back(static_cast<char>(n >= 0x80 ? (n & 0x7f) | 0x80 : n));
    if (n < 0x80) break;
  }
  return payload + records;
}

}  // namespace chord::testing

#endif  // CHORD_TESTS_HOSTILE_PAYLOADS_H_
