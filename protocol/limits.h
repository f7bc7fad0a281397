// The size and time-to-live limits of the data model that every client and node applies alike,
// and the one sentence each size limit's violation is reported with. Pure functions; any
// thread.
#ifndef CHORD_PROTOCOL_LIMITS_H_
#define CHORD_PROTOCOL_LIMITS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace chord {

inline constexpr size_t kMaxKeyBytes = 1024;
inline constexpr size_t kMaxValueBytes = size_t{1} << 20;
// Bounds of a put's time to live in ms (0 means no expiry and is always accepted).
inline constexpr uint64_t kMinTtlMs = 1;
inline constexpr uint64_t kMaxTtlMs = uint64_t{10} * 366 * 24 * 3600 * 1000;  // ~10 years

// What is wrong with `key` as a key (empty, or over kMaxKeyBytes), as one sentence saying
// what to do; "" when it is a valid key.
std::string KeyProblem(std::string_view key);
// The same for a value of `size` bytes against a limit of `max_bytes` (kMaxValueBytes unless
// the node was started with a smaller frame limit).
std::string ValueProblem(size_t size, size_t max_bytes = kMaxValueBytes);

}  // namespace chord

#endif  // CHORD_PROTOCOL_LIMITS_H_
