// LoopMailbox: how the HTTP API's worker threads (ring walks, watch long polls) hand results
// back to the loop thread. Post() may be called from any thread; the posted functions run on
// the loop, in order, until Close(). After Close() posts are dropped. Construct, Open() and
// Close() on the loop thread.
#ifndef CHORD_NODE_HTTP_LOOP_MAILBOX_H_
#define CHORD_NODE_HTTP_LOOP_MAILBOX_H_

#include <uv.h>

#include <deque>
#include <functional>
#include <mutex>

#include "node/runtime/uv_handle.h"

namespace chord {

class LoopMailbox {
 public:
  LoopMailbox() = default;
  LoopMailbox(const LoopMailbox&) = delete;
  LoopMailbox& operator=(const LoopMailbox&) = delete;

  // Libuv's error code (0 on success).
  int Open(uv_loop_t* loop);
  // Any thread.
  void Post(std::function<void()> fn);
  void Close();

 private:
  void Drain();

  UvHandle<uv_async_t> async_;
  std::mutex mu_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool open_ = false;                        // guarded by mu_
};

}  // namespace chord

#endif  // CHORD_NODE_HTTP_LOOP_MAILBOX_H_
