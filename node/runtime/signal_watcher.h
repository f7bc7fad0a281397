// SignalWatcher: delivers POSIX signals (SIGTERM, SIGINT, ...) as calls on the loop thread,
// through one uv_signal_t per signal. Loop thread only.
#ifndef CHORD_NODE_RUNTIME_SIGNAL_WATCHER_H_
#define CHORD_NODE_RUNTIME_SIGNAL_WATCHER_H_

#include <uv.h>

#include <functional>
#include <utility>
#include <vector>

#include "node/runtime/uv_handle.h"
#include "protocol/base/status.h"

namespace chord {

class SignalWatcher {
 public:
  using SignalFn = std::function<void(int signum)>;

  explicit SignalWatcher(SignalFn on_signal) : on_signal_(std::move(on_signal)) {}
  ~SignalWatcher() { Close(); }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // Starts watching `signum` on `loop`.
  Status Watch(uv_loop_t* loop, int signum);
  // Stops watching every signal (idempotent). Safe from inside the signal callback.
  void Close() { handles_.clear(); }

 private:
  static void OnSignal(uv_signal_t* handle, int signum);

  SignalFn on_signal_;
  std::vector<UvHandle<uv_signal_t>> handles_;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_SIGNAL_WATCHER_H_
