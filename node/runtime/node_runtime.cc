#include "node/runtime/node_runtime.h"

#include <uv.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "node/runtime/loop_service.h"
#include "node/runtime/net_address.h"
#include "node/runtime/prometheus_text.h"
#include "node/runtime/read_backlog.h"
#include "node/runtime/signal_watcher.h"
#include "node/runtime/tcp_connection.h"
#include "node/runtime/tcp_listener.h"
#include "node/runtime/timer_queue.h"
#include "node/runtime/write_gather.h"
#include "node/storage/memory_store.h"
#include "protocol/ring_address.h"
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

TcpConnection::Options MakeConnectionOptions(const RuntimeOptions& options, const TlsContext* tls,
                                             ByteBudget* input, ByteBudget* output,
                                             ByteBudget* member_input, ByteBudget* member_output,
                                             WriteGather* gather, ReadBacklog* backlog) {
  TcpConnection::Options out;
  out.max_frame_bytes = options.max_frame_bytes;
  out.client_max_frame_bytes = options.client_max_frame_bytes;
  out.max_queued_bytes = options.max_queued_bytes;
  out.tls = tls;
  out.input_budget = input;
  out.output_budget = output;
  out.member_input_budget = member_input;
  out.member_output_budget = member_output;
  out.gather = gather;
  out.backlog = backlog;
  return out;
}

// "A.B.C.D" of "A.B.C.D:PORT".
std::string HostOf(const std::string& peer) { return peer.substr(0, peer.rfind(':')); }

}  // namespace

NodeRuntime::NodeRuntime(RuntimeOptions options, Store* store)
    : options_(std::move(options)),
      store_(store),
      loop_(std::make_unique<uv_loop_t>()),
      input_budget_(options_.max_buffered_input_bytes),
      output_budget_(options_.max_buffered_output_bytes),
      member_input_budget_(options_.max_buffered_input_bytes),
      member_output_budget_(options_.max_buffered_output_bytes) {
  if (store_ == nullptr) {
    owned_store_ = std::make_unique<MemoryStore>();
    store_ = owned_store_.get();
  }
  ledger_ = std::make_unique<LedgerStore>(store_);
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
  for (const std::string& join : options_.join_addrs) {
    auto ring_addr = SplitRingAddress(join);
    if (!ring_addr.ok()) return ring_addr.status();
    auto join_addr = ParseIpv4Address(ring_addr->process);
    if (!join_addr.ok()) return join_addr.status();
  }
  if (!IsCanonicalRingAddress(options_.listen_addr)) {
    return Status::InvalidArgument("--listen " + options_.listen_addr +
                                   " is not written canonically; give it as A.B.C.D:PORT "
                                   "without leading zeros");
  }
  if (!options_.tls.empty()) {
    auto tls = TlsContext::Create(options_.tls);
    if (!tls.ok()) return tls.status();
    tls_ = std::move(tls).value();
    const PeerIdentity& own = tls_->own();
    if (own.role != Sender::Role::kMember || own.member_addr != options_.listen_addr) {
      return Status::InvalidArgument(
          "the certificate " + options_.tls.cert + " is not a member certificate for " +
          options_.listen_addr +
          (own.role == Sender::Role::kMember ? " (it names " + own.member_addr + ")"
                                             : std::string()) +
          "; make one with scripts/certs.sh member DIR " + options_.listen_addr);
    }
    if (own.vnodes != static_cast<uint32_t>(options_.vnodes)) {
      return Status::InvalidArgument(
          "the certificate " + options_.tls.cert + " names " + std::to_string(own.vnodes) +
          " ring position(s), not --vnodes " + std::to_string(options_.vnodes) +
          "; make one with scripts/certs.sh member DIR " + options_.listen_addr + " --vnodes " +
          std::to_string(options_.vnodes));
    }
  }

  timers_ = std::make_unique<TimerQueue>();
  Status s = timers_->Init(loop_.get());
  if (!s.ok()) return s;
  gather_ = std::make_unique<WriteGather>();
  s = gather_->Start(loop_.get());
  if (!s.ok()) return s;
  backlog_ = std::make_unique<ReadBacklog>();
  s = backlog_->Start(loop_.get());
  if (!s.ok()) return s;

  auto listener = TcpListener::Listen(
      loop_.get(), *listen_addr, options_.listen_addr,
      [this](uv_stream_t* server) { OnAccept(server); },
      [this](const std::string& error) { Log(LogLevel::kWarn, error); });
  if (!listener.ok()) return listener.status();
  listener_ = *listener;

  if (options_.handle_signals) {
    signals_ = std::make_unique<SignalWatcher>([this](int signum) { OnSignal(signum); });
    for (int signum : {SIGTERM, SIGINT}) {
      s = signals_->Watch(loop_.get(), signum);
      if (!s.ok()) return s;
    }
    // A peer that goes away mid-write must not kill the process.
    std::signal(SIGPIPE, SIG_IGN);
  }

  const int count = options_.vnodes;
  std::vector<NodeRef> refs;
  for (int i = 0; i < count; ++i) {
    refs.push_back(NodeRef::ForAddress(VnodeAddress(options_.listen_addr, count, i)));
  }
  std::random_device device;
  for (int i = 0; i < count; ++i) {
    const uint64_t seed = (uint64_t{device()} << 32) ^ device();
    Vnode v;
    v.node = std::make_unique<ChordNode>(ledger_.get(), options_.node, refs[i], seed, refs);
    // The vnodes share the process's connections: its budgets of requests under way are
    // theirs together.
    v.node->ShareBudgets(&coordinated_budget_, &owned_budget_);
    v.node->ShareExpiryRefusals(&expiry_refusals_);
    v.node->SharePaces(&pace_, &pull_pace_);
    v.node->SetProcessStats(&process_stats_);
    v.log_prefix = count == 1 ? "" : "[#" + std::to_string(i) + "] ";
    vnodes_.push_back(std::move(v));
  }
  Step(0, [this](ChordNode& n, const Clock& now) { n.Start(now, options_.join_addrs); });
  // A new ring grows through vnode 0; otherwise every vnode joins the way vnode 0 does. Joins
  // are retried by the nodes themselves, so they may all start at once.
  const std::vector<std::string> others_join =
      options_.join_addrs.empty() ? std::vector<std::string>{refs[0].addr} : options_.join_addrs;
  for (size_t i = 1; i < vnodes_.size(); ++i) {
    Step(i, [&others_join](ChordNode& n, const Clock& now) { n.Start(now, others_join); });
  }
  SweepConnections();
  return Status::Ok();
}

void NodeRuntime::Run() {
  if (started_ && loop_open_ && !stopped_) uv_run(loop_.get(), UV_RUN_DEFAULT);
  Shutdown();
}

// --- driving the cores --------------------------------------------------------------------

Clock NodeRuntime::Now() const {
  Clock c;
  // Read afresh for every input, not the loop's time (uv_now, read once per turn): a process
  // stopped within a turn (SIGSTOP after epoll_wait returned) would hand what it then reads an
  // old time, and ReplicaReads decides on the age of answers. The loop's own time is left
  // alone (moving it inside a timer callback would let due timers run on without polling).
  // Same clock as uv_now, so the wake timers armed against it agree.
  c.mono_ms = uv_hrtime() / 1'000'000;
  c.wall_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
  return c;
}

void NodeRuntime::CarryOut(size_t i, Ready ready) {
  const std::string& prefix = vnodes_[i].log_prefix;
  for (const Ready::Log& line : ready.logs) {
    if (!LogEnabled(line.level)) continue;
    Log(line.level, prefix.empty() ? line.text : prefix + line.text);
  }
  for (const Ready::Reply& reply : ready.replies) SendReply(reply.to, reply.envelope);
  // Stalled connections go before this step's requests are written: a request sent again
  // after a timeout (the core asks a slow successor twice) dials afresh instead of going
  // down with the connection that stalled.
  DropStalled(i, ready.expired);
  for (size_t k = 0; k < ready.requests.size(); ++k) {
    SendRequest(i, ready.requests[k].to, ready.Outgoing(k));
  }
  ArmWake(i, ready.wake_at_ms);
  if (ready.left && leaving_) {
    // The next hand-off starts from a fresh loop callback, never inside this one.
    const size_t next = leaving_index_ + 1;
    Schedule(0, [this, next] { LeaveNext(next); });
  }
}

void NodeRuntime::ArmWake(size_t i, const std::optional<uint64_t>& wake_at_ms) {
  if (stopped_) return;
  Vnode& v = vnodes_[i];
  if (!wake_at_ms) {
    if (v.wake_timer != 0) timers_->Cancel(v.wake_timer);
    v.wake_timer = 0;
    return;
  }
  if (v.wake_timer != 0 && v.wake_at_ms == *wake_at_ms) return;  // armed for that already
  if (v.wake_timer != 0) timers_->Cancel(v.wake_timer);
  const uint64_t now = uv_now(loop_.get());
  v.wake_at_ms = *wake_at_ms;
  v.wake_timer = Schedule(*wake_at_ms > now ? *wake_at_ms - now : 0, [this, i] {
    vnodes_[i].wake_timer = 0;
    Step(i, [](ChordNode& n, const Clock& now) { n.Tick(now); });
  });
}

// --- leaving ------------------------------------------------------------------------------

void NodeRuntime::Leave() {
  if (stopped_ || leaving_) return;
  if (vnodes_.empty()) {
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
  leaving_index_ = k;
  const size_t index = leave_order_[k];
  if (vnodes_.size() > 1) {
    Log(LogLevel::kInfo, "vnode " + vnodes_[index].node->self().addr + " leaves (" +
                             std::to_string(k + 1) + " of " + std::to_string(vnodes_.size()) + ")");
  }
  Step(index, [](ChordNode& n, const Clock& now) { n.Leave(now); });
}

std::vector<size_t> NodeRuntime::LeaveOrder() const {
  std::vector<size_t> order(vnodes_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [this](size_t a, size_t b) {
    return vnodes_[b].node->self().id < vnodes_[a].node->self().id;
  });
  auto is_sibling = [this](const NodeRef& n) {
    return std::any_of(vnodes_.begin(), vnodes_.end(),
                       [&n](const Vnode& v) { return v.node->self() == n; });
  };
  auto first = std::find_if(order.begin(), order.end(),
                            [&](size_t i) { return !is_sibling(vnodes_[i].node->successor()); });
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
  for (auto& service : services_) service->Close();
  // Requests of local callers will not be answered now; their services were just closed.
  local_calls_.clear();
  // Empty the maps first so that the close callbacks find nothing to report.
  auto inbound = std::move(inbound_);
  inbound_.clear();
  for (auto& [id, in] : inbound) in.conn->Close();
  per_host_.clear();
  reserved_in_use_ = 0;
  unproven_per_host_.clear();
  auto outbound = std::move(outbound_);
  outbound_.clear();
  for (auto& [addr, out] : outbound) out.conn->Close();
  if (timers_ != nullptr) timers_->Close();
  if (gather_ != nullptr) gather_->Close();
  if (backlog_ != nullptr) backlog_->Close();
}

void NodeRuntime::Shutdown() {
  Stop();
  vnodes_.clear();
  if (!loop_open_) return;
  uv_run(loop_.get(), UV_RUN_DEFAULT);  // runs the close callbacks
  if (!services_.empty()) {
    services_.clear();  // their destructors may close handles of their own
    uv_run(loop_.get(), UV_RUN_DEFAULT);
  }
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
  // Tombstones per vnode from the shared store's ledger: a record belongs to the first vnode
  // of this process clockwise from its key id, as in the core's accounting.
  std::vector<std::pair<Id, size_t>> ring;
  for (size_t i = 0; i < vnodes_.size(); ++i) ring.emplace_back(vnodes_[i].node->self().id, i);
  std::sort(ring.begin(), ring.end());
  std::vector<uint64_t> tombstones(vnodes_.size(), 0);
  for (size_t k = 0; k < ring.size(); ++k) {
    const Id& from = ring[k == 0 ? ring.size() - 1 : k - 1].first;
    auto t = ledger_->Tally(from, ring[k].first);
    if (!t.ok()) {
      Log(LogLevel::kWarn, "metrics: cannot count tombstones: " + t.status().message());
      break;
    }
    tombstones[ring[k].second] = t->tombstones;
  }
  std::vector<VnodeMetricsSample> samples;
  samples.reserve(vnodes_.size());
  for (size_t i = 0; i < vnodes_.size(); ++i) {
    const ChordNode& node = *vnodes_[i].node;
    VnodeMetricsSample sample;
    sample.node = node.self().addr;
    sample.joined = node.joined();
    if (Result<NodeStatus::KeyCounts> counts = node.KeyCounts(); counts.ok()) {
      sample.keys = counts->primary;
      sample.replica_keys = counts->replica;
    } else {
      sample.store_readable = false;
      Log(LogLevel::kWarn, "metrics: cannot count keys: " + counts.status().message());
    }
    sample.tombstones = tombstones[i];
    sample.counters = node.counters();
    sample.metrics = node.metrics();
    samples.push_back(std::move(sample));
  }
  return RenderPrometheusText(samples) + RenderProcessMetricsText(process_stats_.Sample()) +
         RenderStoreMetricsText(store_->FreeHeldBytes());
}

// --- messages -----------------------------------------------------------------------------

void NodeRuntime::SendRequest(size_t i, const std::string& ring_addr, wire::Envelope& request) {
  if (stopped_ || timers_ == nullptr) return;
  const InFlight sent{i, request.request_id(), uv_now(loop_.get())};
  auto split = SplitRingAddress(ring_addr);
  if (!split.ok()) {
    Log(LogLevel::kDebug, "cannot send to " + ring_addr + ": " + split.status().message());
    return DeferSendFailed({sent});
  }
  // Connections are per process: every vnode behind HOST:PORT shares one. The request leaves
  // under an id of the runtime's, addressed to the right vnode of that process.
  const std::string& addr = split->process;
  const uint64_t wire_id = next_request_id_++;
  request.set_request_id(wire_id);
  request.set_vnode(split->vnode);
  std::string frame;
  if (!EncodeFrame(request, &frame, options_.max_frame_bytes)) {
    Log(LogLevel::kWarn, "dropping a request to " + ring_addr + ": it is larger than the " +
                             std::to_string(options_.max_frame_bytes) + "-byte frame limit");
    return DeferSendFailed({sent});
  }
  auto it = outbound_.find(addr);
  if (it == outbound_.end()) {
    auto sockaddr = ParseIpv4Address(addr);
    if (!sockaddr.ok()) {
      Log(LogLevel::kDebug, "cannot send to " + addr + ": " + sockaddr.status().message());
      return DeferSendFailed({sent});
    }
    std::string error;
    TcpConnection* conn = TcpConnection::Connect(
        loop_.get(), *sockaddr, addr, next_connection_id_++,
        MakeConnectionOptions(options_, tls_.get(), &input_budget_, &output_budget_,
                              &member_input_budget_, &member_output_budget_, gather_.get(),
                              backlog_.get()),
        &error);
    if (conn == nullptr) {
      Log(LogLevel::kDebug, "cannot connect to " + addr + ": " + error);
      return DeferSendFailed({sent});
    }
    conn->SetCallbacks(
        [this, addr](TcpConnection*, wire::Envelope&& envelope) {
          OnOutboundFrame(addr, std::move(envelope));
        },
        [this, addr](TcpConnection* c, const Status& why) { OnOutboundClosed(addr, c, why); });
    it = outbound_.emplace(addr, Outbound{conn, uv_now(loop_.get()), {}}).first;
    if (LogEnabled(LogLevel::kDebug)) Log(LogLevel::kDebug, "connecting to " + addr);
  }
  it->second.in_flight[wire_id] = sent;
  sent_to_[sent.core_id * kMaxVnodesPerProcess + i] = {addr, wire_id};
  // If the write fails the connection closes, and its close callback reports every request
  // in flight on it, this one included.
  it->second.conn->Write(std::move(frame));
}

void NodeRuntime::AddService(std::unique_ptr<LoopService> service) {
  if (stopped_) service->Close();
  services_.push_back(std::move(service));
}

uint64_t NodeRuntime::SubmitLocal(const wire::Envelope& request, const Sender& sender,
                                  LocalReplyFn on_reply) {
  if (stopped_ || vnodes_.empty()) return 0;
  const uint64_t token = next_local_token_++;
  local_calls_.emplace(token, std::move(on_reply));
  Step(0, [token, &request, &sender](ChordNode& n, const Clock& now) {
    n.OnRequest(now, token, wire::Envelope(request), sender);
  });
  return token;
}

void NodeRuntime::SendReply(uint64_t to, const wire::Envelope& reply) {
  if (stopped_) return;
  if (to >= kLocalTokenBase) {
    auto local = local_calls_.find(to);
    if (local == local_calls_.end()) return;  // the local caller gave up
    LocalReplyFn fn = std::move(local->second);
    local_calls_.erase(local);
    fn(reply);
    return;
  }
  auto it = inbound_.find(to);
  if (it == inbound_.end()) return;  // the requester has gone away
  TcpConnection* conn = it->second.conn;
  if (it->second.unanswered > 0) --it->second.unanswered;
  const bool last = it->second.input_ended && it->second.unanswered == 0;
  bool too_large = false;
  conn->WriteEnvelope(reply, options_.max_frame_bytes, &too_large);  // may close it
  if (too_large) {
    Log(LogLevel::kWarn, "dropping a reply to " + conn->peer() + ": it is larger than the " +
                             std::to_string(options_.max_frame_bytes) + "-byte frame limit");
  }
  if (last) conn->CloseWhenWritten();
}

void NodeRuntime::OnInboundEnded(TcpConnection* conn) {
  auto it = inbound_.find(conn->id());
  if (it == inbound_.end()) return;
  it->second.input_ended = true;
  if (it->second.unanswered == 0) conn->CloseWhenWritten();
}

uint64_t NodeRuntime::Schedule(uint64_t delay_ms, std::function<void()> fn) {
  if (timers_ == nullptr) return 0;
  return timers_->Schedule(delay_ms, std::move(fn));
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
  TcpConnection* conn = TcpConnection::Accept(
      server, next_connection_id_++,
      MakeConnectionOptions(options_, tls_.get(), &input_budget_, &output_budget_,
                            &member_input_budget_, &member_output_budget_, gather_.get(),
                            backlog_.get()),
      &error);
  if (conn == nullptr) {
    Log(LogLevel::kWarn, error);
    return;
  }
  if (stopped_) {
    conn->Close();
    return;
  }
  const std::string host = HostOf(conn->peer());
  bool reserved = false;
  if (std::string why = RefusalFor(host, &reserved); !why.empty()) {
    LogRefusal(conn->peer(), why);
    conn->Close();
    return;
  }
  inbound_.emplace(conn->id(),
                   Inbound{conn, host, uv_now(loop_.get()), reserved, reserved, std::nullopt});
  ++per_host_[host];
  if (reserved) {
    ++reserved_in_use_;
    ++unproven_per_host_[host];
  }
  auto on_frame = [this](TcpConnection* c, wire::Envelope&& envelope) {
    OnInboundFrame(c, std::move(envelope));
  };
  conn->SetCallbacks(on_frame,
                     [this](TcpConnection* c, const Status& why) { OnInboundClosed(c, why); });
  conn->SetEndOfInputCallback([this](TcpConnection* c) { OnInboundEnded(c); });
  if (reserved) {
    conn->SetEstablishedCallback([this](TcpConnection* c) { OnReservedEstablished(c); });
  }
  if (LogEnabled(LogLevel::kDebug)) {
    Log(LogLevel::kDebug,
        "accepted connection " + std::to_string(conn->id()) + " from " + conn->peer());
  }
}

std::string NodeRuntime::RefusalFor(const std::string& host, bool* reserved) const {
  *reserved = false;
  if (inbound_.size() >= options_.max_inbound_connections) {
    return "already " + std::to_string(inbound_.size()) + " open connections";
  }
  auto it = per_host_.find(host);
  if (it != per_host_.end() && it->second >= options_.max_connections_per_host) {
    return "already " + std::to_string(it->second) + " open connections from " + host;
  }
  if (tls_ != nullptr) {
    const size_t reserve =
        std::min(options_.member_reserved_connections, options_.max_inbound_connections);
    const size_t open_to_all = options_.max_inbound_connections - reserve;
    *reserved = inbound_.size() - reserved_in_use_ >= open_to_all;
    auto unproven = unproven_per_host_.find(host);
    if (*reserved && unproven != unproven_per_host_.end() &&
        unproven->second >= options_.unproven_reserved_per_host) {
      return "only the places kept for members are left, and " + std::to_string(unproven->second) +
             " connections from " + host + " in them have not yet shown themselves members";
    }
  }
  return "";
}

void NodeRuntime::OnReservedEstablished(TcpConnection* conn) {
  auto it = inbound_.find(conn->id());
  if (it == inbound_.end()) return;
  const PeerIdentity* peer = conn->peer_identity();
  if (peer == nullptr || peer->role != Sender::Role::kMember) {
    conn->Close(Status::Aborted(
        "only members may use the connections kept for members, and this one is not"));
    return;
  }
  ForgetUnproven(it->second);
}

void NodeRuntime::ForgetUnproven(Inbound& in) {
  if (!in.unproven) return;
  in.unproven = false;
  auto host = unproven_per_host_.find(in.host);
  if (host != unproven_per_host_.end() && --host->second == 0) unproven_per_host_.erase(host);
}

void NodeRuntime::LogRefusal(const std::string& peer, const std::string& why) {
  ++refused_since_log_;
  const uint64_t now = uv_now(loop_.get());
  if (last_refusal_log_ms_ == 0 || now - last_refusal_log_ms_ >= kRefusalLogIntervalMs) {
    Log(LogLevel::kWarn, "refused " + std::to_string(refused_since_log_) +
                             " connection(s), the latest from " + peer + ": " + why);
    last_refusal_log_ms_ = now;
    refused_since_log_ = 0;
  }
}

Sender NodeRuntime::SenderOf(const TcpConnection* conn) const {
  if (tls_ == nullptr) return Sender{};  // insecure mode: everyone is trusted
  const PeerIdentity* peer = conn->peer_identity();
  return peer == nullptr ? Sender::Client(Sender::Role::kNobody) : peer->ToSender();
}

void NodeRuntime::OnInboundFrame(TcpConnection* conn, wire::Envelope&& envelope) {
  if (stopped_ || vnodes_.empty()) return;
  auto in = inbound_.find(conn->id());
  if (in == inbound_.end()) return;
  // Frames arrive only after the handshake, so who the peer is is known by the first one;
  // it is worked out once per connection, not per request.
  if (!in->second.sender) in->second.sender = SenderOf(conn);
  ++in->second.unanswered;  // every request is answered once (SendReply)
  const Sender sender = *in->second.sender;
  const uint32_t vnode = envelope.vnode();
  if (vnode >= vnodes_.size()) {
    // Answered here; the connection stays open for the requester's other requests.
    const std::string error =
        "virtual node " + std::to_string(vnode) + " does not exist on " + options_.listen_addr +
        ", which runs " + std::to_string(vnodes_.size()) +
        (vnodes_.size() == 1 ? " node (address it without a #i suffix)"
                             : " vnodes (#0 to #" + std::to_string(vnodes_.size() - 1) + ")");
    if (LogEnabled(LogLevel::kDebug)) Log(LogLevel::kDebug, "from " + conn->peer() + ": " + error);
    wire::Envelope reply;
    reply.set_request_id(envelope.request_id());
    reply.mutable_error()->set_code(wire::INVALID);
    reply.mutable_error()->set_error(error);
    SendReply(conn->id(), reply);
    return;
  }
  const uint64_t from = conn->id();
  Step(vnode, [from, &envelope, &sender](ChordNode& n, const Clock& now) {
    n.OnRequest(now, from, std::move(envelope), sender);
  });
}

void NodeRuntime::OnInboundClosed(TcpConnection* conn, const Status& why) {
  auto it = inbound_.find(conn->id());
  if (it == inbound_.end()) return;
  if (it->second.reserved) --reserved_in_use_;
  ForgetUnproven(it->second);
  auto host = per_host_.find(it->second.host);
  if (host != per_host_.end() && --host->second == 0) per_host_.erase(host);
  inbound_.erase(it);
  LogConnectionClosed("from", conn, why);
}

void NodeRuntime::OnOutboundFrame(const std::string& addr, wire::Envelope&& envelope) {
  if (stopped_) return;
  auto it = outbound_.find(addr);
  if (it == outbound_.end()) return;
  auto sent = it->second.in_flight.find(envelope.request_id());
  if (sent == it->second.in_flight.end()) {
    if (LogEnabled(LogLevel::kDebug)) {
      Log(LogLevel::kDebug, "ignoring an answer from " + addr + " to request " +
                                std::to_string(envelope.request_id()) + ", which no vnode sent");
    }
    return;
  }
  const InFlight request = sent->second;
  it->second.in_flight.erase(sent);
  sent_to_.erase(request.core_id * kMaxVnodesPerProcess + request.vnode);
  envelope.set_request_id(request.core_id);
  Step(request.vnode, [&envelope](ChordNode& n, const Clock& now) { n.OnResponse(now, envelope); });
}

void NodeRuntime::OnOutboundClosed(const std::string& addr, TcpConnection* conn,
                                   const Status& why) {
  auto it = outbound_.find(addr);
  if (it == outbound_.end() || it->second.conn != conn) return;
  std::vector<std::pair<uint64_t, InFlight>> failed(it->second.in_flight.begin(),
                                                    it->second.in_flight.end());
  outbound_.erase(it);  // the next request to addr dials again
  LogConnectionClosed("to", conn, why);
  if (failed.empty()) return;
  std::sort(failed.begin(), failed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<InFlight> requests;
  for (auto& [wire_id, request] : failed) {
    sent_to_.erase(request.core_id * kMaxVnodesPerProcess + request.vnode);
    requests.push_back(request);
  }
  DeferSendFailed(std::move(requests));
}

void NodeRuntime::DropStalled(size_t i, const std::vector<uint64_t>& expired) {
  for (uint64_t core_id : expired) {
    auto where = sent_to_.find(core_id * kMaxVnodesPerProcess + i);
    if (where == sent_to_.end()) continue;
    const auto [addr, wire_id] = where->second;
    sent_to_.erase(where);
    auto out = outbound_.find(addr);
    if (out == outbound_.end()) continue;
    auto request = out->second.in_flight.find(wire_id);
    if (request == out->second.in_flight.end()) continue;
    const uint64_t sent_ms = request->second.sent_ms;
    out->second.in_flight.erase(request);
    if (out->second.conn->last_read_ms() > sent_ms) continue;  // it answers other requests
    out->second.conn->Abort(
        Status::Aborted("a request to it timed out and nothing has come back since; what was "
                        "still queued for it is discarded"));
  }
}

void NodeRuntime::DeferSendFailed(std::vector<InFlight> requests) {
  if (stopped_) return;
  Schedule(0, [this, requests = std::move(requests)] {
    for (const InFlight& r : requests) {
      if (stopped_) return;
      const uint64_t id = r.core_id;
      Step(r.vnode, [id](ChordNode& n, const Clock& now) { n.OnSendFailed(now, id); });
    }
  });
}

void NodeRuntime::SweepConnections() {
  if (stopped_) return;
  const uint64_t now = uv_now(loop_.get());
  const uint64_t idle_ms = options_.idle_timeout_ms;
  // Dialed connections give up first, so that a peer rarely closes one under a new request.
  const uint64_t outbound_idle_ms = idle_ms / 2;
  const NodeConfig& c = options_.node;
  const uint64_t forget_ms = std::max<uint64_t>(
      60'000, 2 * std::max({c.rpc_timeout_ms, c.transfer_timeout_ms, c.data_deadline_ms}));

  // Why a connection opened at `opened_ms` is too slow to keep, whichever side dialed: a
  // frame or a TLS handshake that bytes dribble into does not complete in time.
  const auto too_slow = [&](const TcpConnection* conn, uint64_t opened_ms) -> std::string {
    const uint64_t deadline_ms = options_.frame_deadline_ms;
    if (conn->partial_since_ms() != 0 && now - conn->partial_since_ms() >= deadline_ms) {
      return "a frame did not complete within " + std::to_string(deadline_ms) + " ms";
    }
    if (tls_ != nullptr && conn->peer_identity() == nullptr && now - opened_ms >= deadline_ms) {
      return "no TLS handshake within " + std::to_string(deadline_ms) + " ms";
    }
    return "";
  };

  std::vector<std::pair<TcpConnection*, std::string>> closing;
  for (const auto& [id, in] : inbound_) {
    // Idle is measured in whole frames: a client that dribbles bytes is idle all the same.
    if (now - in.conn->last_frame_ms() >= idle_ms) {
      closing.emplace_back(in.conn, "idle");
    } else if (std::string why = too_slow(in.conn, in.accepted_ms); !why.empty()) {
      closing.emplace_back(in.conn, std::move(why));
    }
  }
  for (auto& [addr, out] : outbound_) {
    if (std::string why = too_slow(out.conn, out.dialed_ms); !why.empty()) {
      closing.emplace_back(out.conn, std::move(why));
      continue;
    }
    uint64_t oldest_ms = now;
    for (auto it = out.in_flight.begin(); it != out.in_flight.end();) {
      if (now - it->second.sent_ms >= forget_ms) {
        sent_to_.erase(it->second.core_id * kMaxVnodesPerProcess + it->second.vnode);
        it = out.in_flight.erase(it);  // long timed out in the core
      } else {
        oldest_ms = std::min(oldest_ms, it->second.sent_ms);
        ++it;
      }
    }
    // Nothing heard for a while, and nothing asked recently that could still be answered.
    const bool quiet = now - out.conn->last_read_ms() >= outbound_idle_ms;
    const bool unanswered = now - oldest_ms >= outbound_idle_ms;
    if (quiet && (out.in_flight.empty() || unanswered)) closing.emplace_back(out.conn, "idle");
  }
  for (const auto& [conn, why] : closing) {
    if (why == "idle") {
      if (LogEnabled(LogLevel::kDebug)) {
        Log(LogLevel::kDebug,
            "closing idle connection " + std::to_string(conn->id()) + " (" + conn->peer() + ")");
      }
      conn->Close();
    } else {
      conn->Close(Status::Aborted(why));
    }
  }

  const uint64_t sweep_ms =
      std::clamp<uint64_t>(std::min(idle_ms / 8, options_.frame_deadline_ms / 4), 10, 15'000);
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
