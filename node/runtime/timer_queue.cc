#include "node/runtime/timer_queue.h"

#include <algorithm>
#include <string>
#include <utility>

namespace chord {

namespace {

// Caps a delay so that now + delay cannot overflow (about 292 million years).
constexpr uint64_t kMaxDelayMs = uint64_t{1} << 62;

}  // namespace

Status TimerQueue::Init(uv_loop_t* loop) {
  loop_ = loop;
  const int rc = timer_.Init([loop](uv_timer_t* t) { return uv_timer_init(loop, t); });
  if (rc < 0) {
    return Status::IoError(std::string("cannot create a timer: ") + uv_strerror(rc));
  }
  timer_.get()->data = this;
  return Status::Ok();
}

TimerId TimerQueue::Schedule(uint64_t delay_ms, std::function<void()> fn) {
  const TimerId id = next_id_++;
  if (closed_ || !timer_) return id;
  const uint64_t deadline = uv_now(loop_) + std::min(delay_ms, kMaxDelayMs);
  timers_.emplace(Key{deadline, id}, std::move(fn));
  deadlines_.emplace(id, deadline);
  if (!firing_ && deadline < armed_deadline_ms_) Arm();
  return id;
}

void TimerQueue::Cancel(TimerId id) {
  auto it = deadlines_.find(id);
  if (it == deadlines_.end()) return;
  timers_.erase(Key{it->second, id});
  deadlines_.erase(it);
  // The uv timer stays armed; if it fires early it finds nothing due and re-arms.
}

void TimerQueue::Close() {
  if (closed_) return;
  closed_ = true;
  timer_.Close();
  // Move the closures out first: destroying them may call back into Cancel.
  auto dropped = std::move(timers_);
  timers_.clear();
  deadlines_.clear();
  dropped.clear();
}

void TimerQueue::OnTimer(uv_timer_t* handle) {
  auto* self = static_cast<TimerQueue*>(handle->data);
  if (self != nullptr) self->Fire();
}

void TimerQueue::Fire() {
  armed_deadline_ms_ = UINT64_MAX;
  firing_ = true;
  const uint64_t now = uv_now(loop_);
  // Only timers that existed when this round started run now; later ones wait for the next
  // loop iteration. Due timers scheduled earlier always sort first, since a new timer's
  // deadline is at least `now`.
  const TimerId last_id = next_id_ - 1;
  while (!closed_ && !timers_.empty()) {
    auto it = timers_.begin();
    if (it->first.deadline_ms > now || it->first.id > last_id) break;
    auto node = timers_.extract(it);
    deadlines_.erase(node.key().id);
    node.mapped()();  // may schedule, cancel or close
  }
  firing_ = false;
  if (!closed_) Arm();
}

void TimerQueue::Arm() {
  if (!timer_) return;
  if (timers_.empty()) {
    uv_timer_stop(timer_.get());
    armed_deadline_ms_ = UINT64_MAX;
    return;
  }
  const uint64_t deadline = timers_.begin()->first.deadline_ms;
  const uint64_t now = uv_now(loop_);
  uv_timer_start(timer_.get(), &TimerQueue::OnTimer, deadline > now ? deadline - now : 0, 0);
  armed_deadline_ms_ = deadline;
}

}  // namespace chord
