// Outbox: where every message a ChordNode sends leaves from, and where the answers come back
// to. It numbers requests, remembers for each pending request the operation step waiting for
// it (an OpRef) and its deadline, counts RPCs by type for the metrics, and collects the
// requests, replies and log lines the driver takes as Ready. A request to this node itself
// never reaches the driver: it waits in a loopback queue that the node serves after the
// current step, so no handler ever runs inside another. Not thread-safe; the node's thread.
#ifndef CHORD_NODE_CORE_OUTBOX_H_
#define CHORD_NODE_CORE_OUTBOX_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "node/core/deadline_queue.h"
#include "node/core/node_counters.h"
#include "node/core/node_metrics.h"
#include "node/core/op_ref.h"
#include "node/core/ready.h"
#include "protocol/node_ref.h"

namespace chord {

class Outbox {
 public:
  // The token of requests this node sends itself through the loopback queue.
  static constexpr ReplyToken kLoopbackToken = ~ReplyToken{0};

  // A message of the loopback queue: a request to this node, or the answer to one.
  struct Loopback {
    bool is_reply = false;
    wire::Envelope envelope;
  };

  Outbox(const NodeRef* self, const Clock* now, NodeMetrics* metrics, NodeCounters* counters)
      : self_(self), now_(now), metrics_(metrics), counters_(counters) {}

  // Sends `request` to `to`; its answer, a send failure or the deadline `timeout_ms` from now
  // (whichever comes first) goes to `op`. With op.kind == kNone nobody waits for it.
  void Send(const NodeRef& to, wire::Envelope request, uint64_t timeout_ms, OpRef op);
  // Sends `request` to each of `targets` as Send would, the k-th answered to `op` with index
  // op.index + k, but holds the message once (Ready::Request::body_of).
  void SendToEach(std::span<const NodeRef> targets, wire::Envelope request, uint64_t timeout_ms,
                  OpRef op);
  // Answers the request `request_id` that came from `to`.
  void Reply(ReplyToken to, uint64_t request_id, wire::Envelope reply);
  void Log(LogLevel level, std::string text);

  // The request `request_id` was answered (or could not be sent: `answered` false). Returns
  // the operation step waiting for it, and forgets it; nullopt when nothing waits (a late
  // answer to a request that already timed out).
  std::optional<OpRef> Complete(uint64_t request_id, bool answered);
  // Forgets the requests whose deadline has passed and returns who waited for them.
  std::vector<OpRef> TakeExpired();
  std::optional<uint64_t> next_deadline();
  size_t pending() const { return pending_.size(); }

  bool has_loopback() const { return !loopback_.empty(); }
  Loopback TakeLoopback();

  // Moves out what the driver must do; the node adds its wake-up time.
  Ready TakeReady();

 private:
  struct Pending {
    OpRef op;
    uint64_t deadline_ms = 0;
    uint64_t sent_ms = 0;
    RpcTypeMetrics* metrics = nullptr;  // entry of metrics_->rpc for the request's type
  };

  const NodeRef* self_;
  const Clock* now_;
  NodeMetrics* metrics_;
  NodeCounters* counters_;
  uint64_t next_request_id_ = 1;
  std::unordered_map<uint64_t, Pending> pending_;
  DeadlineQueue deadlines_;  // of the requests in pending_ (and of some answered ones)
  // The metrics entry of each request type, by Envelope body field number.
  std::vector<RpcTypeMetrics*> metrics_by_body_;

  RpcTypeMetrics& MetricsOf(const wire::Envelope& request);
  // Gives `request` an id and a deadline and waits for its answer on behalf of `op`, counted
  // in `metrics` (of its type).
  void Register(wire::Envelope& request, RpcTypeMetrics& metrics, uint64_t timeout_ms, OpRef op);
  std::deque<Loopback> loopback_;
  Ready ready_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_OUTBOX_H_
