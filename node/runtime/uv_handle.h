// UvHandle<H>: owns one heap-allocated libuv handle (uv_timer_t, uv_signal_t, ...). The handle
// is closed exactly once, by Close() or the destructor, and its memory is freed in the close
// callback, so libuv never sees a dangling handle. Close() clears handle->data, so callbacks
// that libuv still delivers for a closing handle can tell that their owner is gone.
// Loop thread only.
#ifndef CHORD_NODE_RUNTIME_UV_HANDLE_H_
#define CHORD_NODE_RUNTIME_UV_HANDLE_H_

#include <uv.h>

#include <utility>

namespace chord {

template <typename H>
class UvHandle {
 public:
  UvHandle() = default;
  ~UvHandle() { Close(); }

  UvHandle(const UvHandle&) = delete;
  UvHandle& operator=(const UvHandle&) = delete;
  UvHandle(UvHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  UvHandle& operator=(UvHandle&& other) noexcept {
    if (this != &other) {
      Close();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }

  // Allocates a handle and initializes it with `init(handle)` (e.g. a lambda calling
  // uv_timer_init). Returns the libuv error code; on failure nothing is kept. A handle held
  // before is closed first.
  template <typename InitFn>
  int Init(InitFn init) {
    Close();
    H* handle = new H{};
    const int rc = init(handle);
    if (rc < 0) {
      delete handle;  // never registered with the loop: nothing to close
      return rc;
    }
    handle_ = handle;
    return 0;
  }

  H* get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }

  // Starts closing the handle; its memory is freed once the loop has run the close callback.
  void Close() {
    if (handle_ == nullptr) return;
    H* handle = std::exchange(handle_, nullptr);
    handle->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(handle),
             [](uv_handle_t* h) { delete reinterpret_cast<H*>(h); });
  }

 private:
  H* handle_ = nullptr;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_UV_HANDLE_H_
