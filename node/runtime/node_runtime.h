// NodeRuntime: drives one ChordNode on a libuv loop. It implements the core's Environment
// with real time, timers, TCP and logging: a listener whose accepted connections carry
// requests to the node, one lazily dialed and multiplexed connection per peer address for the
// node's own requests, a timer queue, and SIGTERM/SIGINT handling (graceful leave, then stop;
// a second signal stops at once).
//
// Usage: construct, Start(), Run() (returns when the node has stopped), destroy. Every method,
// including the Environment ones, must be called on the loop thread (the thread that calls
// Run). This header does not expose libuv.
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

class SignalWatcher;
class TcpConnection;
class TcpListener;
class TimerQueue;

struct RuntimeOptions {
  std::string listen_addr;              // HOST:PORT to bind; also the address advertised to peers
  std::vector<std::string> join_addrs;  // ring members to join through; empty: a new ring
  NodeConfig node;
  uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
  // Accepted connections with no traffic for this long are closed. Dialed connections are
  // closed after half of it once nothing is in flight, so the dialing side closes first.
  uint64_t idle_timeout_ms = 120'000;
  size_t max_inbound_connections = 4096;
  size_t max_queued_bytes = size_t{64} << 20;  // per connection; a peer over it is dropped
  uint64_t leave_deadline_ms = 10'000;         // a graceful leave stops anyway after this
  bool handle_signals = true;                  // SIGTERM/SIGINT start a graceful leave
};

class NodeRuntime final : public Environment {
 public:
  // `store` may be null: the runtime then keeps the records in its own MemoryStore.
  // Otherwise it must outlive the runtime.
  NodeRuntime(RuntimeOptions options, Store* store);
  ~NodeRuntime() override;
  NodeRuntime(const NodeRuntime&) = delete;
  NodeRuntime& operator=(const NodeRuntime&) = delete;

  // Binds the listener, installs the signal handlers and starts the node (joining
  // options.join_addrs if set). InvalidArgument for a malformed address, Unavailable when the
  // address cannot be bound. Call once.
  Status Start();
  // Runs the loop until the runtime stops, then closes every handle and the loop.
  void Run();
  // Graceful leave: the node hands its keys off, then the runtime stops; it stops anyway
  // after options.leave_deadline_ms. What SIGTERM and SIGINT do.
  void Leave();
  // Stops at once: closes the listener, every connection, the timers and the signal
  // handlers, so that Run returns. Idempotent; safe from inside any callback.
  void Stop();

  // The node; null before Start().
  ChordNode* node() { return node_.get(); }
  const RuntimeOptions& options() const { return options_; }
  bool stopped() const { return stopped_; }
  size_t inbound_connections() const { return inbound_.size(); }
  size_t outbound_connections() const { return outbound_.size(); }

  // Environment.
  uint64_t NowMs() override;
  uint64_t WallMs() override;
  uint64_t Random() override;
  void SendRequest(const std::string& addr, const wire::Envelope& request) override;
  void SendReply(ReplyToken to, const wire::Envelope& reply) override;
  TimerId Schedule(uint64_t delay_ms, std::function<void()> fn) override;
  void Cancel(TimerId id) override;
  void Log(LogLevel level, std::string_view message) override;

 private:
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
  // Reports the requests as failed to the node from a zero-delay timer, never re-entrantly.
  void DeferSendFailed(std::vector<uint64_t> request_ids);
  // Closes idle connections and forgets requests that will never be answered; re-arms.
  void SweepConnections();
  void LogConnectionClosed(std::string_view kind, const TcpConnection* conn, const Status& why);
  bool LogEnabled(LogLevel level) const;
  // Stop(), destroy the node, then run the loop until every handle is closed and close it.
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
  std::unordered_map<uint64_t, TcpConnection*> inbound_;  // by connection id (ReplyToken)
  std::unordered_map<std::string, Outbound> outbound_;    // by peer address
  uint64_t next_connection_id_ = 1;
  uint64_t last_refusal_log_ms_ = 0;
  uint64_t refused_since_log_ = 0;

  std::unique_ptr<ChordNode> node_;
  bool started_ = false;
  bool leaving_ = false;
  bool stopped_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_NODE_RUNTIME_H_
