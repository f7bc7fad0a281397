// ChordNode: one member of the Chord ring as a pure state machine: ring maintenance as
// corrected by Zave (shared/RING.md), iterative lookups, hand-overs, replicated get/put/delete
// over a Store. It does no I/O, reads no clock and makes no threads. One way in, one way
// out: the driver (node/runtime's libuv loop, or tools/sim) calls an input method with its
// Clock (a request, a response, a send failure, Tick when a deadline is due, Start, Leave),
// then takes a Ready: the requests and replies to send, when to Tick next, log lines,
// finished lookups. Inside, every operation in flight is an object owned by the part that
// runs it, and a pending RPC names its operation and step (OpRef). Call from one thread.
//
// The parts, from the bottom: RingState (ring arithmetic), Outbox/Timers/Completions (the
// way out and back in), RecordStore (records by last-writer-wins), LookupService,
// Membership (join, stabilize, rectify, fingers), HandOver, Leaver, Replication (policy,
// writes, replica reads, anti-entropy, clean-up, replica server), OwnerService and
// DataService (client data operations), NodeStatus. See README "Design".
#ifndef CHORD_NODE_CORE_CHORD_NODE_H_
#define CHORD_NODE_CORE_CHORD_NODE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "node/core/completions.h"
#include "node/core/data/data_service.h"
#include "node/core/data/owner_service.h"
#include "node/core/hand_over.h"
#include "node/core/leaver.h"
#include "node/core/lookup.h"
#include "node/core/membership/membership.h"
#include "node/core/node_config.h"
#include "node/core/node_context.h"
#include "node/core/node_counters.h"
#include "node/core/node_metrics.h"
#include "node/core/node_status.h"
#include "node/core/ready.h"
#include "node/core/replication/replication.h"
#include "node/core/watch/watch_service.h"
#include "node/storage/ledger_store.h"
#include "node/storage/store.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"
#include "protocol/node_ref.h"
#include "protocol/sender.h"

namespace chord {

class ChordNode {
 public:
  using State = NodeState;

  // `store` must outlive the node. `seed` seeds the node's random choices (jitter, read
  // repair), so that a simulation replays from its seed. Vnodes of one process share one
  // LedgerStore (its ledger is kept once); a plain Store gets a LedgerStore of this node's own,
  // and must then be written only through the node.
  // `process_vnodes`: every ring position of this process (this one included), all sharing
  // `store` (virtual nodes); empty for one position.
  ChordNode(LedgerStore* store, NodeConfig config, NodeRef self, uint64_t seed,
            std::vector<NodeRef> process_vnodes = {});
  ChordNode(Store* store, NodeConfig config, NodeRef self, uint64_t seed);
  ChordNode(const ChordNode&) = delete;
  ChordNode& operator=(const ChordNode&) = delete;

  // --- inputs
  // Starts a new ring of one (no bootstraps) or joins the ring the bootstraps are in. A
  // failed join is retried every join_retry_ms, through the bootstraps in turn.
  void Start(const Clock& now, const std::vector<std::string>& bootstraps);
  // Graceful leave: stop maintenance, hand every record to the successor, tell the
  // neighbours; Ready::left says when it is done (also when the hand-off failed).
  void Leave(const Clock& now);
  // `sender` is who the driver authenticated the request as (unchecked without TLS).
  // Takes the request as an rvalue: the driver hands it over, and its value is never copied
  // on the way to the service that keeps it (a driver that keeps its own passes a copy).
  void OnRequest(const Clock& now, ReplyToken from, wire::Envelope&& request,
                 const Sender& sender = Sender{});
  void OnResponse(const Clock& now, const wire::Envelope& response);
  void OnSendFailed(const Clock& now, uint64_t request_id);
  // Runs what is due by now: RPC deadlines, the periodic round, retries.
  void Tick(const Clock& now);
  // An iterative lookup of the successor of `target` (with verify_owner, the owner is asked
  // and dead owners are skipped along the successor list). Its result comes out in
  // Ready::lookups under the returned handle.
  uint64_t StartLookup(const Clock& now, const Id& target, bool verify_owner);
  // Stops (false) or restarts (true) the periodic round. A stopped node still answers
  // requests and runs lookups.
  void SetMaintenance(const Clock& now, bool enabled);
  // Simulator seam: become a joined member at once with this routing state, as if join and
  // stabilization had converged (fingers[i] = successor(self + 2^i), nullopt where that is
  // this node). Builds rings of thousands of nodes quickly.
  void InstallRoutingState(const Clock& now, std::vector<NodeRef> successors,
                           std::optional<NodeRef> predecessor,
                           const std::vector<std::optional<NodeRef>>& fingers);
  // Where Status replies take the process's CPU time and memory from (README "Metrics");
  // null: they carry none. The source must outlive the node.
  void SetProcessStats(const ProcessStatsSource* source) { status_.set_process_stats(source); }
  // The budgets of requests under way that this node charges (README "Security"): a
  // process's, shared by its vnodes, instead of the node's own. They must outlive the node.
  void ShareBudgets(RequestBudget* coordinated, RequestBudget* owned) {
    ctx_.ShareBudgets(coordinated, owned);
  }
  // The paces of bulk messages (LinkPace) to and from each peer process: a process's, shared
  // by its vnodes, which share its connections. Before the first input; they must outlive the
  // node.
  void SharePaces(LinkPace* pace, LinkPace* pull_pace) { ctx_.SharePaces(pace, pull_pace); }
  // The count of keys the process's expiry indexes refused for lack of room, shared by its
  // vnodes, which share its store (ExpiryIndex::ShareRefusals). Before the first input; it
  // must outlive the node.
  void ShareExpiryRefusals(uint64_t* shared) { ctx_.records.expiry().ShareRefusals(shared); }

  // --- output: what the driver must do now
  Ready TakeReady();

  // --- read-only views for status, metrics, tests and the simulator
  const NodeRef& self() const { return ctx_.ring.self; }
  State state() const { return ctx_.ring.state; }
  bool joined() const { return ctx_.ring.joined(); }
  const std::optional<NodeRef>& predecessor() const { return ctx_.ring.predecessor; }
  const std::vector<NodeRef>& successors() const { return ctx_.ring.successors; }
  const NodeRef& successor() const { return ctx_.ring.successor(); }
  const std::optional<NodeRef>& finger(int i) const { return ctx_.ring.fingers[i]; }
  const RingState& ring() const { return ctx_.ring; }
  const NodeCounters& counters() const { return ctx_.counters; }
  const NodeMetrics& metrics() const { return ctx_.metrics; }
  const NodeConfig& config() const { return ctx_.config; }
  bool Owns(const Id& key_id) const { return ctx_.ring.Owns(key_id); }
  [[nodiscard]] Result<NodeStatus::KeyCounts> KeyCounts() const { return status_.Counts(); }
  uint64_t StoredKeyCount() const { return ctx_.store()->Count(); }
  std::vector<NodeRef> ReplicaTargets() const { return replication_.policy().Targets(); }
  // Operations in flight (lookups, client requests, writes) and requests awaiting answers.
  size_t OperationsInFlight() const;

 private:
  ChordNode(std::unique_ptr<LedgerStore> own, NodeConfig config, NodeRef self, uint64_t seed);
  void Begin(const Clock& now) { ctx_.now = now; }
  // Serves what the step left behind: completions, then loopback messages, until none is
  // left (or a bound is reached; then Ready::wake_at_ms asks for a Tick right away).
  void Settle();
  // Hands `request` to the service of its type, which may move from it.
  void Dispatch(ReplyToken from, wire::Envelope&& request, const Sender& sender);
  void DeliverRpc(OpRef op, const wire::Envelope* response);
  void Deliver(Completion completion);
  void DeliverLookup(OpRef op, LookupOutcome outcome);
  void DeliverData(OpRef op, wire::DataResponse&& response);
  void DeliverDone(OpRef op, bool ok);
  void OnTimer(OpRef op);
  // The periodic round: membership's, then replication's; then the next one is armed.
  void Round();
  void ScheduleRound();

  std::unique_ptr<LedgerStore> own_ledger_;  // set when given a plain Store
  NodeContext ctx_;
  LookupService lookups_;
  Membership membership_;
  HandOver hand_over_;
  Leaver leaver_;
  Replication replication_;
  OwnerService owner_;
  DataService data_;
  WatchService watch_;
  NodeStatus status_;
  bool maintenance_ = true;
  bool left_ = false;
  bool unsettled_ = false;
  uint64_t next_lookup_handle_ = 1;
  std::vector<Ready::Lookup> lookups_done_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_CHORD_NODE_H_
