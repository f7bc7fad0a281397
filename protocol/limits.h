// The size limits of the data model that every client and node applies alike, and the one
// sentence each limit's violation is reported with. Pure functions; any thread.
#ifndef CHORD_PROTOCOL_LIMITS_H_
#define CHORD_PROTOCOL_LIMITS_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace chord {

inline constexpr size_t kMaxKeyBytes = 1024;
inline constexpr size_t kMaxValueBytes = size_t{1} << 20;

// What is wrong with `key` as a key (empty, or over kMaxKeyBytes), as one sentence saying
// what to do; "" when it is a valid key.
std::string KeyProblem(std::string_view key);
// The same for a value of `size` bytes against a limit of `max_bytes` (kMaxValueBytes unless
// the node was started with a smaller frame limit).
std::string ValueProblem(size_t size, size_t max_bytes = kMaxValueBytes);

}  // namespace chord

#endif  // CHORD_PROTOCOL_LIMITS_H_
