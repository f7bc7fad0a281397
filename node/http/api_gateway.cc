#include "node/http/api_gateway.h"

#include <arpa/inet.h>
#include <strings.h>
#include <uv.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <utility>

#include "node/core/admission.h"
#include "node/http/ring_page.h"
#include "protocol/limits.h"
#include "tools/client/value_json.h"
#include "tools/client/wire_json.h"

namespace chord {
namespace {

constexpr uint64_t kTickMs = 250;
// How the API's sentences say "try another node".
constexpr char kOtherNode[] = "use another node";

wire::ErrorResponse ForbiddenError(const std::string& why) {
  wire::ErrorResponse e;
  e.set_code(wire::FORBIDDEN);
  e.set_error(why);
  return e;
}
constexpr char kJson[] = "application/json";

// The HTTP status of a sentence's kind.
int StatusOf(AnswerKind kind) {
  switch (kind) {
    case AnswerKind::kOk:
      return 200;
    case AnswerKind::kNotFound:
      return 404;
    case AnswerKind::kUsage:
      return 400;
    case AnswerKind::kConflict:
      return 409;
    default:
      return 503;
  }
}

const char* CodeOf(AnswerKind kind) {
  switch (kind) {
    case AnswerKind::kNotFound:
      return "not_found";
    case AnswerKind::kUsage:
      return "invalid";
    case AnswerKind::kConflict:
      return "conflict";
    default:
      return "unavailable";
  }
}

std::string SseEvent(const std::string& name, const std::string& data, const std::string& id = "") {
  std::string out;
  if (!id.empty()) out += "id: " + id + "\n";
  out += "event: " + name + "\ndata: " + data + "\n\n";
  return out;
}

const HttpHeaders& SseHeaders() {
  static const HttpHeaders headers{{"cache-control", "no-cache"}, {"x-accel-buffering", "no"}};
  return headers;
}

}  // namespace

Result<std::unique_ptr<ApiGateway>> ApiGateway::Start(NodeRuntime* runtime, const sockaddr_in& addr,
                                                      const std::string& name, Options options) {
  uv_loop_t* loop = runtime->loop();
  if (loop == nullptr) return Status::Unavailable("the node's event loop is not running");
  std::unique_ptr<ApiGateway> gateway(new ApiGateway(runtime, std::move(options)));
  HttpServer::Options server_options;
  server_options.max_body_bytes = kMaxValueBytes + (64 << 10);  // a JSON body's overhead
  server_options.tls = gateway->options_.tls;
  gateway->server_ = std::make_unique<HttpServer>(loop, gateway.get(), server_options);
  if (Status s = gateway->server_->Listen(addr, name); !s.ok()) return s;
  if (int rc = gateway->mailbox_.Open(loop); rc != 0) {
    return Status::Unavailable(std::string("cannot start the HTTP API: ") + uv_strerror(rc));
  }
  ApiGateway* g = gateway.get();
  int rc = g->tick_.Init([loop](uv_timer_t* t) { return uv_timer_init(loop, t); });
  if (rc == 0) {
    g->tick_.get()->data = g;
    rc = uv_timer_start(
        g->tick_.get(),
        [](uv_timer_t* t) {
          if (t->data != nullptr) static_cast<ApiGateway*>(t->data)->Tick();
        },
        kTickMs, kTickMs);
  }
  if (rc != 0) return Status::Unavailable(std::string("cannot start a timer: ") + uv_strerror(rc));
  if (g->options_.api) {
    g->ring_feed_ = std::make_unique<RingFeed>(
        runtime->options().listen_addr, g->options_.request_timeout_ms / 3,
        g->options_.ring_poll_ms, &g->mailbox_,
        [g](bool ok, const std::string& body, const std::vector<RingEvent>& events) {
          g->OnRingWalk(ok, body, events);
        });
  }
  return gateway;
}

ApiGateway::ApiGateway(NodeRuntime* runtime, Options options)
    : runtime_(runtime), options_(std::move(options)) {}

ApiGateway::~ApiGateway() {
  Close();
  // Joins the threads; their posts were dropped when the mailbox closed.
  ring_feed_.reset();
  watches_.clear();
}

void ApiGateway::Close() {
  if (closed_) return;
  closed_ = true;
  mailbox_.Close();
  tick_.Close();
  if (ring_feed_) ring_feed_->RequestStop();  // joined by the destructor
  for (auto& [id, watch] : watches_) watch->Stop();
  for (auto& [id, call] : calls_) runtime_->CancelLocal(call.token);
  calls_.clear();
  if (server_) server_->Close();
}

void ApiGateway::Error(uint64_t id, int status, const std::string& code,
                       const std::string& sentence, const HttpHeaders& headers) {
  server_->Respond(id, status, kJson, DumpJson({{"error", sentence}, {"code", code}}, -1) + "\n",
                   headers);
}

std::string ApiGateway::Refusal(const Sender& sender, const wire::Envelope& request) {
  return AdmissionProblem(sender, request);
}

namespace {

// The host part of a Host header ("127.0.0.1:8080" -> "127.0.0.1", "[::1]:80" -> "::1").
std::string HostName(const std::string& host) {
  if (!host.empty() && host.front() == '[') {
    const size_t end = host.find(']');
    return end == std::string::npos ? host : host.substr(1, end - 1);
  }
  const size_t colon = host.rfind(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

// localhost, ::1 or an IPv4 address of 127.0.0.0/8 (not a name that merely starts "127.").
bool IsLoopbackName(const std::string& name) {
  in_addr addr{};
  return strcasecmp(name.c_str(), "localhost") == 0 || name == "::1" ||
         (inet_pton(AF_INET, name.c_str(), &addr) == 1 && (ntohl(addr.s_addr) >> 24) == 127);
}

}  // namespace

std::string ApiGateway::CrossSiteProblem(const HttpRequest& request) const {
  // A browser names the page's origin on cross-origin requests: only the API's own pages
  // (the ring page) may call it; a page elsewhere must not write keys through the user's
  // browser.
  if (!request.origin.empty() && request.origin != "http://" + request.host &&
      request.origin != "https://" + request.host) {
    return "cross-origin requests are refused (Origin " + request.origin +
           " is not this API's own origin); call the API from its own page, curl or a client";
  }
  if (options_.loopback && !IsLoopbackName(HostName(request.host))) {
    return "this API listens on a loopback address and answers only requests addressed to "
           "localhost or 127.0.0.1, not \"" +
           request.host + "\" (a page that renames itself to 127.0.0.1 must not reach it)";
  }
  return "";
}

void ApiGateway::OnRequest(const HttpRequest& request) {
  if (closed_) {
    return Error(request.id, 503, "unavailable", "the node is shutting down; use another node");
  }
  if (std::string problem = CrossSiteProblem(request); !problem.empty()) {
    return Error(request.id, 403, "forbidden", problem);
  }
  if (!options_.tls.empty() && request.sender.role == Sender::Role::kNobody) {
    return Error(request.id, 403, "forbidden",
                 "the client certificate names no role of this cluster (admin, writer or "
                 "reader); make one with scripts/certs.sh client DIR NAME --role ROLE");
  }
  Route(request);
}

void ApiGateway::Route(const HttpRequest& request) {
  const uint64_t id = request.id;
  Result<RequestTarget> target = ParseRequestTarget(request.target);
  if (!target.ok()) return Error(id, 400, "invalid", target.status().message());
  const std::string& path = target->path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  auto only_get = [&]() {
    Error(id, 405, "method", "method " + request.method + " is not served on " + path + "; use GET",
          {{"allow", "GET, HEAD"}});
  };
  if (path == "/metrics") {
    if (!get) return only_get();
    return server_->Respond(id, 200, "text/plain; version=0.0.4; charset=utf-8",
                            runtime_->RenderMetrics());
  }
  if (!options_.api) {
    return Error(id, 404, "no_such_path",
                 "no such path " + path + "; this address serves /metrics only");
  }
  static const std::string kKeys = "/v1/keys/";
  static const std::string kLookup = "/v1/lookup/";
  static const std::string kWatch = "/v1/watch/";
  if (path == "/" || path == "/index.html") {
    if (!get) return only_get();
    return server_->Respond(id, 200, "text/html; charset=utf-8", std::string(RingPageHtml()),
                            {{"cache-control", "no-cache"}});
  }
  if (path.rfind(kKeys, 0) == 0) return HandleKey(request, path.substr(kKeys.size()), *target);
  if (path.rfind(kLookup, 0) == 0) {
    if (!get) return only_get();
    const std::string key = path.substr(kLookup.size());
    if (std::string problem = KeyProblem(key); !problem.empty()) {
      return Error(id, 400, "invalid", problem);
    }
    wire::Envelope envelope;
    envelope.mutable_lookup()->set_key(key);
    return Submit(id, envelope, request.sender, LocalCall{CallKind::kLookup, 0, 0, key, false});
  }
  if (path == "/v1/status") {
    if (!get) return only_get();
    wire::Envelope envelope;
    envelope.mutable_status();
    return Submit(id, envelope, request.sender, LocalCall{CallKind::kStatus, 0, 0, "", false});
  }
  if (path == "/v1/ring") {
    if (!get) return only_get();
    wire::Envelope status;
    status.mutable_status();
    if (std::string refusal = Refusal(request.sender, status); !refusal.empty()) {
      return Error(id, 403, "forbidden", refusal);
    }
    ring_waiters_[id] = uv_now(runtime_->loop()) + options_.request_timeout_ms;
    ring_feed_->WalkNow();
    return;
  }
  const bool head = request.method == "HEAD";
  if (path == "/v1/ring/events") {
    if (!get) return only_get();
    if (head) return server_->Respond(id, 200, "text/event-stream", "", SseHeaders());
    return HandleRingEvents(request);
  }
  if (path.rfind(kWatch, 0) == 0) {
    if (!get) return only_get();
    if (head) return server_->Respond(id, 200, "text/event-stream", "", SseHeaders());
    return HandleWatch(request, path.substr(kWatch.size()), *target);
  }
  Error(id, 404, "no_such_path",
        "no such path " + path +
            "; the API serves /v1/keys/KEY, /v1/lookup/KEY, /v1/status, /v1/ring, "
            "/v1/ring/events, /v1/watch/KEY, /metrics and the ring page at /");
}

void ApiGateway::HandleKey(const HttpRequest& request, const std::string& key,
                           const RequestTarget& target) {
  // Who may do this is decided before the body is looked at.
  wire::Envelope probe;
  if (request.method == "PUT" || request.method == "POST") {
    probe.mutable_put()->set_key(key);
  } else if (request.method == "DELETE") {
    probe.mutable_del()->set_key(key);
  } else {
    probe.mutable_get()->set_key(key);
  }
  if (std::string refusal = Refusal(request.sender, probe); !refusal.empty()) {
    return Error(request.id, 403, "forbidden",
                 ErrorAnswerSentence(runtime_->options().listen_addr, ForbiddenError(refusal)));
  }
  KeyRequest kr;
  if (auto problem = ParseKeyRequest(request, key, target, &kr)) {
    HttpHeaders headers;
    if (problem->status == 405) headers.emplace_back("allow", "GET, HEAD, PUT, POST, DELETE");
    return Error(request.id, problem->status, problem->code, problem->sentence, headers);
  }
  wire::Envelope envelope;
  CallKind kind = CallKind::kGet;
  switch (kr.op) {
    case KeyRequest::Op::kGet:
      envelope = GetEnvelope(kr.key, kr.options);
      break;
    case KeyRequest::Op::kPut:
      envelope = PutEnvelope(kr.key, kr.value, kr.options);
      kind = CallKind::kPut;
      break;
    case KeyRequest::Op::kDelete:
      envelope = DeleteEnvelope(kr.key, kr.options);
      kind = CallKind::kDelete;
      break;
  }
  Submit(request.id, envelope, request.sender, LocalCall{kind, 0, 0, kr.key, kr.json});
}

void ApiGateway::Submit(uint64_t id, const wire::Envelope& envelope, const Sender& sender,
                        LocalCall call) {
  call.deadline_ms = uv_now(runtime_->loop()) + options_.request_timeout_ms;
  calls_[id] = std::move(call);
  const uint64_t token = runtime_->SubmitLocal(
      envelope, sender, [this, id](const wire::Envelope& reply) { OnLocalReply(id, reply); });
  auto it = calls_.find(id);
  if (it == calls_.end()) return;  // answered already, from inside SubmitLocal
  if (token == 0) {
    calls_.erase(it);
    return Error(id, 503, "unavailable", "the node is shutting down; use another node");
  }
  it->second.token = token;
}

void ApiGateway::OnLocalReply(uint64_t id, const wire::Envelope& reply) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  const LocalCall call = std::move(it->second);
  calls_.erase(it);
  const std::string& node = runtime_->options().listen_addr;
  if (reply.has_error()) {
    const wire::ErrorResponse& e = reply.error();
    const int status = e.code() == wire::FORBIDDEN ? 403 : e.code() == wire::INVALID ? 400 : 503;
    const char* code = status == 403 ? "forbidden" : status == 400 ? "invalid" : "unavailable";
    return Error(id, status, code, ErrorAnswerSentence(node, e));
  }
  switch (call.kind) {
    case CallKind::kStatus:
      if (!reply.has_status_resp()) break;
      return server_->Respond(id, 200, kJson, DumpJson(StatusJson(reply.status_resp())) + "\n");
    case CallKind::kLookup: {
      if (!reply.has_lookup_resp()) break;
      const wire::LookupResponse& l = reply.lookup_resp();
      if (l.code() != wire::OK) {
        wire::DataResponse answer;
        answer.set_code(l.code());
        answer.set_error(l.error());
        AnswerProblem p = DescribeDataAnswer(node, "lookup", call.key, answer, kOtherNode);
        return Error(id, StatusOf(p.kind), CodeOf(p.kind), p.sentence);
      }
      nlohmann::json doc = LookupJson(call.key, l);
      doc["via"] = node;
      return server_->Respond(id, 200, kJson, DumpJson(doc) + "\n");
    }
    default: {
      if (!reply.has_data_resp()) break;
      const wire::DataResponse& r = reply.data_resp();
      const char* op = call.kind == CallKind::kGet   ? "get"
                       : call.kind == CallKind::kPut ? "put"
                                                     : "delete";
      AnswerProblem p = DescribeDataAnswer(node, op, call.key, r, kOtherNode);
      if (p.kind != AnswerKind::kOk) {
        nlohmann::json doc{{"error", p.sentence}, {"code", CodeOf(p.kind)}};
        if (p.kind == AnswerKind::kConflict) doc["version"] = r.version();
        return server_->Respond(id, StatusOf(p.kind), kJson, DumpJson(doc, -1) + "\n");
      }
      HttpHeaders headers{{"x-chord-version", std::to_string(r.version())},
                          {"x-chord-acks", std::to_string(r.acks())},
                          {"x-chord-required", std::to_string(r.required())}};
      if (r.expires_unix_ms() != 0) {
        headers.emplace_back("x-chord-expires", std::to_string(r.expires_unix_ms()));
      }
      if (call.kind == CallKind::kGet && !call.json) {
        return server_->Respond(id, 200, "application/octet-stream", r.value(), headers);
      }
      nlohmann::json doc{{"key", call.key},
                         {"version", r.version()},
                         {"acks", r.acks()},
                         {"required", r.required()}};
      if (call.kind == CallKind::kGet) SetValueJson(&doc, r.value());
      if (r.expires_unix_ms() != 0) doc["expires_unix_ms"] = r.expires_unix_ms();
      return server_->Respond(id, 200, kJson, DumpJson(doc, -1) + "\n", headers);
    }
  }
  Error(id, 503, "unavailable",
        node + " answered the " +
            std::string(call.kind == CallKind::kStatus ? "status request" : "request") +
            " with a message of the wrong kind; is it a chord-node of the same version?");
}

void ApiGateway::HandleRingEvents(const HttpRequest& request) {
  const uint64_t id = request.id;
  wire::Envelope status;
  status.mutable_status();
  if (std::string refusal = Refusal(request.sender, status); !refusal.empty()) {
    return Error(id, 403, "forbidden", refusal);
  }
  if (ring_followers_.size() >= options_.max_event_streams) {
    return Error(id, 503, "unavailable",
                 "this node already serves " + std::to_string(options_.max_event_streams) +
                     " ring event streams; close one or use another node");
  }
  if (!server_->StartStream(id, "text/event-stream", SseHeaders())) return;
  ring_followers_[id] = false;
  server_->StreamWrite(id, "retry: 1000\n\n");
  ring_feed_->SetPolling(true);  // walks now, then every poll period
}

void ApiGateway::OnRingWalk(bool ok, const std::string& body,
                            const std::vector<RingEvent>& events) {
  // Answering may end an exchange, and OnGone then changes these maps: walk copies.
  for (const auto& [id, deadline] : std::exchange(ring_waiters_, {})) {
    if (ok) {
      server_->Respond(id, 200, kJson, body + "\n");
    } else {
      Error(id, 503, "unavailable", body);
    }
  }
  if (!ok) {
    const std::string data = DumpJson({{"error", body}}, -1);
    for (uint64_t id : RingFollowerIds()) server_->StreamWrite(id, SseEvent("unreachable", data));
    return;
  }
  const bool changed = body != last_ring_;
  last_ring_ = body;
  for (uint64_t id : RingFollowerIds()) {
    auto it = ring_followers_.find(id);
    if (it == ring_followers_.end()) continue;  // its stream ended on an earlier write
    const bool had_ring = std::exchange(it->second, true);
    if (had_ring) {
      for (const RingEvent& e : events) server_->StreamWrite(id, SseEvent(e.name, e.data));
    }
    if (changed || !had_ring) server_->StreamWrite(id, SseEvent("ring", body));
  }
}

std::vector<uint64_t> ApiGateway::RingFollowerIds() const {
  std::vector<uint64_t> ids;
  ids.reserve(ring_followers_.size());
  for (const auto& [id, had_ring] : ring_followers_) ids.push_back(id);
  return ids;
}

void ApiGateway::HandleWatch(const HttpRequest& request, const std::string& key,
                             const RequestTarget& target) {
  const uint64_t id = request.id;
  if (std::string problem = KeyProblem(key); !problem.empty()) {
    return Error(id, 400, "invalid", problem);
  }
  WatchStream::Options watch;
  watch.via = runtime_->options().listen_addr;
  watch.key = key;
  watch.timeout_ms = options_.request_timeout_ms / 3;
  watch.resume_hint = "from_version=";
  for (const auto& [name, value] : target.query) {
    if (name != "from_version") {
      return Error(id, 400, "invalid",
                   "unknown parameter \"" + name + "\"; a watch takes from_version");
    }
  }
  // An EventSource that reconnects says where it was (the id of each event is its version).
  std::string from = request.last_event_id;
  if (from.empty()) from = target.Param("from_version").value_or("");
  if (!from.empty()) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(from.data(), from.data() + from.size(), v);
    if (ec != std::errc() || end != from.data() + from.size()) {
      return Error(id, 400, "invalid",
                   "from_version must be a version number, not \"" + from + "\"");
    }
    watch.after_version = v;
    watch.start = false;  // a resume, also after version 0 (the key was absent)
  }
  wire::Envelope probe;
  probe.mutable_watch()->set_key(key);
  if (std::string refusal = Refusal(request.sender, probe); !refusal.empty()) {
    return Error(id, 403, "forbidden", refusal);
  }
  if (watches_.size() >= options_.max_watch_streams) {
    return Error(id, 503, "unavailable",
                 "this node already serves " + std::to_string(options_.max_watch_streams) +
                     " watches; close one or watch through another node");
  }
  if (!server_->StartStream(id, "text/event-stream", SseHeaders())) return;
  server_->StreamWrite(id, "retry: 1000\n\n");
  watches_[id] = std::make_unique<WatchStream>(
      std::move(watch), &mailbox_,
      [this, id](const std::string& type, uint64_t version, const std::string& json) {
        OnWatchEvent(id, type, version, json);
      },
      [this, id](const std::string& sentence) { OnWatchEnd(id, sentence); });
}

void ApiGateway::OnWatchEvent(uint64_t id, const std::string& type, uint64_t version,
                              const std::string& json) {
  server_->StreamWrite(id, SseEvent(type, json, std::to_string(version)));
}

void ApiGateway::OnWatchEnd(uint64_t id, const std::string& sentence) {
  if (!sentence.empty()) {
    server_->StreamWrite(id, SseEvent("error", DumpJson({{"error", sentence}}, -1)));
  }
  server_->StreamEnd(id);
  watches_.erase(id);  // its thread has finished: the join is immediate
}

void ApiGateway::OnGone(uint64_t id) {
  if (auto it = calls_.find(id); it != calls_.end()) {
    runtime_->CancelLocal(it->second.token);
    calls_.erase(it);
  }
  ring_waiters_.erase(id);
  if (ring_followers_.erase(id) > 0 && ring_followers_.empty() && ring_feed_) {
    ring_feed_->SetPolling(false);
  }
  // The thread ends after its current poll and then reports its end (OnWatchEnd).
  if (auto it = watches_.find(id); it != watches_.end()) it->second->Stop();
}

void ApiGateway::Tick() {
  const uint64_t now = uv_now(runtime_->loop());
  std::vector<uint64_t> expired;
  for (const auto& [id, call] : calls_) {
    if (call.deadline_ms <= now) expired.push_back(id);
  }
  for (const auto& [id, deadline] : ring_waiters_) {
    if (deadline <= now) expired.push_back(id);
  }
  for (uint64_t id : expired) {
    if (auto it = calls_.find(id); it != calls_.end()) {
      runtime_->CancelLocal(it->second.token);
      calls_.erase(it);
    }
    ring_waiters_.erase(id);
    Error(id, 504, "timeout",
          "the ring did not answer within " + std::to_string(options_.request_timeout_ms / 1000) +
              " s; check that enough nodes are up (chordctl ring) and retry");
  }
  server_->CloseStalledConnections(options_.max_stall_ms);
  if (now - last_keep_alive_ms_ >= options_.keep_alive_ms) {
    last_keep_alive_ms_ = now;
    for (uint64_t id : RingFollowerIds()) server_->StreamWrite(id, ": keep-alive\n\n");
    for (const auto& [id, watch] : watches_) server_->StreamWrite(id, ": keep-alive\n\n");
  }
}

}  // namespace chord
