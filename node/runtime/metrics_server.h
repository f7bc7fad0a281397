// MetricsServer: a minimal HTTP/1.1 server on a libuv loop for Prometheus scrapes. `GET
// /metrics` (or HEAD) is answered 200 with the text the render callback returns; any other
// path 404, any other method 405, a request head larger than max_request_bytes 431 (however
// the head was split into reads). Every response ends with `Connection: close`: one request
// per connection. Anything that is not an HTTP/1.x request head (ParseHttpRequestHead), a
// head not complete within head_timeout_ms, or a connection not answered within
// request_timeout_ms is closed without an answer. At most max_connections are open at once,
// and at most max_connections_per_host from one source address (IPv6: one /64), so that one
// host opening connections it never completes cannot keep the scrapes of others out; more
// are accepted and closed at once.
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
    uint64_t head_timeout_ms = 3'000;      // from accept to the end of the request head
    uint64_t request_timeout_ms = 10'000;  // from accept to the answer written
    size_t max_connections = 64;
    size_t max_connections_per_host = 8;
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
  // The connections open from `host` (as in log lines: "127.0.0.1", IPv6 "2001:db8::/64").
  size_t connection_count(const std::string& host) const;

 private:
  class Connection;

  void OnAccept(uv_stream_t* server);
  // Forgets (and thereby closes) connection `id`.
  void Drop(uint64_t id);
  // How many connections MetricsServer holds from each source host; entries at zero removed.
  void CountHost(const std::string& host, int delta);
  // Closes connections past their deadline.
  void Sweep();

  uv_loop_t* loop_;
  RenderFn render_;
  Options options_;
  TcpListener* listener_ = nullptr;  // deletes itself once closed
  UvHandle<uv_timer_t> sweep_timer_;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  std::unordered_map<std::string, size_t> per_host_;  // open connections by source host
  uint64_t next_id_ = 1;
  bool closed_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_METRICS_SERVER_H_
