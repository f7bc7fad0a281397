// NodeRuntime: drives the ChordNodes of one process on a libuv loop: one node, or V virtual
// nodes ("HOST:PORT#i", i = 0..V-1) that share one Store and one listener. It is the cores'
// driver: it feeds each node its inputs with the loop's clock (requests from a listener whose
// accepted connections carry requests to the vnode named by each envelope's `vnode`; answers
// from one lazily dialed, multiplexed connection per peer process; send failures; a Tick when
// the node's next deadline is due) and carries out what each node's Ready asks: requests,
// replies, log lines. Vnode routing is the runtime's alone: requests leave under request ids
// of the runtime's own, and each answer is handed back to the vnode that asked under the id
// that vnode chose. SIGTERM/SIGINT start a graceful leave (one vnode at a time, then stop; a
// second signal stops at once). Other services on the same loop (the HTTP API, node/http) are
// added with AddService and reach vnode 0 as a local client through SubmitLocal.
//
// Usage: construct, Start(), Run() (returns when the nodes have stopped), destroy. Every
// method must be called on the loop thread (the thread that calls Run). This header does not
// expose libuv.
#ifndef CHORD_NODE_RUNTIME_NODE_RUNTIME_H_
#define CHORD_NODE_RUNTIME_NODE_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "node/core/chord_node.h"
#include "node/core/node_config.h"
#include "node/core/ready.h"
#include "node/runtime/byte_budget.h"
#include "node/runtime/process_stats.h"
#include "node/storage/ledger_store.h"
#include "node/storage/store.h"
#include "protocol/base/status.h"
#include "protocol/frame.h"
#include "protocol/sender.h"
#include "protocol/tls_context.h"

struct uv_loop_s;
struct uv_stream_s;

namespace chord {

class LoopService;
class ReadBacklog;
class SignalWatcher;
class TcpConnection;
class WriteGather;
class TcpListener;
class TimerQueue;

struct RuntimeOptions {
  std::string listen_addr;              // HOST:PORT to bind; also the address advertised to peers
  std::vector<std::string> join_addrs;  // ring members to join through; empty: a new ring
  int vnodes = 1;                       // ring positions of this process, 1..kMaxVnodesPerProcess
  NodeConfig node;                      // every vnode's config
  uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
  // Accepted connections with no traffic for this long are closed. Dialed connections are
  // closed after half of it once nothing is in flight, so the dialing side closes first.
  uint64_t idle_timeout_ms = 120'000;
  size_t max_inbound_connections = 4096;
  size_t max_queued_bytes = size_t{64} << 20;  // per connection; a peer over it is dropped
  uint64_t leave_deadline_ms = 10'000;         // a graceful leave stops anyway after this
  bool handle_signals = true;                  // SIGTERM/SIGINT start a graceful leave

  // Mutual TLS: this member's certificate (it must name listen_addr and at least `vnodes`
  // ring positions), its key and the cluster CA. All empty: plain TCP, where every sender is
  // trusted (insecure mode).
  TlsFiles tls;
  // Frames from clients (TLS only: a plain connection cannot be told apart from a member).
  uint32_t client_max_frame_bytes = uint32_t{2} << 20;
  // Node-wide caps: bytes of frames that have begun to arrive but are not complete, and bytes
  // of output waiting for peers to read them. A connection that would pass one is closed.
  // With TLS, members have caps of the same sizes of their own.
  size_t max_buffered_input_bytes = size_t{256} << 20;
  size_t max_buffered_output_bytes = size_t{512} << 20;
  // Accepted connections from one source address at once.
  size_t max_connections_per_host = 1024;
  // Of max_inbound_connections, this many are kept for members (TLS only): past the rest, a
  // new connection must prove itself a member or is closed.
  size_t member_reserved_connections = 256;
  // Of those, connections from one source address that have not yet proven themselves members
  // (their handshake is under way) hold at most this many, so that a few addresses cannot
  // keep every member out by holding the places with silent connections.
  size_t unproven_reserved_per_host = 4;
  // A frame that has begun to arrive (and a TLS handshake) must be complete within this.
  uint64_t frame_deadline_ms = 10'000;
};

class NodeRuntime final {
 public:
  // `store` may be null: the runtime then keeps the records in its own MemoryStore.
  // Otherwise it must outlive the runtime. All vnodes share it.
  NodeRuntime(RuntimeOptions options, Store* store);
  ~NodeRuntime();
  NodeRuntime(const NodeRuntime&) = delete;
  NodeRuntime& operator=(const NodeRuntime&) = delete;

  // Binds the listener (and the metrics listener, if any), installs the signal handlers and
  // starts the vnodes: vnode 0 joins options.join_addrs (or starts a new ring without them),
  // the others join through the same list, or through vnode 0 for a new ring.
  // InvalidArgument for a malformed address or vnode count, Unavailable when an address
  // cannot be bound. Call once.
  Status Start();
  // Runs the loop until the runtime stops, then closes every handle and the loop.
  void Run();
  // Graceful leave: the vnodes leave one at a time (each hands its keys to its successor; a
  // shared store must not see two hand-offs at once), then the runtime stops; it stops anyway
  // after options.leave_deadline_ms. What SIGTERM and SIGINT do.
  void Leave();
  // Stops at once: closes the listener, every connection, the timers and the signal
  // handlers, so that Run returns. Idempotent; safe from inside any callback.
  void Stop();

  // Vnode 0 (the only node without virtual nodes); null before Start().
  const ChordNode* node() const { return vnodes_.empty() ? nullptr : vnodes_.front().node.get(); }
  size_t vnode_count() const { return vnodes_.size(); }
  const RuntimeOptions& options() const { return options_; }
  bool stopped() const { return stopped_; }
  size_t inbound_connections() const { return inbound_.size(); }
  size_t outbound_connections() const { return outbound_.size(); }
  // Every vnode's metrics in the Prometheus text format (what GET /metrics returns). Scans
  // the store.
  std::string RenderMetrics();

  // The loop everything of this process runs on; null before construction succeeded.
  uv_loop_s* loop() const { return loop_open_ ? loop_.get() : nullptr; }
  // Takes `service` over: it is closed when the runtime stops and destroyed before the loop
  // is closed. Call after Start().
  void AddService(std::unique_ptr<LoopService> service);

  // Hands `request` to vnode 0 as if it came from a client connection of `sender` (the HTTP
  // API's callers); `on_reply` gets the answer, on the loop, unless CancelLocal(token) came
  // first. Returns the token; 0 (and no call of on_reply) when the runtime has stopped.
  // Deadlines are the caller's: the core answers every client request, but a lookup may take
  // a while on a confused ring.
  using LocalReplyFn = std::function<void(const wire::Envelope& reply)>;
  uint64_t SubmitLocal(const wire::Envelope& request, const Sender& sender, LocalReplyFn on_reply);
  void CancelLocal(uint64_t token) { local_calls_.erase(token); }

 private:
  // One ring position of this process and what the runtime keeps for it.
  struct Vnode {
    std::unique_ptr<ChordNode> node;
    std::string log_prefix;  // "[#i] " with virtual nodes, "" without
    uint64_t wake_timer = 0;
    uint64_t wake_at_ms = 0;
  };
  // A request sent on a dialed connection and not answered yet.
  struct InFlight {
    size_t vnode = 0;
    uint64_t core_id = 0;  // the request id the vnode chose
    uint64_t sent_ms = 0;
  };
  // An accepted connection and what the limits need to know of it.
  struct Inbound {
    TcpConnection* conn = nullptr;
    std::string host;  // source address, without the port
    uint64_t accepted_ms = 0;
    bool reserved = false;         // took a member-reserved place: it must prove itself a member
    bool unproven = false;         // reserved, and its handshake has not yet shown a member
    std::optional<Sender> sender;  // who the peer is, once known (by the first frame)
    bool input_ended = false;      // the peer shut down its sending side: close once all answered
    size_t unanswered = 0;         // requests read from it that have had no reply yet
  };
  // A dialed connection and the requests sent on it that have not been answered yet, by
  // the runtime's request id.
  struct Outbound {
    TcpConnection* conn = nullptr;
    uint64_t dialed_ms = 0;
    std::unordered_map<uint64_t, InFlight> in_flight;
  };

  Clock Now() const;
  // Feeds vnode i one input, `input(ChordNode&, const Clock&)`, then carries out its Ready.
  // A template rather than a std::function: the lambda of a request's step captures more
  // than a std::function holds without allocating.
  template <typename Input>
  void Step(size_t i, Input&& input) {
    if (stopped_ || i >= vnodes_.size()) return;
    std::forward<Input>(input)(*vnodes_[i].node, Now());
    CarryOut(i, vnodes_[i].node->TakeReady());
  }
  void CarryOut(size_t i, Ready ready);
  // Vnode i stopped waiting for these requests: a connection that has been silent since one
  // of them was sent is closed, so that nothing still queued on it reaches the peer late.
  void DropStalled(size_t i, const std::vector<uint64_t>& expired);
  void ArmWake(size_t i, const std::optional<uint64_t>& wake_at_ms);
  // Encodes `request` (its request id and vnode rewritten for the wire) onto the connection
  // to the process of `ring_addr`, dialing it first if need be.
  void SendRequest(size_t i, const std::string& ring_addr, wire::Envelope& request);
  void SendReply(uint64_t to, const wire::Envelope& reply);
  void OnAccept(uv_stream_s* server);
  // Why a new connection from `host` is refused ("" if it is not); *reserved: it may only
  // stay as a member.
  std::string RefusalFor(const std::string& host, bool* reserved) const;
  void LogRefusal(const std::string& peer, const std::string& why);
  // Who the peer of `conn` is, as the core needs it.
  Sender SenderOf(const TcpConnection* conn) const;
  void OnInboundFrame(TcpConnection* conn, wire::Envelope&& envelope);
  void OnInboundClosed(TcpConnection* conn, const Status& why);
  // The peer of an accepted connection shut down its sending side: the connection closes once
  // its requests are answered (or, should one never be, when it has been idle too long).
  void OnInboundEnded(TcpConnection* conn);
  // A connection in a member-reserved place finished its handshake: it stays as a member or
  // is closed.
  void OnReservedEstablished(TcpConnection* conn);
  // The connection `in` no longer counts among its host's unproven reserved places.
  void ForgetUnproven(Inbound& in);
  void OnOutboundFrame(const std::string& addr, wire::Envelope&& envelope);
  void OnOutboundClosed(const std::string& addr, TcpConnection* conn, const Status& why);
  void OnSignal(int signum);
  // Starts the graceful leave of leave_order_[k]; the next starts once its Ready says left.
  void LeaveNext(size_t k);
  // The order in which the vnodes leave: counterclockwise (descending id), starting with one
  // whose successor is another process, so that each vnode's successor is, where possible,
  // outside this process or a sibling that has already left.
  std::vector<size_t> LeaveOrder() const;
  // Reports the requests as failed to their vnodes from a zero-delay timer, never from
  // inside the call that sent them.
  void DeferSendFailed(std::vector<InFlight> requests);
  // Closes idle connections and forgets requests that will never be answered; re-arms.
  void SweepConnections();
  uint64_t Schedule(uint64_t delay_ms, std::function<void()> fn);
  void Log(LogLevel level, std::string_view message);
  void LogConnectionClosed(std::string_view kind, const TcpConnection* conn, const Status& why);
  bool LogEnabled(LogLevel level) const;
  // Stop(), destroy the nodes, then run the loop until every handle is closed and close it.
  void Shutdown();

  RuntimeOptions options_;
  std::unique_ptr<Store> owned_store_;
  ProcStatsSource process_stats_;  // this process's CPU and memory, for status and /metrics
  Store* store_;
  // The store with its ledger, shared by every vnode (its counts and digests are kept once).
  std::unique_ptr<LedgerStore> ledger_;
  std::unique_ptr<uv_loop_s> loop_;
  bool loop_open_ = false;
  Status loop_status_;

  std::unique_ptr<TimerQueue> timers_;
  std::unique_ptr<WriteGather> gather_;  // flushes the connections' frames once per loop turn
  std::unique_ptr<ReadBacklog> backlog_;  // gives each connection its turn of frames
  std::unique_ptr<SignalWatcher> signals_;
  TcpListener* listener_ = nullptr;  // deletes itself once closed
  std::vector<std::unique_ptr<LoopService>> services_;
  // Requests of SubmitLocal not answered yet, by reply token (kLocalTokenBase and up, apart
  // from connection ids).
  static constexpr uint64_t kLocalTokenBase = uint64_t{1} << 62;
  std::unordered_map<uint64_t, LocalReplyFn> local_calls_;
  uint64_t next_local_token_ = kLocalTokenBase;
  std::unique_ptr<TlsContext> tls_;  // null: plain TCP
  ByteBudget input_budget_;          // of clients (and of every peer in the clear)
  ByteBudget output_budget_;
  ByteBudget member_input_budget_;  // of connections whose peer proved itself a member
  ByteBudget member_output_budget_;
  std::unordered_map<uint64_t, Inbound> inbound_;     // by connection id (ReplyToken)
  std::unordered_map<std::string, size_t> per_host_;  // open inbound connections by host
  size_t reserved_in_use_ = 0;
  // Member-reserved places held by connections not yet proven members, by host.
  std::unordered_map<std::string, size_t> unproven_per_host_;
  std::unordered_map<std::string, Outbound> outbound_;  // by peer process address
  // Where each vnode's requests went: (core id * kMaxVnodesPerProcess + vnode) -> (peer
  // address, runtime request id), while they are in flight.
  std::unordered_map<uint64_t, std::pair<std::string, uint64_t>> sent_to_;
  uint64_t next_connection_id_ = 1;
  uint64_t next_request_id_ = 1;
  uint64_t last_refusal_log_ms_ = 0;
  uint64_t refused_since_log_ = 0;

  // The process's budgets of requests under way (README "Security"), shared by its vnodes
  // (declared before them: they outlive them).
  RequestBudget coordinated_budget_{
      RequestBudget::HalfLimit(options_.node.max_request_bytes_in_flight)};
  RequestBudget owned_budget_{RequestBudget::HalfLimit(options_.node.max_request_bytes_in_flight)};
  uint64_t expiry_refusals_ = 0;  // keys the vnodes' expiry indexes refused, together
  // The paces of bulk messages to and from each peer process (LinkPace), shared by the vnodes:
  // their messages to one process share one connection.
  LinkPace pace_{options_.node.transfer_batch_bytes, options_.node.rpc_timeout_ms};
  LinkPace pull_pace_{options_.node.transfer_batch_bytes, options_.node.rpc_timeout_ms};
  std::vector<Vnode> vnodes_;  // vnode i at index i
  std::vector<size_t> leave_order_;
  size_t leaving_index_ = 0;  // position in leave_order_ of the vnode leaving now
  bool started_ = false;
  bool leaving_ = false;
  bool stopped_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_NODE_RUNTIME_H_
