// TcpListener: a listening IPv4 TCP socket. For every incoming connection it calls the accept
// callback with the server stream, which must uv_accept it (TcpConnection::Accept) or refuse
// it. Lifetime: created on the heap by Listen and deleted by itself in its uv close callback
// after Close(), so Close() is safe from inside the accept callback. Loop thread only.
#ifndef CHORD_NODE_RUNTIME_TCP_LISTENER_H_
#define CHORD_NODE_RUNTIME_TCP_LISTENER_H_

#include <netinet/in.h>
#include <uv.h>

#include <functional>
#include <string>

#include "protocol/base/status.h"

namespace chord {

class TcpListener {
 public:
  using AcceptFn = std::function<void(uv_stream_t* server)>;
  using ErrorFn = std::function<void(const std::string& error)>;

  // Binds `addr` and starts listening. `name` is the address as the user wrote it, for error
  // messages. Unavailable when the port cannot be bound (for example, already in use).
  static Result<TcpListener*> Listen(uv_loop_t* loop, const sockaddr_in& addr,
                                     const std::string& name, AcceptFn on_accept, ErrorFn on_error);

  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  // Stops listening (idempotent); the object is deleted on a later loop iteration.
  void Close();

 private:
  TcpListener(AcceptFn on_accept, ErrorFn on_error);
  ~TcpListener() = default;

  static void OnConnection(uv_stream_t* server, int status);
  static void OnClosed(uv_handle_t* handle);

  uv_tcp_t tcp_;
  AcceptFn on_accept_;
  ErrorFn on_error_;
  bool closing_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_TCP_LISTENER_H_
