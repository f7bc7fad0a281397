// HttpServer: HTTP/1.1 (and HTTP/2 over TLS) on a libuv loop, served by the H2O library
// (libh2o, built on libuv: its parser, its keep-alive and timeouts, its TLS record layer).
// It knows nothing of chord's routes: every request that arrives complete (head and body,
// the body bounded by Options::max_body_bytes, larger ones answered 413 by H2O) goes to the
// HttpHandler as an HttpRequest with an id, and the handler answers by that id, at once or
// later: Respond(), or a stream (StartStream, StreamWrite, StreamEnd) for server-sent events.
// When the client goes away first the handler hears OnGone(id) and later answers are dropped.
//
// With TLS (Options::tls set) it speaks HTTPS only and requires a client certificate that
// chains to the cluster CA; the certificate's chord identity (admin, writer, reader, member)
// becomes HttpRequest::sender. Without TLS every caller is Sender{} (unchecked), as on the
// binary protocol in insecure mode.
//
// Limits: at most max_connections at once and max_connections_per_host from one source
// address (more are closed at once), so one host cannot keep the others out.
//
// Usage: construct, Listen(), Close() (idempotent; the destructor requires Close() and a run
// of the loop before it, so that the connections' close callbacks have run). Loop thread only.
#ifndef CHORD_NODE_HTTP_HTTP_SERVER_H_
#define CHORD_NODE_HTTP_HTTP_SERVER_H_

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "node/runtime/uv_handle.h"
#include "protocol/base/status.h"
#include "protocol/sender.h"
#include "protocol/tls_context.h"

namespace chord {

// One request, complete.
struct HttpRequest {
  uint64_t id = 0;
  std::string method;  // "GET", "PUT", ...
  std::string target;  // the raw request target: path and query, still percent-encoded
  std::string body;
  std::string content_type;
  std::string accept;
  std::string last_event_id;  // the Last-Event-ID header of an EventSource reconnect
  std::string host;           // the Host header (or HTTP/2 :authority)
  std::string origin;         // the Origin header a browser sends on cross-origin requests
  std::string peer_host;      // the client's address, without the port
  Sender sender;              // who the client proved to be (Sender{} without TLS)
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  virtual void OnRequest(const HttpRequest& request) = 0;
  // The request's client went away (or the server closed) before it was answered or before
  // its stream ended; answers to `id` are ignored from now on.
  virtual void OnGone(uint64_t id) = 0;
};

class HttpServer {
 public:
  struct Options {
    size_t max_body_bytes = size_t{2} << 20;
    size_t max_connections = 1024;
    size_t max_connections_per_host = 256;
    uint64_t request_timeout_ms = 10'000;  // H2O's: a head or body that does not arrive
    TlsFiles tls;                          // empty: plain HTTP
  };

  HttpServer(uv_loop_t* loop, HttpHandler* handler, Options options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds `addr` and starts serving; `name` is the address as the user wrote it, for error
  // messages. InvalidArgument when the TLS files cannot be used, Unavailable when the address
  // cannot be bound. Call once.
  [[nodiscard]] Status Listen(const sockaddr_in& addr, const std::string& name);
  // Stops listening, ends every stream, answers what is pending 503, and asks H2O to close
  // its connections. Idempotent.
  void Close();

  // A complete answer. Ignored for an unknown id (gone or already answered).
  void Respond(uint64_t id, int status, const std::string& content_type, const std::string& body,
               const HttpHeaders& headers = {});
  // Starts a 200 answer of unknown length (chunked): false for an unknown id.
  bool StartStream(uint64_t id, const std::string& content_type, const HttpHeaders& headers = {});
  // Appends to a started stream; what the client has not taken yet is buffered. A client that
  // falls kMaxStreamBacklog bytes behind (one chunk is always taken when nothing waits) has its
  // stream ended, and the handler hears OnGone(id): an EventSource reconnects from the last
  // event it got.
  void StreamWrite(uint64_t id, std::string chunk);
  // Ends a started stream once what is buffered has been sent.
  void StreamEnd(uint64_t id);
  bool Alive(uint64_t id) const { return exchanges_.count(id) > 0; }
  // H2O 2.2 has no write timeout: closes every connection whose client has taken nothing of
  // what waits for it for `max_stall_ms`, be it an answer (its output stands unchanged in the
  // socket's queue) or a stream (its chunk in flight is not taken); the handlers of the
  // requests on it hear OnGone. Called periodically: a stall is seen to within the period.
  void CloseStalledConnections(uint64_t max_stall_ms);

  // The port the listener is bound to (after Listen(); 0 before): Listen() may ask for 0.
  uint16_t port() const { return port_; }
  size_t connection_count() const { return connections_; }
  size_t open_requests() const { return exchanges_.size(); }

  static constexpr size_t kMaxStreamBacklog = size_t{4} << 20;

  // H2O's state and callbacks; defined and used in http_server.cc only.
  struct Impl;

 private:
  struct Exchange;

  void OnAccept(int status);
  // Called by H2O (through the Impl's C callbacks).
  void OnH2oRequest(void* req);
  void OnDisposed(uint64_t id);
  void OnProceed(uint64_t id);
  void OnStop(uint64_t id);
  void OnConnectionClosed(const std::string& host);
  // Hands the buffered chunk of a stream to H2O, or its end.
  void Flush(Exchange& ex);
  void Forget(uint64_t id, bool tell_handler);
  void DisposeContext();
  // After Close(), once no connection is left: H2O's own handles stop keeping the loop alive.
  void ReleaseLoop();
  // After Close(): connections still open after kCloseGraceMs are shut down (H2O then closes
  // them); the context is disposed by the destructor, outside the loop's callbacks.
  void StartCloseTimer(uint64_t delay_ms);
  void OnCloseTimer();
  // Shuts the socket of request `req` (an h2o_req_t) down both ways; H2O closes it.
  void ShutDownConnectionOf(void* req);
  static constexpr uint64_t kCloseGraceMs = 300;
  static constexpr size_t kMaxHttp2Requests = 8;

  HttpHandler* handler_;
  Options options_;
  std::unique_ptr<Impl> impl_;
  UvHandle<uv_timer_t> close_timer_;
  std::unordered_map<uint64_t, std::unique_ptr<Exchange>> exchanges_;
  std::unordered_map<std::string, size_t> per_host_;
  size_t connections_ = 0;
  uint16_t port_ = 0;
  uint64_t next_id_ = 1;
  bool listening_ = false;
  bool closed_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_HTTP_HTTP_SERVER_H_
