#include "node/runtime/signal_watcher.h"

#include <string>

namespace chord {

Status SignalWatcher::Watch(uv_loop_t* loop, int signum) {
  UvHandle<uv_signal_t> handle;
  int rc = handle.Init([loop](uv_signal_t* h) { return uv_signal_init(loop, h); });
  if (rc == 0) {
    handle.get()->data = this;
    rc = uv_signal_start(handle.get(), &SignalWatcher::OnSignal, signum);
  }
  if (rc < 0) {
    return Status::IoError("cannot watch signal " + std::to_string(signum) + ": " +
                           uv_strerror(rc));
  }
  handles_.push_back(std::move(handle));
  return Status::Ok();
}

void SignalWatcher::OnSignal(uv_signal_t* handle, int signum) {
  auto* self = static_cast<SignalWatcher*>(handle->data);
  if (self != nullptr) self->on_signal_(signum);
}

}  // namespace chord
