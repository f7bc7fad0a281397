// DeadlineQueue: the deadlines of the requests an Outbox waits for, to find the earliest and
// the expired ones without a balanced tree per request. Requests go out with a handful of
// distinct timeouts (the RPC timeout, its multiples, the transfer timeout), so each timeout
// keeps a FIFO of (deadline, request id) in send order, which is deadline order as the node's
// clock only moves forward: adding is O(1), and an answered request is not searched for but
// dropped when it reaches the front (the caller tells which ids still wait). An entry out of
// order (a clock that stepped back) is placed by binary search instead. Node's thread only.
#ifndef CHORD_NODE_CORE_DEADLINE_QUEUE_H_
#define CHORD_NODE_CORE_DEADLINE_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

namespace chord {

class DeadlineQueue {
 public:
  // Request `id` expires at `deadline_ms`, `timeout_ms` after it was sent.
  void Add(uint64_t timeout_ms, uint64_t deadline_ms, uint64_t id);

  // The earliest deadline among the requests that `waiting(id)` says still wait; the entries
  // of those that do not are dropped on the way.
  template <typename Waiting>
  std::optional<uint64_t> Earliest(const Waiting& waiting) {
    std::optional<uint64_t> best;
    for (Fifo& f : fifos_) {
      DropAnswered(f, waiting);
      if (!f.entries.empty() && (!best || f.entries.front().first < *best)) {
        best = f.entries.front().first;
      }
    }
    return best;
  }

  // Removes every entry whose deadline is at or before `now_ms` and calls `expire(id)` for
  // those that `waiting(id)` says still wait, earliest first within each timeout.
  template <typename Waiting, typename Expire>
  void PopExpired(uint64_t now_ms, const Waiting& waiting, const Expire& expire) {
    for (Fifo& f : fifos_) {
      while (!f.entries.empty() && f.entries.front().first <= now_ms) {
        const uint64_t id = f.entries.front().second;
        f.entries.pop_front();
        if (waiting(id)) expire(id);
      }
    }
  }

  // Entries held, answered ones not yet dropped included.
  size_t size() const;

 private:
  struct Fifo {
    uint64_t timeout_ms = 0;
    std::deque<std::pair<uint64_t, uint64_t>> entries;  // (deadline, id), by deadline
  };

  template <typename Waiting>
  static void DropAnswered(Fifo& f, const Waiting& waiting) {
    while (!f.entries.empty() && !waiting(f.entries.front().second)) f.entries.pop_front();
  }

  std::vector<Fifo> fifos_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_DEADLINE_QUEUE_H_
