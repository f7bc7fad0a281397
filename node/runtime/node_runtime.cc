#include "node/runtime/node_runtime.h"

#include <uv.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "node/core/node_ref.h"
#include "node/runtime/metrics_server.h"
#include "node/runtime/net_address.h"
#include "node/runtime/prometheus_text.h"
#include "node/runtime/signal_watcher.h"
#include "node/runtime/tcp_connection.h"
#include "node/runtime/tcp_listener.h"
#include "node/runtime/timer_queue.h"
#include "node/storage/memory_store.h"
#include "spdlog/spdlog.h"

namespace chord {

namespace {

// Refused connections are reported at most this often.
constexpr uint64_t kRefusalLogIntervalMs = 10'000;

spdlog::level::level_enum ToSpdlog(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

const char* SignalName(int signum) {
  switch (signum) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return "a signal";
  }
}

TcpConnection::Options MakeConnectionOptions(const RuntimeOptions& options) {
  TcpConnection::Options out;
  out.max_frame_bytes = options.max_frame_bytes;
  out.max_queued_bytes = options.max_queued_bytes;
  return out;
}

}  // namespace

class NodeRuntime::VnodeEnvironment final : public Environment {
 public:
  // `log_prefix` starts every log line of this vnode ("" for a process without vnodes).
  VnodeEnvironment(NodeRuntime* runtime, std::string log_prefix)
      : runtime_(runtime), log_prefix_(std::move(log_prefix)) {}

  uint64_t NowMs() override { return runtime_->NowMs(); }
  uint64_t WallMs() override { return runtime_->WallMs(); }
  uint64_t Random() override { return runtime_->Random(); }
  void SendRequest(const std::string& addr, const wire::Envelope& request) override {
    runtime_->SendRequest(addr, request);
  }
  void SendReply(ReplyToken to, const wire::Envelope& reply) override {
    runtime_->SendReply(to, reply);
  }
  TimerId Schedule(uint64_t delay_ms, std::function<void()> fn) override {
    return runtime_->Schedule(delay_ms, std::move(fn));
  }
  void Cancel(TimerId id) override { runtime_->Cancel(id); }
  void Log(LogLevel level, std::string_view message) override {
    if (log_prefix_.empty()) return runtime_->Log(level, message);
    if (!runtime_->LogEnabled(level)) return;
    runtime_->Log(level, log_prefix_ + std::string(message));
  }

 private:
  NodeRuntime* runtime_;
  std::string log_prefix_;
};

std::string NodeRuntime::VnodeAddress(const std::string& listen_addr, int vnodes, int i) {
  if (vnodes <= 1) return listen_addr;
  return listen_addr + "#" + std::to_string(i);
}

NodeRuntime::NodeRuntime(RuntimeOptions options, Store* store)
    : options_(std::move(options)), store_(store), loop_(std::make_unique<uv_loop_t>()) {
  if (store_ == nullptr) {
    owned_store_ = std::make_unique<MemoryStore>();
    store_ = owned_store_.get();
  }
  std::random_device device;
  std::seed_seq seed{device(), device(), device(), device()};
  rng_.seed(seed);
  const int rc = uv_loop_init(loop_.get());
  if (rc < 0) {
    loop_status_ = Status::IoError(std::string("cannot create the event loop: ") + uv_strerror(rc));
  } else {
    loop_open_ = true;
  }
}

NodeRuntime::~NodeRuntime() { Shutdown(); }

Status NodeRuntime::Start() {
  if (!loop_open_) return loop_status_;
  if (started_) return Status::InvalidArgument("the runtime was already started");
  started_ = true;

  if (options_.vnodes < 1 || options_.vnodes > kMaxVnodesPerProcess) {
    return Status::InvalidArgument("the number of virtual nodes must be between 1 and " +
                                   std::to_string(kMaxVnodesPerProcess) + ", not " +
                                   std::to_string(options_.vnodes));
  }
  auto listen_addr = ParseIpv4Address(options_.listen_addr);
  if (!listen_addr.ok()) return listen_addr.status();
  std::optional<sockaddr_in> metrics_addr;
  if (!options_.metrics_listen_addr.empty()) {
    auto parsed = ParseIpv4Address(options_.metrics_listen_addr);
    if (!parsed.ok()) return parsed.status();
    metrics_addr = *parsed;
  }
  for (const std::string& join : options_.join_addrs) {
    auto ring_addr = SplitRingAddress(join);
    if (!ring_addr.ok()) return ring_addr.status();
    auto join_addr = ParseIpv4Address(ring_addr->process);
    if (!join_addr.ok()) return join_addr.status();
  }

  timers_ = std::make_unique<TimerQueue>();
  Status s = timers_->Init(loop_.get());
  if (!s.ok()) return s;

  auto listener = TcpListener::Listen(
      loop_.get(), *listen_addr, options_.listen_addr,
      [this](uv_stream_t* server) { OnAccept(server); },
      [this](const std::string& error) { Log(LogLevel::kWarn, error); });
  if (!listener.ok()) return listener.status();
  listener_ = *listener;

  if (metrics_addr) {
    metrics_ = std::make_unique<MetricsServer>(
        loop_.get(), [this] { return RenderMetrics(); }, MetricsServer::Options{});
    s = metrics_->Listen(*metrics_addr, options_.metrics_listen_addr + " for metrics");
    if (!s.ok()) return s;
  }

  if (options_.handle_signals) {
    signals_ = std::make_unique<SignalWatcher>([this](int signum) { OnSignal(signum); });
    for (int signum : {SIGTERM, SIGINT}) {
      s = signals_->Watch(loop_.get(), signum);
      if (!s.ok()) return s;
    }
    // A peer that goes away mid-write must not kill the process.
    std::signal(SIGPIPE, SIG_IGN);
  }

  const int vnodes = options_.vnodes;
  std::vector<NodeRef> refs;
  for (int i = 0; i < vnodes; ++i) {
    refs.push_back(NodeRef::ForAddress(VnodeAddress(options_.listen_addr, vnodes, i)));
  }
  for (int i = 0; i < vnodes; ++i) {
    NodeConfig config = options_.node;
    config.request_id_base = uint64_t(i) << kVnodeRequestIdShift;
    vnode_envs_.push_back(std::make_unique<VnodeEnvironment>(
        this, vnodes == 1 ? "" : "[#" + std::to_string(i) + "] "));
    nodes_.push_back(
        std::make_unique<ChordNode>(vnode_envs_.back().get(), store_, config, refs[i]));
  }
  for (auto& node : nodes_) node->SetProcessVnodes(refs);
  nodes_[0]->Start(options_.join_addrs);
  // A new ring grows through vnode 0; otherwise every vnode joins the way vnode 0 does. Joins
  // are retried by the nodes themselves, so they may all start at once.
  const std::vector<std::string> others_join =
      options_.join_addrs.empty() ? std::vector<std::string>{refs[0].addr} : options_.join_addrs;
  for (int i = 1; i < vnodes; ++i) nodes_[i]->Start(others_join);
  SweepConnections();
  return Status::Ok();
}

void NodeRuntime::Run() {
  if (started_ && loop_open_ && !stopped_) uv_run(loop_.get(), UV_RUN_DEFAULT);
  Shutdown();
}

void NodeRuntime::Leave() {
  if (stopped_ || leaving_) return;
  if (nodes_.empty()) {
    Stop();
    return;
  }
  leaving_ = true;
  const uint64_t deadline_ms = options_.leave_deadline_ms;
  Schedule(deadline_ms, [this, deadline_ms] {
    if (stopped_) return;
    Log(LogLevel::kWarn, "the graceful leave did not finish within " + std::to_string(deadline_ms) +
                             " ms; stopping anyway");
    Stop();
  });
  leave_order_ = LeaveOrder();
  LeaveNext(0);
}

void NodeRuntime::LeaveNext(size_t k) {
  if (stopped_) return;
  if (k >= leave_order_.size()) {
    Log(LogLevel::kInfo, "left the ring; stopping");
    Stop();
    return;
  }
  const size_t index = leave_order_[k];
  if (nodes_.size() > 1) {
    Log(LogLevel::kInfo, "vnode " + nodes_[index]->self().addr + " leaves (" +
                             std::to_string(k + 1) + " of " + std::to_string(nodes_.size()) + ")");
  }
  nodes_[index]->Leave([this, k] {
    if (stopped_) return;
    // The next hand-off starts from a fresh loop callback, never inside this one.
    Schedule(0, [this, k] { LeaveNext(k + 1); });
  });
}

std::vector<size_t> NodeRuntime::LeaveOrder() const {
  std::vector<size_t> order(nodes_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [this](size_t a, size_t b) { return nodes_[b]->self().id < nodes_[a]->self().id; });
  auto is_sibling = [this](const NodeRef& n) {
    return std::any_of(nodes_.begin(), nodes_.end(),
                       [&n](const auto& node) { return node->self() == n; });
  };
  auto first = std::find_if(order.begin(), order.end(),
                            [&](size_t i) { return !is_sibling(nodes_[i]->successor()); });
  if (first != order.end()) std::rotate(order.begin(), first, order.end());
  return order;
}

void NodeRuntime::OnSignal(int signum) {
  if (leaving_) {
    Log(LogLevel::kWarn, std::string("received ") + SignalName(signum) +
                             " during the leave; stopping without finishing it");
    Stop();
    return;
  }
  Log(LogLevel::kInfo, std::string("received ") + SignalName(signum) + "; leaving the ring");
  Leave();
}

void NodeRuntime::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (listener_ != nullptr) {
    listener_->Close();
    listener_ = nullptr;
  }
  if (signals_ != nullptr) signals_->Close();
  if (metrics_ != nullptr) metrics_->Close();
  // Empty the maps first so that the close callbacks find nothing to report.
  auto inbound = std::move(inbound_);
  inbound_.clear();
  for (auto& [id, conn] : inbound) conn->Close();
  auto outbound = std::move(outbound_);
  outbound_.clear();
  for (auto& [addr, out] : outbound) out.conn->Close();
  if (timers_ != nullptr) timers_->Close();
}

void NodeRuntime::Shutdown() {
  Stop();
  nodes_.clear();  // may still Cancel or Log; both are harmless now
  vnode_envs_.clear();
  if (!loop_open_) return;
  uv_run(loop_.get(), UV_RUN_DEFAULT);  // runs the close callbacks
  const int rc = uv_loop_close(loop_.get());
  if (rc == 0) {
    loop_open_ = false;
    return;
  }
  uv_walk(
      loop_.get(),
      [](uv_handle_t* handle, void*) {
        spdlog::error("libuv handle still open at shutdown: {}",
                      uv_handle_type_name(uv_handle_get_type(handle)));
      },
      nullptr);
  spdlog::error("cannot close the event loop: {}", uv_strerror(rc));
  loop_.release();  // handles still point into it; leaking beats a use after free
  loop_open_ = false;
}

std::string NodeRuntime::RenderMetrics() {
  // Tombstones per vnode, in one scan of the shared store: a record belongs to the first
  // vnode of this process clockwise from its key id, as in ChordNode's accounting.
  std::vector<std::pair<Id, size_t>> ring;
  for (size_t i = 0; i < nodes_.size(); ++i) ring.emplace_back(nodes_[i]->self().id, i);
  std::sort(ring.begin(), ring.end());
  std::vector<uint64_t> tombstones(nodes_.size(), 0);
  if (!ring.empty()) {
    Status s = store_->Scan(Id(), Id(), [&](const Id& key_id, const wire::Record& rec) {
      if (!rec.deleted()) return true;
      auto it = std::lower_bound(ring.begin(), ring.end(), key_id,
                                 [](const auto& entry, const Id& id) { return entry.first < id; });
      if (it == ring.end()) it = ring.begin();
      ++tombstones[it->second];
      return true;
    });
    if (!s.ok()) Log(LogLevel::kWarn, "metrics: cannot count tombstones: " + s.message());
  }
  std::vector<VnodeMetricsSample> samples;
  samples.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const ChordNode& node = *nodes_[i];
    VnodeMetricsSample sample;
    sample.node = node.self().addr;
    sample.joined = node.joined();
    sample.keys = node.PrimaryKeyCount();
    sample.replica_keys = node.ReplicaKeyCount();
    sample.tombstones = tombstones[i];
    sample.counters = node.counters();
    sample.metrics = node.metrics();
    samples.push_back(std::move(sample));
  }
  return RenderPrometheusText(samples);
}

// --- Environment --------------------------------------------------------------------------

uint64_t NodeRuntime::NowMs() { return uv_now(loop_.get()); }

uint64_t NodeRuntime::WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

uint64_t NodeRuntime::Random() { return rng_(); }

void NodeRuntime::SendRequest(const std::string& ring_addr, const wire::Envelope& request) {
  if (stopped_ || timers_ == nullptr) return;
  const uint64_t request_id = request.request_id();
  auto split = SplitRingAddress(ring_addr);
  if (!split.ok()) {
    Log(LogLevel::kDebug, "cannot send to " + ring_addr + ": " + split.status().message());
    DeferSendFailed({request_id});
    return;
  }
  // Connections are per process: every vnode behind HOST:PORT shares one.
  const std::string& addr = split->process;
  const wire::Envelope* to_send = &request;
  wire::Envelope addressed;
  if (request.vnode() != split->vnode) {
    addressed = request;
    addressed.set_vnode(split->vnode);
    to_send = &addressed;
  }
  std::string frame;
  if (!EncodeFrame(*to_send, &frame, options_.max_frame_bytes)) {
    Log(LogLevel::kWarn, "dropping a request to " + ring_addr + ": it is larger than the " +
                             std::to_string(options_.max_frame_bytes) + "-byte frame limit");
    DeferSendFailed({request_id});
    return;
  }
  auto it = outbound_.find(addr);
  if (it == outbound_.end()) {
    auto sockaddr = ParseIpv4Address(addr);
    if (!sockaddr.ok()) {
      Log(LogLevel::kDebug, "cannot send to " + addr + ": " + sockaddr.status().message());
      DeferSendFailed({request_id});
      return;
    }
    std::string error;
    TcpConnection* conn =
        TcpConnection::Connect(loop_.get(), *sockaddr, addr, next_connection_id_++,
                               MakeConnectionOptions(options_), &error);
    if (conn == nullptr) {
      Log(LogLevel::kDebug, "cannot connect to " + addr + ": " + error);
      DeferSendFailed({request_id});
      return;
    }
    conn->SetCallbacks(
        [this, addr](TcpConnection*, const wire::Envelope& envelope) {
          OnOutboundFrame(addr, envelope);
        },
        [this, addr](TcpConnection* c, const Status& why) { OnOutboundClosed(addr, c, why); });
    it = outbound_.emplace(addr, Outbound{conn, {}}).first;
    if (LogEnabled(LogLevel::kDebug)) Log(LogLevel::kDebug, "connecting to " + addr);
  }
  it->second.in_flight[request_id] = NowMs();
  // If the write fails the connection closes, and its close callback reports every request
  // in flight on it, this one included.
  it->second.conn->Write(std::move(frame));
}

void NodeRuntime::SendReply(ReplyToken to, const wire::Envelope& reply) {
  if (stopped_) return;
  auto it = inbound_.find(to);
  if (it == inbound_.end()) return;  // the requester has gone away
  std::string frame;
  if (!EncodeFrame(reply, &frame, options_.max_frame_bytes)) {
    Log(LogLevel::kWarn, "dropping a reply to " + it->second->peer() + ": it is larger than the " +
                             std::to_string(options_.max_frame_bytes) + "-byte frame limit");
    return;
  }
  it->second->Write(std::move(frame));
}

TimerId NodeRuntime::Schedule(uint64_t delay_ms, std::function<void()> fn) {
  if (timers_ == nullptr) return 0;
  return timers_->Schedule(delay_ms, std::move(fn));
}

void NodeRuntime::Cancel(TimerId id) {
  if (timers_ != nullptr) timers_->Cancel(id);
}

void NodeRuntime::Log(LogLevel level, std::string_view message) {
  if (!LogEnabled(level)) return;
  if (message.find('\n') == std::string_view::npos) {
    spdlog::log(ToSpdlog(level), "{}", message);
    return;
  }
  std::string line(message);  // one line per message
  std::replace(line.begin(), line.end(), '\n', ' ');
  spdlog::log(ToSpdlog(level), "{}", line);
}

bool NodeRuntime::LogEnabled(LogLevel level) const {
  return spdlog::default_logger_raw()->should_log(ToSpdlog(level));
}

// --- connections --------------------------------------------------------------------------

void NodeRuntime::OnAccept(uv_stream_t* server) {
  std::string error;
  TcpConnection* conn =
      TcpConnection::Accept(server, next_connection_id_++, MakeConnectionOptions(options_), &error);
  if (conn == nullptr) {
    Log(LogLevel::kWarn, error);
    return;
  }
  if (stopped_) {
    conn->Close();
    return;
  }
  if (inbound_.size() >= options_.max_inbound_connections) {
    ++refused_since_log_;
    const uint64_t now = NowMs();
    if (last_refusal_log_ms_ == 0 || now - last_refusal_log_ms_ >= kRefusalLogIntervalMs) {
      Log(LogLevel::kWarn, "refused " + std::to_string(refused_since_log_) +
                               " connection(s), the latest from " + conn->peer() + ": already " +
                               std::to_string(inbound_.size()) + " open connections");
      last_refusal_log_ms_ = now;
      refused_since_log_ = 0;
    }
    conn->Close();
    return;
  }
  inbound_.emplace(conn->id(), conn);
  conn->SetCallbacks(
      [this](TcpConnection* c, const wire::Envelope& envelope) { OnInboundFrame(c, envelope); },
      [this](TcpConnection* c, const Status& why) { OnInboundClosed(c, why); });
  if (LogEnabled(LogLevel::kDebug)) {
    Log(LogLevel::kDebug,
        "accepted connection " + std::to_string(conn->id()) + " from " + conn->peer());
  }
}

void NodeRuntime::OnInboundFrame(TcpConnection* conn, const wire::Envelope& envelope) {
  if (stopped_ || nodes_.empty()) return;
  const uint32_t vnode = envelope.vnode();
  if (vnode >= nodes_.size()) {
    // Answered here; the connection stays open for the requester's other requests.
    const std::string error =
        "virtual node " + std::to_string(vnode) + " does not exist on " + options_.listen_addr +
        ", which runs " + std::to_string(nodes_.size()) +
        (nodes_.size() == 1 ? " node (address it without a #i suffix)"
                            : " vnodes (#0 to #" + std::to_string(nodes_.size() - 1) + ")");
    if (LogEnabled(LogLevel::kDebug)) Log(LogLevel::kDebug, "from " + conn->peer() + ": " + error);
    wire::Envelope reply;
    reply.set_request_id(envelope.request_id());
    reply.mutable_error()->set_code(wire::INVALID);
    reply.mutable_error()->set_error(error);
    SendReply(conn->id(), reply);
    return;
  }
  nodes_[vnode]->OnRequest(conn->id(), envelope);
}

void NodeRuntime::OnInboundClosed(TcpConnection* conn, const Status& why) {
  if (inbound_.erase(conn->id()) == 0) return;
  LogConnectionClosed("from", conn, why);
}

void NodeRuntime::OnOutboundFrame(const std::string& addr, const wire::Envelope& envelope) {
  if (stopped_) return;
  auto it = outbound_.find(addr);
  if (it != outbound_.end()) it->second.in_flight.erase(envelope.request_id());
  ChordNode* node = NodeForRequestId(envelope.request_id());
  if (node == nullptr) {
    if (LogEnabled(LogLevel::kDebug)) {
      Log(LogLevel::kDebug, "ignoring an answer from " + addr + " to request " +
                                std::to_string(envelope.request_id()) + ", which no vnode sent");
    }
    return;
  }
  node->OnResponse(envelope);
}

ChordNode* NodeRuntime::NodeForRequestId(uint64_t request_id) {
  const uint64_t index = request_id >> kVnodeRequestIdShift;
  return index < nodes_.size() ? nodes_[index].get() : nullptr;
}

void NodeRuntime::OnOutboundClosed(const std::string& addr, TcpConnection* conn,
                                   const Status& why) {
  auto it = outbound_.find(addr);
  if (it == outbound_.end() || it->second.conn != conn) return;
  std::vector<uint64_t> failed;
  failed.reserve(it->second.in_flight.size());
  for (const auto& [request_id, sent_ms] : it->second.in_flight) failed.push_back(request_id);
  outbound_.erase(it);  // the next request to addr dials again
  LogConnectionClosed("to", conn, why);
  if (!failed.empty()) {
    std::sort(failed.begin(), failed.end());
    DeferSendFailed(std::move(failed));
  }
}

void NodeRuntime::DeferSendFailed(std::vector<uint64_t> request_ids) {
  if (stopped_) return;
  Schedule(0, [this, ids = std::move(request_ids)] {
    for (uint64_t id : ids) {
      if (stopped_) return;
      if (ChordNode* node = NodeForRequestId(id)) node->OnSendFailed(id);
    }
  });
}

void NodeRuntime::SweepConnections() {
  if (stopped_) return;
  const uint64_t now = NowMs();
  const uint64_t idle_ms = options_.idle_timeout_ms;
  // Dialed connections give up first, so that a peer rarely closes one under a new request.
  const uint64_t outbound_idle_ms = idle_ms / 2;
  const NodeConfig& c = options_.node;
  const uint64_t forget_ms = std::max<uint64_t>(
      60'000, 2 * std::max({c.rpc_timeout_ms, c.transfer_timeout_ms, c.data_deadline_ms}));

  std::vector<TcpConnection*> idle;
  for (const auto& [id, conn] : inbound_) {
    if (now - conn->last_activity_ms() >= idle_ms) idle.push_back(conn);
  }
  for (auto& [addr, out] : outbound_) {
    uint64_t oldest_ms = now;
    for (auto it = out.in_flight.begin(); it != out.in_flight.end();) {
      if (now - it->second >= forget_ms) {
        it = out.in_flight.erase(it);  // long timed out in the core
      } else {
        oldest_ms = std::min(oldest_ms, it->second);
        ++it;
      }
    }
    // Nothing heard for a while, and nothing asked recently that could still be answered.
    const bool quiet = now - out.conn->last_read_ms() >= outbound_idle_ms;
    const bool unanswered = now - oldest_ms >= outbound_idle_ms;
    if (quiet && (out.in_flight.empty() || unanswered)) idle.push_back(out.conn);
  }
  for (TcpConnection* conn : idle) {
    if (LogEnabled(LogLevel::kDebug)) {
      Log(LogLevel::kDebug,
          "closing idle connection " + std::to_string(conn->id()) + " (" + conn->peer() + ")");
    }
    conn->Close();
  }

  const uint64_t sweep_ms = std::clamp<uint64_t>(idle_ms / 8, 10, 15'000);
  Schedule(sweep_ms, [this] { SweepConnections(); });
}

void NodeRuntime::LogConnectionClosed(std::string_view direction, const TcpConnection* conn,
                                      const Status& why) {
  const LogLevel level =
      why.code() == Status::Code::kInvalidArgument || why.code() == Status::Code::kAborted
          ? LogLevel::kWarn
          : LogLevel::kDebug;
  if (!LogEnabled(level)) return;
  std::string message = "closed connection " + std::to_string(conn->id()) + " " +
                        std::string(direction) + " " + conn->peer();
  if (!why.ok()) message += ": " + why.message();
  Log(level, message);
}

}  // namespace chord
