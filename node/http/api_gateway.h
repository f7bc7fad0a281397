// ApiGateway: chord-node's HTTP face (`--http-listen`): the JSON API under /v1, the live ring
// page at /, and the Prometheus metrics at /metrics; with `--metrics-listen` a second one
// serves /metrics only. It turns each HTTP request into the client request chordctl would
// send and hands it to this process's vnode 0 through NodeRuntime::SubmitLocal, with the
// caller's identity (its TLS client certificate), so the core's admission and limits apply
// unchanged; answers become JSON with chordctl's sentences and proper status codes.
// Things that need other nodes' answers run on threads with the blocking client (RingFeed
// walks the ring for /v1/ring and /v1/ring/events; a WatchStream per /v1/watch/{key}) and
// come back through a LoopMailbox. Every request has a deadline; streams are capped.
// Created by chord-node's main after NodeRuntime::Start and handed to AddService. Loop thread.
#ifndef CHORD_NODE_HTTP_API_GATEWAY_H_
#define CHORD_NODE_HTTP_API_GATEWAY_H_

#include <netinet/in.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "node/http/http_server.h"
#include "node/http/key_request.h"
#include "node/http/loop_mailbox.h"
#include "node/http/request_target.h"
#include "node/http/ring_feed.h"
#include "node/http/watch_stream.h"
#include "node/runtime/loop_service.h"
#include "node/runtime/node_runtime.h"
#include "node/runtime/uv_handle.h"
#include "protocol/base/status.h"

namespace chord {

class ApiGateway final : public HttpHandler, public LoopService {
 public:
  struct Options {
    bool api = true;  // false: /metrics only (--metrics-listen)
    TlsFiles tls;     // HTTPS with client certificates; empty: plain HTTP
    uint64_t request_timeout_ms = 15'000;
    size_t max_watch_streams = 64;
    size_t max_event_streams = 256;
    uint64_t ring_poll_ms = 1'000;
    // An SSE comment this often keeps proxies from closing a quiet stream, and finds clients
    // that left (H2O notices only when a write fails) so that their slots are freed soon.
    uint64_t keep_alive_ms = 2'000;
    // A connection whose client takes nothing of its answer or stream this long is closed.
    uint64_t max_stall_ms = 30'000;
    // The listener is on a loopback address: requests must name a loopback host (a web page
    // that rebinds its own name to 127.0.0.1 must not reach the API).
    bool loopback = true;
  };

  // Binds `addr` (`name` as the user wrote it) and starts serving on the runtime's loop.
  static Result<std::unique_ptr<ApiGateway>> Start(NodeRuntime* runtime, const sockaddr_in& addr,
                                                   const std::string& name, Options options);
  ~ApiGateway() override;

  void OnRequest(const HttpRequest& request) override;
  void OnGone(uint64_t id) override;
  void Close() override;

 private:
  enum class CallKind { kGet, kPut, kDelete, kLookup, kStatus };
  // A request handed to the core and not answered yet.
  struct LocalCall {
    CallKind kind = CallKind::kGet;
    uint64_t token = 0;
    uint64_t deadline_ms = 0;
    std::string key;
    bool json = false;  // GET: answer JSON instead of the raw value
  };

  ApiGateway(NodeRuntime* runtime, Options options);

  void Route(const HttpRequest& request);
  void HandleKey(const HttpRequest& request, const std::string& key, const RequestTarget& t);
  void HandleWatch(const HttpRequest& request, const std::string& key, const RequestTarget& t);
  void HandleRingEvents(const HttpRequest& request);
  void Submit(uint64_t id, const wire::Envelope& envelope, const Sender& sender, LocalCall call);
  void OnLocalReply(uint64_t id, const wire::Envelope& reply);
  void OnRingWalk(bool ok, const std::string& body, const std::vector<RingEvent>& events);
  // The /v1/ring/events streams now: a write may end one (OnGone), so loops walk this copy.
  std::vector<uint64_t> RingFollowerIds() const;
  void OnWatchEvent(uint64_t id, const std::string& type, uint64_t version,
                    const std::string& json);
  void OnWatchEnd(uint64_t id, const std::string& sentence);
  // Deadlines of local calls and keep-alives of streams.
  void Tick();
  // A JSON error answer: {"error": sentence, "code": code}.
  void Error(uint64_t id, int status, const std::string& code, const std::string& sentence,
             const HttpHeaders& headers = {});
  // Why a request from a browser page of another origin, or addressed to a non-loopback name
  // of a loopback listener, is refused ("" when it is not).
  std::string CrossSiteProblem(const HttpRequest& request) const;
  // "" when `sender` may make `request`, else the sentence it is refused with.
  static std::string Refusal(const Sender& sender, const wire::Envelope& request);

  NodeRuntime* runtime_;
  Options options_;
  std::unique_ptr<HttpServer> server_;
  LoopMailbox mailbox_;
  std::unique_ptr<RingFeed> ring_feed_;  // null without the API
  UvHandle<uv_timer_t> tick_;
  std::unordered_map<uint64_t, LocalCall> calls_;        // by request id
  std::unordered_map<uint64_t, uint64_t> ring_waiters_;  // GET /v1/ring -> its deadline
  // /v1/ring/events streams -> whether they have had a `ring` event of a walk since they came
  // (the first is a fresh walk, never a remembered one).
  std::unordered_map<uint64_t, bool> ring_followers_;
  std::string last_ring_;  // the latest ring JSON
  // /v1/watch streams by request id; a stream whose client left stays until its thread ends.
  std::unordered_map<uint64_t, std::unique_ptr<WatchStream>> watches_;
  uint64_t last_keep_alive_ms_ = 0;
  bool closed_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_HTTP_API_GATEWAY_H_
