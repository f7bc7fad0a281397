#include "node/runtime/metrics_server.h"

#include <algorithm>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "node/runtime/prometheus_text.h"
#include "node/runtime/tcp_listener.h"
#include "spdlog/spdlog.h"

namespace chord {

namespace {

// Size of the buffer one read lands in; reads are handled synchronously, so one per thread.
constexpr size_t kReadBufferBytes = 16 << 10;
// Longest accepted method name.
constexpr size_t kMaxMethodBytes = 16;
// How long a client may keep the connection open after its answer was written.
constexpr uint64_t kLingerMs = 1'000;
// Longest interval between two deadline checks.
constexpr uint64_t kMaxSweepMs = 1'000;

bool IsTokenChar(char c) {
  if (c >= 'a' && c <= 'z') return true;
  if (c >= 'A' && c <= 'Z') return true;
  if (c >= '0' && c <= '9') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

// Whether `partial`, the start of a request line not yet ended by a line feed, can still
// become a valid one.
bool PlausibleRequestLinePrefix(std::string_view partial) {
  const size_t space = partial.find(' ');
  const std::string_view method = partial.substr(0, space);
  if (method.size() > kMaxMethodBytes) return false;
  if (!std::all_of(method.begin(), method.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    return false;
  }
  if (space == std::string_view::npos) return true;
  const std::string_view rest = partial.substr(space + 1);
  // A carriage return may only end the line, which has not come yet: allow it as the last.
  for (size_t i = 0; i < rest.size(); ++i) {
    if (IsControl(rest[i]) && !(rest[i] == '\r' && i + 1 == rest.size())) return false;
  }
  return true;
}

struct RequestLine {
  std::string_view method;
  std::string_view target;
};

// "METHOD SP TARGET SP HTTP/1.x" (without the line end); false for anything else.
bool ParseRequestLine(std::string_view line, RequestLine* out) {
  const size_t first = line.find(' ');
  const size_t last = line.rfind(' ');
  if (first == std::string_view::npos || first == last) return false;
  const std::string_view method = line.substr(0, first);
  const std::string_view target = line.substr(first + 1, last - first - 1);
  const std::string_view version = line.substr(last + 1);
  if (method.empty() || method.size() > kMaxMethodBytes) return false;
  if (!std::all_of(method.begin(), method.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    return false;
  }
  if (target.empty() || target.find(' ') != std::string_view::npos) return false;
  if (std::any_of(target.begin(), target.end(), IsControl)) return false;
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return false;
  out->method = method;
  out->target = target;
  return true;
}

// "Name: value" with a token name and no control characters but tabs in the value.
bool ValidHeaderLine(std::string_view line) {
  const size_t colon = line.find(':');
  if (colon == 0 || colon == std::string_view::npos) return false;
  const std::string_view name = line.substr(0, colon);
  if (!std::all_of(name.begin(), name.end(), IsTokenChar)) return false;
  const std::string_view value = line.substr(colon + 1);
  return std::none_of(value.begin(), value.end(), [](char c) { return IsControl(c) && c != '\t'; });
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
  Connection(MetricsServer* server, uint64_t id, uint64_t deadline_ms)
      : server_(server), id_(id), deadline_ms_(deadline_ms) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Accepts the pending connection of `listener` and starts reading. False on failure, with
  // the reason in *error (the socket, if any, is closed by the destructor).
  bool Accept(uv_stream_t* listener, std::string* error) {
    int rc = tcp_.Init([listener](uv_tcp_t* h) { return uv_tcp_init(listener->loop, h); });
    if (rc == 0) rc = uv_accept(listener, Stream());
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

  uint64_t deadline_ms() const { return deadline_ms_; }

 private:
  enum class Parse { kNeedMore, kComplete, kGarbage };

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
    received_ += n;
    if (responded_) {
      // Waiting for the client to close; what it still sends is ignored, within bounds.
      if (received_ > 2 * server_->options_.max_request_bytes) server_->Drop(id_);
      return;
    }
    request_.append(buf->base, n);
    switch (ParseRequest()) {
      case Parse::kNeedMore:
        if (request_.size() > server_->options_.max_request_bytes) {
          spdlog::debug("metrics: closing a connection whose request exceeds {} bytes",
                        server_->options_.max_request_bytes);
          server_->Drop(id_);
        }
        return;
      case Parse::kGarbage:
        spdlog::debug("metrics: closing a connection that sent something other than HTTP");
        server_->Drop(id_);
        return;
      case Parse::kComplete:
        Respond();
        return;
    }
  }

  Parse ParseRequest() {
    while (true) {
      const size_t nl = request_.find('\n', line_start_);
      if (nl == std::string::npos) {
        if (!have_request_line_ &&
            !PlausibleRequestLinePrefix(std::string_view(request_).substr(line_start_))) {
          return Parse::kGarbage;
        }
        return Parse::kNeedMore;
      }
      if (nl - line_start_ > server_->options_.max_request_bytes) return Parse::kGarbage;
      std::string_view line(request_.data() + line_start_, nl - line_start_);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      line_start_ = nl + 1;
      if (!have_request_line_) {
        RequestLine parsed;
        if (!ParseRequestLine(line, &parsed)) return Parse::kGarbage;
        method_ = std::string(parsed.method);
        target_ = std::string(parsed.target);
        have_request_line_ = true;
        continue;
      }
      if (line.empty()) return Parse::kComplete;
      if (!ValidHeaderLine(line)) return Parse::kGarbage;
    }
  }

  void Respond() {
    responded_ = true;
    request_.clear();
    request_.shrink_to_fit();
    const bool head = method_ == "HEAD";
    const std::string_view path = std::string_view(target_).substr(0, target_.find('?'));
    int code = 200;
    std::string_view reason = "OK";
    std::string content_type(kPrometheusContentType);
    std::string extra_headers;
    std::string body;
    if (method_ != "GET" && !head) {
      code = 405;
      reason = "Method Not Allowed";
      content_type = "text/plain; charset=utf-8";
      extra_headers = "Allow: GET, HEAD\r\n";
      body = "Only GET and HEAD are supported; metrics are at GET /metrics.\n";
    } else if (path != "/metrics") {
      code = 404;
      reason = "Not Found";
      content_type = "text/plain; charset=utf-8";
      body = "Not found; metrics are at /metrics.\n";
    } else {
      body = server_->render_();
    }
    std::string response = "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) +
                           "\r\nContent-Type: " + content_type +
                           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
                           extra_headers + "Connection: close\r\n\r\n";
    if (!head) response += body;

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
  uint64_t deadline_ms_;
  UvHandle<uv_tcp_t> tcp_;
  std::string request_;
  size_t line_start_ = 0;  // where the next unparsed line of request_ begins
  size_t received_ = 0;
  bool have_request_line_ = false;
  bool responded_ = false;
  std::string method_;
  std::string target_;
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
  const uint64_t every_ms =
      std::clamp<uint64_t>(options_.request_timeout_ms / 4, uint64_t{1}, kMaxSweepMs);
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
  connections.clear();  // closes every socket
}

void MetricsServer::OnAccept(uv_stream_t* server) {
  const uint64_t id = next_id_++;
  auto conn = std::make_unique<Connection>(this, id, uv_now(loop_) + options_.request_timeout_ms);
  std::string error;
  if (!conn->Accept(server, &error)) {
    spdlog::warn("metrics: {}", error);
    return;
  }
  if (closed_ || connections_.size() >= options_.max_connections) {
    spdlog::debug("metrics: refused a connection: already {} open", connections_.size());
    return;  // accepted, and closed by the destructor
  }
  connections_.emplace(id, std::move(conn));
}

void MetricsServer::Drop(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  std::unique_ptr<Connection> conn = std::move(it->second);
  connections_.erase(it);
  // `conn` goes out of scope here and closes the socket.
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
