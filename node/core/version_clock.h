// VersionClock: the hybrid logical clock that versions writes. A version is the wall-clock
// milliseconds shifted left by 16, kept above every version this node has seen, so versions
// follow real time across nodes with synchronized clocks and never go backwards on one node.
// Not thread-safe; the node's thread only.
#ifndef CHORD_NODE_CORE_VERSION_CLOCK_H_
#define CHORD_NODE_CORE_VERSION_CLOCK_H_

#include <algorithm>
#include <cstdint>

namespace chord {

class VersionClock {
 public:
  // A version above every one seen, at least `wall_ms` << 16.
  uint64_t Next(uint64_t wall_ms) {
    last_ = std::max(last_ + 1, wall_ms << 16);
    return last_;
  }
  // Keeps later versions above `version` (one stored or received).
  void Observe(uint64_t version) { last_ = std::max(last_, version); }
  uint64_t last() const { return last_; }

 private:
  uint64_t last_ = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_VERSION_CLOCK_H_
