#include "node/runtime/tcp_listener.h"

#include <utility>

namespace chord {

namespace {

constexpr int kBacklog = 511;

Status ListenError(const std::string& name, int rc) {
  std::string advice = "choose another address";
  if (rc == UV_EADDRINUSE) {
    advice = "choose another port or stop the process that uses it";
  } else if (rc == UV_EADDRNOTAVAIL) {
    advice = "use an address of this machine, such as 127.0.0.1";
  } else if (rc == UV_EACCES) {
    advice = "use a port above 1023";
  }
  return Status::Unavailable("cannot listen on " + name + ": " + uv_strerror(rc) + "; " + advice +
                             ".");
}

}  // namespace

TcpListener::TcpListener(AcceptFn on_accept, ErrorFn on_error)
    : tcp_{}, on_accept_(std::move(on_accept)), on_error_(std::move(on_error)) {
  tcp_.data = this;
}

Result<TcpListener*> TcpListener::Listen(uv_loop_t* loop, const sockaddr_in& addr,
                                         const std::string& name, AcceptFn on_accept,
                                         ErrorFn on_error) {
  auto* listener = new TcpListener(std::move(on_accept), std::move(on_error));
  int rc = uv_tcp_init(loop, &listener->tcp_);
  if (rc < 0) {
    delete listener;  // never registered with the loop
    return ListenError(name, rc);
  }
  rc = uv_tcp_bind(&listener->tcp_, reinterpret_cast<const sockaddr*>(&addr), 0);
  if (rc == 0) {
    rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener->tcp_), kBacklog,
                   &TcpListener::OnConnection);
  }
  if (rc < 0) {
    listener->Close();
    return ListenError(name, rc);
  }
  return listener;
}

void TcpListener::Close() {
  if (closing_) return;
  closing_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &TcpListener::OnClosed);
}

void TcpListener::OnConnection(uv_stream_t* server, int status) {
  auto* self = static_cast<TcpListener*>(server->data);
  if (self->closing_) return;
  if (status < 0) {
    if (self->on_error_) self->on_error_(std::string("accept failed: ") + uv_strerror(status));
    return;
  }
  self->on_accept_(server);
}

void TcpListener::OnClosed(uv_handle_t* handle) { delete static_cast<TcpListener*>(handle->data); }

}  // namespace chord
