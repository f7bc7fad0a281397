#include "node/http/http_server.h"

#include <arpa/inet.h>
#include <h2o.h>
#include <linux/sockios.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <uv.h>

#include <cstdlib>
#include <cstring>

namespace chord {

// H2O's state and the C callbacks that lead back into the server.
struct HttpServer::Impl {
  HttpServer* server = nullptr;
  uv_loop_t* loop = nullptr;
  h2o_globalconf_t config{};
  h2o_context_t context{};
  h2o_accept_ctx_t accept{};
  SSL_CTX* ssl = nullptr;
  uv_tcp_t* listener = nullptr;  // freed in its close callback
  bool context_ready = false;
  // Who each TLS connection's client certificate names, by H2O socket (from the verify
  // callback; forgotten when the socket closes).
  std::unordered_map<const h2o_socket_t*, PeerIdentity> identities;
  // The open sockets: their source hosts (for the limits) and libuv handles (for Close()).
  struct Open {
    std::string host;
    uv_tcp_t* tcp = nullptr;
    // Output waiting in the socket's queue at the last sweep, and since when it has stood
    // unchanged (0: nothing waited).
    size_t waiting_bytes = 0;
    uint64_t waiting_since_ms = 0;
  };
  std::unordered_map<h2o_socket_t*, Open> sockets;

  // The handler H2O calls for every request; `server` follows it in memory.
  struct RequestHandler {
    h2o_handler_t base;
    Impl* impl;
  };
  // What a request's pool holds for us: disposed together with the request.
  struct PoolLink {
    Impl* impl;
    uint64_t id;
  };
  // A stream's generator; H2O calls proceed when the last chunk was sent.
  struct Generator {
    h2o_generator_t base;
    Impl* impl;
    uint64_t id;
  };

  static int OnReq(h2o_handler_t* self, h2o_req_t* req) {
    reinterpret_cast<RequestHandler*>(self)->impl->server->OnH2oRequest(req);
    return 0;
  }
  static void OnPoolDispose(void* p) {
    auto* link = static_cast<PoolLink*>(p);
    link->impl->server->OnDisposed(link->id);
  }
  static void OnGenProceed(h2o_generator_t* g, h2o_req_t*) {
    auto* gen = reinterpret_cast<Generator*>(g);
    gen->impl->server->OnProceed(gen->id);
  }
  static void OnGenStop(h2o_generator_t* g, h2o_req_t*) {
    auto* gen = reinterpret_cast<Generator*>(g);
    gen->impl->server->OnStop(gen->id);
  }
};

// One request that has not been answered (or whose stream has not ended).
struct HttpServer::Exchange {
  h2o_req_t* req = nullptr;
  uint64_t in_flight_since_ms = 0;       // when the chunk now in flight was handed to H2O
  Impl::Generator* generator = nullptr;  // set once streaming
  std::string sending;                   // handed to H2O, waiting for proceed
  std::string queued;                    // not handed over yet
  bool in_flight = false;
  bool ending = false;
};

namespace {

// Data passed to each socket's close hook.
struct SocketHook {
  HttpServer::Impl* impl;
  h2o_socket_t* sock;
};

std::string HeaderValue(h2o_req_t* req, const h2o_token_t* token) {
  ssize_t i = h2o_find_header(&req->headers, token, -1);
  if (i < 0) return "";
  const h2o_iovec_t& v = req->headers.entries[i].value;
  return std::string(v.base, v.len);
}

std::string HeaderValue(h2o_req_t* req, const char* name) {
  ssize_t i = h2o_find_header_by_str(&req->headers, name, std::strlen(name), -1);
  if (i < 0) return "";
  const h2o_iovec_t& v = req->headers.entries[i].value;
  return std::string(v.base, v.len);
}

std::string PeerHost(h2o_req_t* req) {
  sockaddr_storage sa{};
  socklen_t len = req->conn->callbacks->get_peername(req->conn, reinterpret_cast<sockaddr*>(&sa));
  if (len == 0 || sa.ss_family != AF_INET) return "";
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&sa)->sin_addr, buf, sizeof(buf));
  return buf;
}

std::string SocketHost(uv_tcp_t* tcp) {
  sockaddr_storage sa{};
  int len = sizeof(sa);
  if (uv_tcp_getpeername(tcp, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return "?";
  if (sa.ss_family != AF_INET) return "?";
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&sa)->sin_addr, buf, sizeof(buf));
  return buf;
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return status < 400 ? "OK" : "Error";
  }
}

void AddHeaders(h2o_req_t* req, const std::string& content_type, const HttpHeaders& headers) {
  h2o_iovec_t ct = h2o_strdup(&req->pool, content_type.data(), content_type.size());
  h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, nullptr, ct.base, ct.len);
  for (const auto& [name, value] : headers) {
    h2o_iovec_t n = h2o_strdup(&req->pool, name.data(), name.size());
    h2o_iovec_t v = h2o_strdup(&req->pool, value.data(), value.size());
    h2o_add_header_by_str(&req->pool, &req->res.headers, n.base, n.len, 1, nullptr, v.base, v.len);
  }
}

// The ex_data index under which an SSL_CTX keeps its HttpServer::Impl.
int ImplIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

int VerifyClient(int preverify_ok, X509_STORE_CTX* store) {
  if (preverify_ok != 1 || X509_STORE_CTX_get_error_depth(store) != 0) return preverify_ok;
  SSL* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  if (ssl == nullptr) return 0;
  auto* impl =
      static_cast<HttpServer::Impl*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ImplIndex()));
  BIO* bio = SSL_get_rbio(ssl);
  // H2O's BIO carries its socket (lib/common/socket.c, setup_bio): that is how the identity
  // found here reaches the requests of this connection.
  auto* sock = bio == nullptr ? nullptr : static_cast<h2o_socket_t*>(BIO_get_data(bio));
  if (impl == nullptr || sock == nullptr) return 0;
  impl->identities[sock] = IdentityOf(X509_STORE_CTX_get_current_cert(store));
  return 1;
}

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

}  // namespace

HttpServer::HttpServer(uv_loop_t* loop, HttpHandler* handler, Options options)
    : handler_(handler), options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  impl_->server = this;
  impl_->loop = loop;
}

HttpServer::~HttpServer() {
  Close();
  DisposeContext();
  h2o_config_dispose(&impl_->config);
  if (impl_->ssl != nullptr) SSL_CTX_free(impl_->ssl);
}

Status HttpServer::Listen(const sockaddr_in& addr, const std::string& name) {
  if (!options_.tls.empty()) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr)
      return Status::InvalidArgument("cannot create a TLS context: " + OpenSslError());
    impl_->ssl = ctx;
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);  // as between members
    if (SSL_CTX_use_certificate_chain_file(ctx, options_.tls.cert.c_str()) != 1) {
      return Status::InvalidArgument("cannot use the certificate " + options_.tls.cert +
                                     " for HTTPS: " + OpenSslError());
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, options_.tls.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      return Status::InvalidArgument("cannot use the key " + options_.tls.key +
                                     " for HTTPS: " + OpenSslError());
    }
    if (SSL_CTX_load_verify_locations(ctx, options_.tls.ca.c_str(), nullptr) != 1) {
      return Status::InvalidArgument("cannot use the CA " + options_.tls.ca +
                                     " for HTTPS: " + OpenSslError());
    }
    // Identities come from the verify callback, which a resumed session skips: no resumption.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_ex_data(ctx, ImplIndex(), impl_.get());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, VerifyClient);
    h2o_ssl_register_alpn_protocols(ctx, h2o_http2_alpn_protocols);
  }

  h2o_config_init(&impl_->config);
  impl_->config.max_request_entity_size = options_.max_body_bytes;
  impl_->config.http1.req_timeout = options_.request_timeout_ms;
  // HTTP/2 only over TLS (ALPN), never upgraded from cleartext, and few requests at once per
  // connection: each may buffer a whole body before it is answered.
  impl_->config.http1.upgrade_to_http2 = 0;
  impl_->config.http2.max_concurrent_requests_per_connection = kMaxHttp2Requests;
  impl_->config.server_name = h2o_iovec_init(H2O_STRLIT("chord-node"));
  h2o_hostconf_t* host =
      h2o_config_register_host(&impl_->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
  h2o_pathconf_t* path = h2o_config_register_path(host, "/", 0);
  auto* handler = reinterpret_cast<Impl::RequestHandler*>(
      h2o_create_handler(path, sizeof(Impl::RequestHandler)));
  handler->base.on_req = &Impl::OnReq;
  handler->impl = impl_.get();
  h2o_context_init(&impl_->context, impl_->loop, &impl_->config);
  impl_->context_ready = true;
  // The context's message queue is a libuv async handle (its first member, in H2O 2.2); it
  // must not keep the loop running once every connection has closed.
  uv_unref(reinterpret_cast<uv_handle_t*>(impl_->context.queue));
  impl_->accept.ctx = &impl_->context;
  impl_->accept.hosts = impl_->config.hosts;
  impl_->accept.ssl_ctx = impl_->ssl;

  auto* tcp = new uv_tcp_t;
  uv_tcp_init(impl_->loop, tcp);
  tcp->data = this;
  impl_->listener = tcp;
  int rc = uv_tcp_bind(tcp, reinterpret_cast<const sockaddr*>(&addr), 0);
  if (rc == 0) {
    rc = uv_listen(reinterpret_cast<uv_stream_t*>(tcp), 128, [](uv_stream_t* server, int status) {
      static_cast<HttpServer*>(server->data)->OnAccept(status);
    });
  }
  if (rc != 0) {
    return Status::Unavailable("cannot listen on " + name + ": " + uv_strerror(rc) +
                               "; choose a free port");
  }
  sockaddr_in bound{};
  int len = sizeof(bound);
  if (uv_tcp_getsockname(tcp, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
    port_ = ntohs(bound.sin_port);
  }
  listening_ = true;
  return Status::Ok();
}

void HttpServer::OnAccept(int status) {
  if (status != 0 || closed_) return;
  auto* conn = static_cast<uv_tcp_t*>(std::malloc(sizeof(uv_tcp_t)));
  uv_tcp_init(impl_->loop, conn);
  if (uv_accept(reinterpret_cast<uv_stream_t*>(impl_->listener),
                reinterpret_cast<uv_stream_t*>(conn)) != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(conn), [](uv_handle_t* h) { std::free(h); });
    return;
  }
  const std::string host = SocketHost(conn);
  auto& from_host = per_host_[host];
  if (connections_ >= options_.max_connections || from_host >= options_.max_connections_per_host) {
    if (from_host == 0) per_host_.erase(host);
    uv_close(reinterpret_cast<uv_handle_t*>(conn), [](uv_handle_t* h) { std::free(h); });
    return;
  }
  ++from_host;
  ++connections_;
  h2o_socket_t* sock = h2o_uv_socket_create(reinterpret_cast<uv_stream_t*>(conn),
                                            [](uv_handle_t* h) { std::free(h); });
  impl_->sockets[sock] = Impl::Open{host, conn};
  auto* hook = new SocketHook{impl_.get(), sock};
  sock->on_close.cb = [](void* data) {
    auto* hook = static_cast<SocketHook*>(data);
    Impl* impl = hook->impl;
    auto it = impl->sockets.find(hook->sock);
    if (it != impl->sockets.end()) {
      const std::string host = it->second.host;
      impl->sockets.erase(it);
      impl->identities.erase(hook->sock);
      impl->server->OnConnectionClosed(host);
    }
    delete hook;
  };
  sock->on_close.data = hook;
  h2o_accept(&impl_->accept, sock);
}

void HttpServer::OnConnectionClosed(const std::string& host) {
  if (connections_ > 0) --connections_;
  auto it = per_host_.find(host);
  if (it != per_host_.end() && --it->second == 0) per_host_.erase(it);
  if (closed_ && impl_->sockets.empty()) ReleaseLoop();
}

void HttpServer::ReleaseLoop() {
  if (!impl_->context_ready) return;
  // H2O's timeouts are libuv timers that stay armed until they next fire (up to a request
  // timeout away) even with nothing left to time: once no connection is left they must not
  // keep the loop running either.
  h2o_context_t& c = impl_->context;
  for (h2o_timeout_t* t : {&c.zero_timeout, &c.one_sec_timeout, &c.hundred_ms_timeout,
                           &c.handshake_timeout, &c.http1.req_timeout, &c.http2.idle_timeout,
                           &c.http2.graceful_shutdown_timeout, &c.proxy.io_timeout}) {
    uv_unref(reinterpret_cast<uv_handle_t*>(&t->_backend.timer));
  }
}

void HttpServer::StartCloseTimer(uint64_t delay_ms) {
  if (close_timer_.Init([this](uv_timer_t* t) { return uv_timer_init(impl_->loop, t); }) != 0) {
    return;
  }
  close_timer_.get()->data = this;
  uv_timer_start(
      close_timer_.get(),
      [](uv_timer_t* t) {
        auto* self = static_cast<HttpServer*>(t->data);
        if (self != nullptr) self->OnCloseTimer();
      },
      delay_ms, 0);
}

void HttpServer::OnCloseTimer() {
  close_timer_.Close();
  // Connections H2O keeps open after the grace (idle keep-alive ones: H2O 2.2 closes those
  // only at their request timeout; streams whose client stopped reading) fail their next read
  // or write and are closed by H2O itself.
  for (const auto& [sock, open] : impl_->sockets) {
    uv_os_fd_t fd;
    if (uv_fileno(reinterpret_cast<uv_handle_t*>(open.tcp), &fd) == 0) ::shutdown(fd, SHUT_RDWR);
  }
}

void HttpServer::ShutDownConnectionOf(void* raw) {
  auto* req = static_cast<h2o_req_t*>(raw);
  if (req->conn->callbacks->get_socket == nullptr) return;
  h2o_socket_t* sock = req->conn->callbacks->get_socket(req->conn);
  auto it = impl_->sockets.find(sock);
  if (it == impl_->sockets.end()) return;
  uv_os_fd_t fd;
  if (uv_fileno(reinterpret_cast<uv_handle_t*>(it->second.tcp), &fd) == 0) {
    ::shutdown(fd, SHUT_RDWR);
  }
}

void HttpServer::CloseStalledConnections(uint64_t max_stall_ms) {
  const uint64_t now = uv_now(impl_->loop);
  // Streams: a chunk H2O has not finished with (over HTTP/2 it may wait on the client's window
  // rather than in the socket).
  std::vector<uint64_t> stalled;
  for (const auto& [id, ex] : exchanges_) {
    if (ex->generator != nullptr && ex->in_flight && now - ex->in_flight_since_ms > max_stall_ms) {
      stalled.push_back(id);
    }
  }
  for (uint64_t id : stalled) {
    auto it = exchanges_.find(id);
    if (it == exchanges_.end()) continue;
    h2o_req_t* req = it->second->req;
    Forget(id, /*tell_handler=*/true);
    ShutDownConnectionOf(req);
  }
  // Every connection: its output waits in the kernel's send queue (until the client's kernel
  // acknowledges it, which it stops doing once the client's buffer is full) and what that
  // would not take in libuv's queue. The sum shrinks, or once H2O's write is done and the next
  // begun changes, whenever the client takes any. (libuv's queue alone stands still for
  // seconds while a client takes a large kernel queue slowly: the kernel asks for more only
  // once a third of it is free.) A shut-down socket fails its pending write and H2O closes the
  // connection, disposing of its requests (the handler hears OnGone for those not answered).
  for (auto& [sock, open] : impl_->sockets) {
    uv_os_fd_t fd;
    if (uv_fileno(reinterpret_cast<uv_handle_t*>(open.tcp), &fd) != 0) continue;
    int in_kernel = 0;
    if (::ioctl(fd, SIOCOUTQ, &in_kernel) != 0) in_kernel = 0;
    const size_t waiting =
        uv_stream_get_write_queue_size(reinterpret_cast<const uv_stream_t*>(open.tcp)) +
        static_cast<size_t>(in_kernel > 0 ? in_kernel : 0);
    if (waiting == 0) {
      open.waiting_since_ms = 0;
    } else if (open.waiting_since_ms == 0 || waiting != open.waiting_bytes) {
      open.waiting_bytes = waiting;
      open.waiting_since_ms = now;
    } else if (now - open.waiting_since_ms > max_stall_ms) {
      ::shutdown(fd, SHUT_RDWR);
    }
  }
}

void HttpServer::DisposeContext() {
  // H2O's context holds handles of its own (timers, the async handle of its message queue)
  // that keep the loop running: it goes once no connection needs it.
  if (!impl_->context_ready) return;
  // H2O 2.2 asserts that its timeouts are empty on dispose, but something of its own (not a
  // connection: none is left) stays linked to the one-second timeout; it is never run again,
  // so it is unlinked here rather than keeping the loop alive.
  h2o_context_t& c = impl_->context;
  h2o_timeout_t* timeouts[] = {&c.zero_timeout,
                               &c.one_sec_timeout,
                               &c.hundred_ms_timeout,
                               &c.handshake_timeout,
                               &c.http1.req_timeout,
                               &c.http2.idle_timeout,
                               &c.http2.graceful_shutdown_timeout,
                               &c.proxy.io_timeout};
  for (h2o_timeout_t* t : timeouts) {
    while (!h2o_linklist_is_empty(&t->_entries)) {
      h2o_timeout_unlink(H2O_STRUCT_FROM_MEMBER(h2o_timeout_entry_t, _link, t->_entries.next));
    }
  }
  impl_->context_ready = false;
  h2o_context_dispose(&impl_->context);
}

void HttpServer::OnH2oRequest(void* raw) {
  auto* req = static_cast<h2o_req_t*>(raw);
  const uint64_t id = next_id_++;
  auto* link = static_cast<Impl::PoolLink*>(
      h2o_mem_alloc_shared(&req->pool, sizeof(Impl::PoolLink), &Impl::OnPoolDispose));
  link->impl = impl_.get();
  link->id = id;
  auto ex = std::make_unique<Exchange>();
  ex->req = req;
  exchanges_[id] = std::move(ex);

  HttpRequest r;
  r.id = id;
  r.method.assign(req->method.base, req->method.len);
  r.target.assign(req->path.base, req->path.len);
  if (req->entity.base != nullptr) r.body.assign(req->entity.base, req->entity.len);
  r.content_type = HeaderValue(req, H2O_TOKEN_CONTENT_TYPE);
  r.accept = HeaderValue(req, H2O_TOKEN_ACCEPT);
  r.last_event_id = HeaderValue(req, "last-event-id");
  r.host.assign(req->authority.base, req->authority.len);
  r.origin = HeaderValue(req, "origin");
  r.peer_host = PeerHost(req);
  if (impl_->ssl != nullptr) {
    h2o_socket_t* sock = req->conn->callbacks->get_socket == nullptr
                             ? nullptr
                             : req->conn->callbacks->get_socket(req->conn);
    auto it = sock == nullptr ? impl_->identities.end() : impl_->identities.find(sock);
    r.sender = it == impl_->identities.end() ? Sender::Client(Sender::Role::kNobody)
                                             : it->second.ToSender();
  }
  handler_->OnRequest(r);
}

void HttpServer::Respond(uint64_t id, int status, const std::string& content_type,
                         const std::string& body, const HttpHeaders& headers) {
  auto it = exchanges_.find(id);
  if (it == exchanges_.end() || it->second->generator != nullptr) return;
  h2o_req_t* req = it->second->req;
  exchanges_.erase(it);  // answered: a later dispose finds nothing
  req->res.status = status;
  req->res.reason = ReasonPhrase(status);
  req->res.content_length = body.size();  // a Content-Length instead of chunks
  AddHeaders(req, content_type, headers);
  h2o_send_inline(req, body.data(), body.size());
}

bool HttpServer::StartStream(uint64_t id, const std::string& content_type,
                             const HttpHeaders& headers) {
  auto it = exchanges_.find(id);
  if (it == exchanges_.end() || it->second->generator != nullptr) return false;
  Exchange& ex = *it->second;
  h2o_req_t* req = ex.req;
  auto* gen =
      static_cast<Impl::Generator*>(h2o_mem_alloc_pool(&req->pool, sizeof(Impl::Generator)));
  gen->base.proceed = &Impl::OnGenProceed;
  gen->base.stop = &Impl::OnGenStop;
  gen->impl = impl_.get();
  gen->id = id;
  ex.generator = gen;
  ex.in_flight_since_ms = uv_now(impl_->loop);
  req->res.status = 200;
  req->res.reason = "OK";
  AddHeaders(req, content_type, headers);
  h2o_start_response(req, &gen->base);
  // Send the head now: an EventSource counts as open once it arrives.
  ex.in_flight = true;
  h2o_send(req, nullptr, 0, H2O_SEND_STATE_IN_PROGRESS);
  return true;
}

void HttpServer::StreamWrite(uint64_t id, std::string chunk) {
  auto it = exchanges_.find(id);
  if (it == exchanges_.end() || it->second->generator == nullptr || it->second->ending) return;
  Exchange& ex = *it->second;
  if (!ex.queued.empty() && ex.queued.size() + chunk.size() > kMaxStreamBacklog) {
    // The client does not keep up: end the stream rather than hold its backlog.
    ex.queued.clear();
    handler_->OnGone(id);
    StreamEnd(id);
    return;
  }
  ex.queued += chunk;
  if (!ex.in_flight) Flush(ex);
}

void HttpServer::StreamEnd(uint64_t id) {
  auto it = exchanges_.find(id);
  if (it == exchanges_.end()) return;
  Exchange& ex = *it->second;
  if (ex.generator == nullptr) return;
  ex.ending = true;
  if (!ex.in_flight) Flush(ex);
}

void HttpServer::Flush(Exchange& ex) {
  if (ex.queued.empty() && !ex.ending) return;
  ex.sending = std::move(ex.queued);
  ex.queued.clear();
  ex.in_flight = true;
  ex.in_flight_since_ms = uv_now(impl_->loop);
  h2o_iovec_t buf = h2o_iovec_init(ex.sending.data(), ex.sending.size());
  const bool final = ex.ending;
  h2o_req_t* req = ex.req;
  if (final) {
    // H2O reads the data after h2o_send returns (and may dispose of the request at once):
    // the last chunk lives in the request's pool, and the exchange is forgotten first.
    h2o_iovec_t last = h2o_strdup(&req->pool, ex.sending.data(), ex.sending.size());
    exchanges_.erase(ex.generator->id);
    h2o_send(req, &last, last.len == 0 ? 0 : 1, H2O_SEND_STATE_FINAL);
    return;
  }
  h2o_send(req, &buf, 1, H2O_SEND_STATE_IN_PROGRESS);
}

void HttpServer::OnProceed(uint64_t id) {
  auto it = exchanges_.find(id);
  if (it == exchanges_.end()) return;
  Exchange& ex = *it->second;
  ex.in_flight = false;
  ex.sending.clear();
  Flush(ex);
}

void HttpServer::OnStop(uint64_t id) { Forget(id, /*tell_handler=*/true); }

void HttpServer::OnDisposed(uint64_t id) { Forget(id, /*tell_handler=*/true); }

void HttpServer::Forget(uint64_t id, bool tell_handler) {
  if (exchanges_.erase(id) == 0) return;
  if (tell_handler) handler_->OnGone(id);
}

void HttpServer::Close() {
  if (closed_) return;
  closed_ = true;
  if (impl_->listener != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(impl_->listener),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
    impl_->listener = nullptr;
  }
  // End the streams and answer what is pending; the handler hears of none of them again.
  std::vector<uint64_t> ids;
  for (const auto& [id, ex] : exchanges_) ids.push_back(id);
  for (uint64_t id : ids) {
    auto it = exchanges_.find(id);
    if (it == exchanges_.end()) continue;
    handler_->OnGone(id);
    if (it->second->generator != nullptr) {
      StreamEnd(id);
    } else {
      Respond(id, 503, "application/json",
              "{\"error\":\"the node is shutting down; use another node\","
              "\"code\":\"unavailable\"}\n");
    }
  }
  // H2O closes idle keep-alive connections and those whose answer is done; the context goes
  // with the last of them.
  if (impl_->context_ready) h2o_context_request_shutdown(&impl_->context);
  if (impl_->sockets.empty()) {
    ReleaseLoop();
  } else {
    StartCloseTimer(kCloseGraceMs);
  }
}

}  // namespace chord
