#include "node/http/loop_mailbox.h"

#include <utility>

namespace chord {

int LoopMailbox::Open(uv_loop_t* loop) {
  const int rc = async_.Init([loop](uv_async_t* a) {
    return uv_async_init(loop, a, [](uv_async_t* h) {
      if (h->data != nullptr) static_cast<LoopMailbox*>(h->data)->Drain();
    });
  });
  if (rc != 0) return rc;
  async_.get()->data = this;
  std::lock_guard<std::mutex> lock(mu_);
  open_ = true;
  return 0;
}

void LoopMailbox::Post(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return;
  queue_.push_back(std::move(fn));
  uv_async_send(async_.get());
}

void LoopMailbox::Drain() {
  std::deque<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(queue_);
  }
  for (auto& fn : batch) fn();
}

void LoopMailbox::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_) return;
    open_ = false;
    queue_.clear();
  }
  async_.Close();
}

}  // namespace chord
