// TimerQueue: one-shot timers on a libuv loop. All timers share a single uv_timer_t that is
// armed for the earliest deadline of an ordered queue keyed by (deadline, id), so timers fire
// in deadline order and timers with equal deadlines in the order they were scheduled. The
// runtime uses it to wake the nodes at their deadlines and for its own chores. Loop thread
// only.
#ifndef CHORD_NODE_RUNTIME_TIMER_QUEUE_H_
#define CHORD_NODE_RUNTIME_TIMER_QUEUE_H_

#include <uv.h>

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>

#include "node/runtime/uv_handle.h"
#include "protocol/base/status.h"

namespace chord {

using TimerId = uint64_t;

class TimerQueue {
 public:
  TimerQueue() = default;
  ~TimerQueue() { Close(); }
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Creates the underlying uv_timer_t on `loop`. Must succeed before Schedule is used.
  Status Init(uv_loop_t* loop);

  // Runs `fn` once, `delay_ms` after the loop's current time. Returns a nonzero id. Timers
  // scheduled while the queue is firing run at the earliest on the next loop iteration, so a
  // zero-delay timer never starves I/O. After Close(), `fn` is dropped and never runs.
  TimerId Schedule(uint64_t delay_ms, std::function<void()> fn);
  // Removes a pending timer; a no-op for fired, cancelled or unknown ids.
  void Cancel(TimerId id);
  // Drops every pending timer and closes the uv_timer_t. Idempotent.
  void Close();

  size_t size() const { return timers_.size(); }

 private:
  struct Key {
    uint64_t deadline_ms;
    TimerId id;
    friend auto operator<=>(const Key&, const Key&) = default;
  };

  static void OnTimer(uv_timer_t* handle);
  void Fire();
  // Arms the uv timer for the earliest deadline, or stops it when nothing is pending.
  void Arm();

  uv_loop_t* loop_ = nullptr;
  UvHandle<uv_timer_t> timer_;
  std::map<Key, std::function<void()>> timers_;
  std::unordered_map<TimerId, uint64_t> deadlines_;  // id -> deadline, for Cancel
  TimerId next_id_ = 1;
  uint64_t armed_deadline_ms_ = UINT64_MAX;  // deadline the uv timer is armed for; MAX: idle
  bool firing_ = false;
  bool closed_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_TIMER_QUEUE_H_
