// Timers: the named wake-ups of a ChordNode's operations (the periodic round, a join retry, a
// data operation's back-off). At most one per OpRef: arming it again moves it. The node asks
// for the earliest deadline and, once the driver's Tick reaches it, takes the due ones in
// deadline order. Not thread-safe; the node's thread only.
#ifndef CHORD_NODE_CORE_TIMERS_H_
#define CHORD_NODE_CORE_TIMERS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "node/core/op_ref.h"

namespace chord {

class Timers {
 public:
  // Wakes `op` at monotonic time `at_ms`, replacing an earlier arming of the same OpRef.
  void Arm(OpRef op, uint64_t at_ms) {
    Cancel(op);
    by_op_.emplace(op, at_ms);
    queue_.emplace(at_ms, op);
  }
  void Cancel(OpRef op) {
    auto it = by_op_.find(op);
    if (it == by_op_.end()) return;
    queue_.erase({it->second, op});
    by_op_.erase(it);
  }
  bool armed(OpRef op) const { return by_op_.count(op) != 0; }
  std::optional<uint64_t> next() const {
    if (queue_.empty()) return std::nullopt;
    return queue_.begin()->first;
  }
  // Removes and returns the timers due at `now_ms`, earliest first.
  std::vector<OpRef> TakeDue(uint64_t now_ms) {
    std::vector<OpRef> due;
    while (!queue_.empty() && queue_.begin()->first <= now_ms) {
      due.push_back(queue_.begin()->second);
      by_op_.erase(queue_.begin()->second);
      queue_.erase(queue_.begin());
    }
    return due;
  }

 private:
  std::map<OpRef, uint64_t> by_op_;
  std::set<std::pair<uint64_t, OpRef>> queue_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_TIMERS_H_
