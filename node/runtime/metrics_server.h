// MetricsServer: a minimal HTTP/1.1 server on a libuv loop for Prometheus scrapes. `GET
// /metrics` (or HEAD) is answered 200 with the text the render callback returns; any other
// path 404, any other method 405. Every response ends with `Connection: close`: one request
// per connection. A request line that is not HTTP, a request head larger than
// max_request_bytes, or a connection that has not been answered within request_timeout_ms is
// closed without an answer. At most max_connections are open at once; more are accepted and
// closed at once.
//
// Usage: construct, Listen(), Close() (idempotent; also done by the destructor, which must
// run while the loop is still open, or after Close() and a run of the loop). Handles are
// closed exactly once and freed in their close callbacks. Loop thread only.
#ifndef CHORD_NODE_RUNTIME_METRICS_SERVER_H_
#define CHORD_NODE_RUNTIME_METRICS_SERVER_H_

#include <netinet/in.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "node/runtime/uv_handle.h"
#include "protocol/base/status.h"

namespace chord {

class TcpListener;

class MetricsServer {
 public:
  struct Options {
    size_t max_request_bytes = 8 << 10;    // request line and headers
    uint64_t request_timeout_ms = 10'000;  // from accept to the answer written
    size_t max_connections = 64;
  };
  // The body of a 200 answer to GET /metrics.
  using RenderFn = std::function<std::string()>;

  MetricsServer(uv_loop_t* loop, RenderFn render, Options options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds `addr` and starts serving; `name` is the address as the user wrote it, for error
  // messages. Unavailable when the address cannot be bound. Call once.
  Status Listen(const sockaddr_in& addr, const std::string& name);
  // Stops listening and closes every connection. Idempotent.
  void Close();

  size_t connection_count() const { return connections_.size(); }

 private:
  class Connection;

  void OnAccept(uv_stream_t* server);
  // Forgets (and thereby closes) connection `id`.
  void Drop(uint64_t id);
  // Closes connections past their deadline.
  void Sweep();

  uv_loop_t* loop_;
  RenderFn render_;
  Options options_;
  TcpListener* listener_ = nullptr;  // deletes itself once closed
  UvHandle<uv_timer_t> sweep_timer_;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  uint64_t next_id_ = 1;
  bool closed_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_METRICS_SERVER_H_
