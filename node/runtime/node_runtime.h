// NodeRuntime: drives the ChordNodes of one process on a libuv loop: one node, or V virtual
// nodes ("HOST:PORT#i", i = 0..V-1) that share one Store and one listener. It implements the
// core's Environment with real time, timers, TCP and logging: a listener whose accepted
// connections carry requests to the node named by each envelope's `vnode`, one lazily dialed
// and multiplexed connection per peer process for the nodes' own requests (answers are routed
// back by request id: vnode i issues ids from i << kVnodeRequestIdShift), a timer queue, and
// SIGTERM/SIGINT handling (graceful leave, one vnode at a time, then stop; a second signal
// stops at once). With a metrics address it also serves every vnode's metrics in the
// Prometheus text format at GET /metrics (MetricsServer).
//
// Usage: construct, Start(), Run() (returns when the nodes have stopped), destroy. Every
// method, including the Environment ones, must be called on the loop thread (the thread that
// calls Run). This header does not expose libuv.
#ifndef CHORD_NODE_RUNTIME_NODE_RUNTIME_H_
#define CHORD_NODE_RUNTIME_NODE_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "node/core/chord_node.h"
#include "node/core/environment.h"
#include "node/core/node_config.h"
#include "node/core/status.h"
#include "node/storage/store.h"
#include "protocol/frame.h"

struct uv_loop_s;
struct uv_stream_s;

namespace chord {

// Virtual node i issues request ids from i << kVnodeRequestIdShift, so the runtime can hand
// each answer to the vnode that asked.
inline constexpr int kVnodeRequestIdShift = 48;
inline constexpr int kMaxVnodesPerProcess = 64;

class MetricsServer;
class SignalWatcher;
class TcpConnection;
class TcpListener;
class TimerQueue;

struct RuntimeOptions {
  std::string listen_addr;              // HOST:PORT to bind; also the address advertised to peers
  std::vector<std::string> join_addrs;  // ring members to join through; empty: a new ring
  int vnodes = 1;                       // ring positions of this process, 1..kMaxVnodesPerProcess
  NodeConfig node;  // every vnode's config (the runtime sets request_id_base per vnode)
  uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
  // Accepted connections with no traffic for this long are closed. Dialed connections are
  // closed after half of it once nothing is in flight, so the dialing side closes first.
  uint64_t idle_timeout_ms = 120'000;
  size_t max_inbound_connections = 4096;
  size_t max_queued_bytes = size_t{64} << 20;  // per connection; a peer over it is dropped
  uint64_t leave_deadline_ms = 10'000;         // a graceful leave stops anyway after this
  bool handle_signals = true;                  // SIGTERM/SIGINT start a graceful leave
  std::string metrics_listen_addr;             // HOST:PORT for GET /metrics; empty: none
};

class NodeRuntime final : public Environment {
 public:
  // `store` may be null: the runtime then keeps the records in its own MemoryStore.
  // Otherwise it must outlive the runtime. All vnodes share it.
  NodeRuntime(RuntimeOptions options, Store* store);
  ~NodeRuntime() override;
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

  // The ring address of vnode i of the process listening on `listen_addr`: `listen_addr`
  // itself when the process runs one node, "listen_addr#i" otherwise.
  static std::string VnodeAddress(const std::string& listen_addr, int vnodes, int i);

  // Vnode 0 (the only node without virtual nodes); null before Start().
  ChordNode* node() { return nodes_.empty() ? nullptr : nodes_.front().get(); }
  // Vnode i; requires i < vnode_count(). Empty before Start().
  ChordNode* vnode(size_t i) { return nodes_[i].get(); }
  size_t vnode_count() const { return nodes_.size(); }
  const RuntimeOptions& options() const { return options_; }
  bool stopped() const { return stopped_; }
  size_t inbound_connections() const { return inbound_.size(); }
  size_t outbound_connections() const { return outbound_.size(); }
  // Every vnode's metrics in the Prometheus text format (what GET /metrics returns). Scans
  // the store.
  std::string RenderMetrics();

  // Environment.
  uint64_t NowMs() override;
  uint64_t WallMs() override;
  uint64_t Random() override;
  // `addr` is HOST:PORT or HOST:PORT#i: the request goes to the process at HOST:PORT with
  // its envelope's vnode set to i (0 without a suffix), also when that is this process.
  void SendRequest(const std::string& addr, const wire::Envelope& request) override;
  void SendReply(ReplyToken to, const wire::Envelope& reply) override;
  TimerId Schedule(uint64_t delay_ms, std::function<void()> fn) override;
  void Cancel(TimerId id) override;
  void Log(LogLevel level, std::string_view message) override;

 private:
  // The Environment one vnode sees: the runtime's, with log lines naming the vnode.
  class VnodeEnvironment;

  // A dialed connection and the request ids sent on it that have not been answered yet
  // (request id -> loop time sent).
  struct Outbound {
    TcpConnection* conn = nullptr;
    std::unordered_map<uint64_t, uint64_t> in_flight;
  };

  void OnAccept(uv_stream_s* server);
  void OnInboundFrame(TcpConnection* conn, const wire::Envelope& envelope);
  void OnInboundClosed(TcpConnection* conn, const Status& why);
  void OnOutboundFrame(const std::string& addr, const wire::Envelope& envelope);
  void OnOutboundClosed(const std::string& addr, TcpConnection* conn, const Status& why);
  void OnSignal(int signum);
  // Starts the graceful leave of leave_order_[k], and the next one once it is done.
  void LeaveNext(size_t k);
  // The order in which the vnodes leave: counterclockwise (descending id), starting with one
  // whose successor is another process, so that each vnode's successor is, where possible,
  // outside this process or a sibling that has already left.
  std::vector<size_t> LeaveOrder() const;
  // The vnode that issued `request_id`, or null.
  ChordNode* NodeForRequestId(uint64_t request_id);
  // Reports the requests as failed to the node from a zero-delay timer, never re-entrantly.
  void DeferSendFailed(std::vector<uint64_t> request_ids);
  // Closes idle connections and forgets requests that will never be answered; re-arms.
  void SweepConnections();
  void LogConnectionClosed(std::string_view kind, const TcpConnection* conn, const Status& why);
  bool LogEnabled(LogLevel level) const;
  // Stop(), destroy the nodes, then run the loop until every handle is closed and close it.
  void Shutdown();

  RuntimeOptions options_;
  std::unique_ptr<Store> owned_store_;
  Store* store_;
  std::unique_ptr<uv_loop_s> loop_;
  bool loop_open_ = false;
  Status loop_status_;
  std::mt19937_64 rng_;

  std::unique_ptr<TimerQueue> timers_;
  std::unique_ptr<SignalWatcher> signals_;
  TcpListener* listener_ = nullptr;                       // deletes itself once closed
  std::unique_ptr<MetricsServer> metrics_;                // null without a metrics address
  std::unordered_map<uint64_t, TcpConnection*> inbound_;  // by connection id (ReplyToken)
  std::unordered_map<std::string, Outbound> outbound_;    // by peer address
  uint64_t next_connection_id_ = 1;
  uint64_t last_refusal_log_ms_ = 0;
  uint64_t refused_since_log_ = 0;

  std::vector<std::unique_ptr<VnodeEnvironment>> vnode_envs_;  // one per vnode
  std::vector<std::unique_ptr<ChordNode>> nodes_;              // vnode i at index i
  std::vector<size_t> leave_order_;
  bool started_ = false;
  bool leaving_ = false;
  bool stopped_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_NODE_RUNTIME_H_
