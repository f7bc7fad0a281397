#include "node/runtime/metrics_server.h"

#include <algorithm>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "node/runtime/http_request_head.h"
#include "node/runtime/prometheus_text.h"
#include "node/runtime/tcp_listener.h"
#include "spdlog/spdlog.h"

namespace chord {

namespace {

// Size of the buffer one read lands in; reads are handled synchronously, so one per thread.
constexpr size_t kReadBufferBytes = 16 << 10;
// How long a client may keep the connection open after its answer was written.
constexpr uint64_t kLingerMs = 1'000;
// Longest interval between two deadline checks.
constexpr uint64_t kMaxSweepMs = 1'000;

// The source host of a connection, as per-host limits count it and log lines show it: the
// IPv4 address, the /64 prefix of an IPv6 address (one host commonly holds a whole /64).
std::string SourceHost(const sockaddr_storage& peer) {
  char text[INET6_ADDRSTRLEN] = {};
  if (peer.ss_family == AF_INET) {
    if (uv_ip4_name(reinterpret_cast<const sockaddr_in*>(&peer), text, sizeof(text)) != 0) {
      return "?";
    }
    return text;
  }
  if (peer.ss_family == AF_INET6) {
    sockaddr_in6 prefix = *reinterpret_cast<const sockaddr_in6*>(&peer);
    std::fill(prefix.sin6_addr.s6_addr + 8, prefix.sin6_addr.s6_addr + 16, uint8_t{0});
    if (uv_ip6_name(&prefix, text, sizeof(text)) != 0) return "?";
    return std::string(text) + "/64";
  }
  return "?";
}

struct WriteRequest {
  uv_write_t req;
  std::string data;  // kept alive until the write callback
};

}  // namespace

// One accepted HTTP connection: reads one request head, writes one answer, then shuts down
// its side and waits (briefly) for the client to close. Owned by MetricsServer::connections_;
// destroying it closes the socket.
class MetricsServer::Connection {
 public:
  Connection(MetricsServer* server, uint64_t id, uint64_t now_ms)
      : server_(server),
        id_(id),
        request_deadline_ms_(now_ms + server->options_.request_timeout_ms),
        deadline_ms_(std::min(request_deadline_ms_, now_ms + server->options_.head_timeout_ms)) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Accepts the pending connection of `listener`, learns its source host and starts reading.
  // False on failure, with the reason in *error (the socket, if any, is closed by the
  // destructor).
  bool Accept(uv_stream_t* listener, std::string* error) {
    int rc = tcp_.Init([listener](uv_tcp_t* h) { return uv_tcp_init(listener->loop, h); });
    if (rc == 0) rc = uv_accept(listener, Stream());
    if (rc == 0) {
      sockaddr_storage peer{};
      int len = sizeof(peer);
      rc = uv_tcp_getpeername(tcp_.get(), reinterpret_cast<sockaddr*>(&peer), &len);
      if (rc == 0) host_ = SourceHost(peer);
    }
    if (rc == 0) {
      tcp_.get()->data = this;
      rc = uv_read_start(Stream(), &Connection::OnAlloc, &Connection::OnRead);
    }
    if (rc < 0) {
      *error = std::string("cannot accept a metrics connection: ") + uv_strerror(rc);
      return false;
    }
    return true;
  }

  const std::string& host() const { return host_; }
  // When the connection is closed unless it has finished by then: its head is due earlier than
  // its answer.
  uint64_t deadline_ms() const { return deadline_ms_; }

 private:
  uv_stream_t* Stream() { return reinterpret_cast<uv_stream_t*>(tcp_.get()); }

  static void OnAlloc(uv_handle_t* /*handle*/, size_t /*suggested*/, uv_buf_t* buf) {
    thread_local char storage[kReadBufferBytes];
    *buf = uv_buf_init(storage, sizeof(storage));
  }

  static void OnRead(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
    if (auto* conn = static_cast<Connection*>(stream->data)) conn->HandleRead(nread, buf);
  }

  // May destroy this connection (through Drop); nothing touches it after a Drop.
  void HandleRead(ssize_t nread, const uv_buf_t* buf) {
    if (nread == 0) return;  // EAGAIN
    if (nread < 0) {         // end of stream or error: nothing more to do for this client
      server_->Drop(id_);
      return;
    }
    const size_t n = static_cast<size_t>(nread);
    const size_t max_bytes = server_->options_.max_request_bytes;
    if (responded_) {
      // Waiting for the client to close; what it still sends is ignored, within bounds.
      drained_ += n;
      if (drained_ > 2 * max_bytes) server_->Drop(id_);
      return;
    }
    // The parser decides by the first max_bytes + 1 bytes at the latest: keep no more.
    request_.append(buf->base, std::min(n, max_bytes + 1 - std::min(request_.size(), max_bytes)));
    const HttpRequestHead head = ParseHttpRequestHead(request_, max_bytes, &scan_);
    switch (head.status) {
      case HttpHeadStatus::kNeedMore:
        return;
      case HttpHeadStatus::kBadRequest:
        spdlog::debug("metrics: closing a connection from {} that sent no HTTP request: {}", host_,
                      head.error);
        server_->Drop(id_);
        return;
      case HttpHeadStatus::kTooLarge:
        spdlog::debug("metrics: answering 431 to {}: the request head exceeds {} bytes", host_,
                      max_bytes);
        Respond(431, "Request Header Fields Too Large", "text/plain; charset=utf-8", "",
                "The request head exceeds " + std::to_string(max_bytes) + " bytes.\n",
                /*with_body=*/true);
        return;
      case HttpHeadStatus::kComplete:
        RespondTo(head.method, head.target);
        return;
    }
  }

  void RespondTo(std::string_view method, std::string_view target) {
    const bool head = method == "HEAD";
    const std::string_view path = target.substr(0, target.find('?'));
    if (method != "GET" && !head) {
      Respond(405, "Method Not Allowed", "text/plain; charset=utf-8", "Allow: GET, HEAD\r\n",
              "Only GET and HEAD are supported; metrics are at GET /metrics.\n", true);
    } else if (path != "/metrics") {
      Respond(404, "Not Found", "text/plain; charset=utf-8", "",
              "Not found; metrics are at /metrics.\n", !head);
    } else {
      Respond(200, "OK", std::string(kPrometheusContentType), "", server_->render_(), !head);
    }
  }

  // Writes the one answer of this connection (the body only `with_body`; its length always),
  // then shuts down. May destroy this connection.
  void Respond(int code, std::string_view reason, const std::string& content_type,
               std::string_view extra_headers, const std::string& body, bool with_body) {
    responded_ = true;
    request_.clear();
    request_.shrink_to_fit();
    deadline_ms_ = request_deadline_ms_;
    std::string response = "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) +
                           "\r\nContent-Type: " + content_type +
                           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
                           std::string(extra_headers) + "Connection: close\r\n\r\n";
    if (with_body) response += body;

    auto* write = new WriteRequest{{}, std::move(response)};
    write->req.data = write;
    uv_buf_t buf = uv_buf_init(write->data.data(), static_cast<unsigned>(write->data.size()));
    const int rc = uv_write(&write->req, Stream(), &buf, 1, &Connection::OnWrite);
    if (rc < 0) {
      delete write;
      server_->Drop(id_);
    }
  }

  static void OnWrite(uv_write_t* req, int status) {
    std::unique_ptr<WriteRequest> write(static_cast<WriteRequest*>(req->data));
    auto* conn = static_cast<Connection*>(req->handle->data);
    if (conn == nullptr || status == UV_ECANCELED) return;  // closed meanwhile
    conn->HandleWritten(status);
  }

  void HandleWritten(int status) {
    if (status < 0) {
      server_->Drop(id_);
      return;
    }
    // Send our FIN, then give the client a moment to read and close its side, so that the
    // answer is not cut off by a reset.
    deadline_ms_ = std::min(deadline_ms_, uv_now(server_->loop_) + kLingerMs);
    auto* shutdown = new uv_shutdown_t{};
    const int rc = uv_shutdown(shutdown, Stream(), &Connection::OnShutdown);
    if (rc < 0) {
      delete shutdown;
      server_->Drop(id_);
    }
  }

  static void OnShutdown(uv_shutdown_t* req, int status) {
    std::unique_ptr<uv_shutdown_t> shutdown(req);
    auto* conn = static_cast<Connection*>(req->handle->data);
    if (conn == nullptr || status == UV_ECANCELED) return;
    if (status < 0) conn->server_->Drop(conn->id_);
  }

  MetricsServer* server_;
  const uint64_t id_;
  const uint64_t request_deadline_ms_;
  uint64_t deadline_ms_;
  UvHandle<uv_tcp_t> tcp_;
  std::string host_ = "?";
  std::string request_;  // the head so far (at most max_request_bytes + 1 bytes)
  HttpHeadScan scan_;    // how far request_ has been parsed
  size_t drained_ = 0;   // bytes read after the answer
  bool responded_ = false;
};

MetricsServer::MetricsServer(uv_loop_t* loop, RenderFn render, Options options)
    : loop_(loop), render_(std::move(render)), options_(options) {}

MetricsServer::~MetricsServer() { Close(); }

Status MetricsServer::Listen(const sockaddr_in& addr, const std::string& name) {
  if (closed_ || listener_ != nullptr) {
    return Status::InvalidArgument("the metrics server was already started");
  }
  const int rc = sweep_timer_.Init([this](uv_timer_t* h) { return uv_timer_init(loop_, h); });
  if (rc < 0) {
    return Status::IoError(std::string("cannot create the metrics timer: ") + uv_strerror(rc));
  }
  sweep_timer_.get()->data = this;
  const uint64_t shortest_ms = std::min(options_.head_timeout_ms, options_.request_timeout_ms);
  const uint64_t every_ms = std::clamp<uint64_t>(shortest_ms / 4, uint64_t{1}, kMaxSweepMs);
  uv_timer_start(
      sweep_timer_.get(),
      [](uv_timer_t* h) {
        if (auto* self = static_cast<MetricsServer*>(h->data)) self->Sweep();
      },
      every_ms, every_ms);
  auto listener = TcpListener::Listen(
      loop_, addr, name, [this](uv_stream_t* server) { OnAccept(server); },
      [](const std::string& error) { spdlog::warn("metrics: {}", error); });
  if (!listener.ok()) {
    sweep_timer_.Close();
    return listener.status();
  }
  listener_ = *listener;
  return Status::Ok();
}

void MetricsServer::Close() {
  if (closed_) return;
  closed_ = true;
  if (listener_ != nullptr) {
    listener_->Close();
    listener_ = nullptr;
  }
  sweep_timer_.Close();
  auto connections = std::move(connections_);
  connections_.clear();
  per_host_.clear();
  connections.clear();  // closes every socket
}

size_t MetricsServer::connection_count(const std::string& host) const {
  auto it = per_host_.find(host);
  return it == per_host_.end() ? 0 : it->second;
}

void MetricsServer::OnAccept(uv_stream_t* server) {
  const uint64_t id = next_id_++;
  auto conn = std::make_unique<Connection>(this, id, uv_now(loop_));
  std::string error;
  if (!conn->Accept(server, &error)) {
    spdlog::warn("metrics: {}", error);
    return;
  }
  if (closed_ || connections_.size() >= options_.max_connections) {
    spdlog::debug("metrics: refused a connection from {}: already {} open", conn->host(),
                  connections_.size());
    return;  // accepted, and closed by the destructor
  }
  if (connection_count(conn->host()) >= options_.max_connections_per_host) {
    spdlog::debug("metrics: refused a connection from {}: already {} open from there", conn->host(),
                  connection_count(conn->host()));
    return;
  }
  CountHost(conn->host(), +1);
  connections_.emplace(id, std::move(conn));
}

void MetricsServer::Drop(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  std::unique_ptr<Connection> conn = std::move(it->second);
  connections_.erase(it);
  CountHost(conn->host(), -1);
  // `conn` goes out of scope here and closes the socket.
}

void MetricsServer::CountHost(const std::string& host, int delta) {
  if (delta > 0) {
    ++per_host_[host];
    return;
  }
  auto it = per_host_.find(host);
  if (it == per_host_.end()) return;
  if (--it->second == 0) per_host_.erase(it);
}

void MetricsServer::Sweep() {
  const uint64_t now = uv_now(loop_);
  std::vector<uint64_t> expired;
  for (const auto& [id, conn] : connections_) {
    if (now >= conn->deadline_ms()) expired.push_back(id);
  }
  for (uint64_t id : expired) Drop(id);
}

}  // namespace chord
