// NodeContext: what every part of a ChordNode shares: the configuration, the driver's time of
// the current step, the ring state, the records and their version clock, the outbox, timers
// and completions, counters and metrics, the pace of bulk messages to each peer, and the
// node's seeded random source. Owned by the ChordNode; its parts hold a reference and use what
// their job needs. Not thread-safe.
#ifndef CHORD_NODE_CORE_NODE_CONTEXT_H_
#define CHORD_NODE_CORE_NODE_CONTEXT_H_

#include <cstdint>
#include <random>
#include <string>
#include <utility>

#include "node/core/completions.h"
#include "node/core/link_pace.h"
#include "node/core/node_config.h"
#include "node/core/node_counters.h"
#include "node/core/node_metrics.h"
#include "node/core/outbox.h"
#include "node/core/ready.h"
#include "node/core/record_store.h"
#include "node/core/request_budget.h"
#include "node/core/ring_state.h"
#include "node/core/timers.h"
#include "node/core/version_clock.h"
#include "node/core/watch/watch_log.h"
#include "node/storage/ledger_store.h"
#include "node/storage/store.h"

namespace chord {

struct NodeContext {
  NodeContext(const NodeConfig& cfg, NodeRef self, LedgerStore* store, uint64_t seed)
      : config(cfg),
        ring(std::move(self), cfg.successors),
        records(store, &versions, &config, &now, &watches),
        out(&ring.self, &now, &metrics, &counters),
        rng(seed),
        own_coordinated_(RequestBudget::HalfLimit(cfg.max_request_bytes_in_flight)),
        own_owned_(RequestBudget::HalfLimit(cfg.max_request_bytes_in_flight)),
        own_pace_(cfg.transfer_batch_bytes, cfg.rpc_timeout_ms),
        own_pull_pace_(cfg.transfer_batch_bytes, cfg.rpc_timeout_ms) {}
  NodeContext(const NodeContext&) = delete;
  NodeContext& operator=(const NodeContext&) = delete;

  const NodeConfig config;
  Clock now;
  RingState ring;
  VersionClock versions;
  WatchLog watches;
  RecordStore records;
  NodeCounters counters;
  NodeMetrics metrics;
  Outbox out;
  Timers timers;
  Completions completions;
  // Requests under way (RequestBudget), in two halves: those this node coordinates for its
  // clients (DataService) and those it serves as owner (OwnerService), so that a client's
  // flood of requests for keys elsewhere does not shut out the node's own range. The node's
  // own, unless the driver shares a process's between its vnodes (ChordNode::ShareBudgets,
  // before the node takes any request: a charge is released into the budget it was made to).
  RequestBudget& coordinated() { return *coordinated_; }
  RequestBudget& owned() { return *owned_; }
  void ShareBudgets(RequestBudget* coordinated, RequestBudget* owned) {
    coordinated_ = coordinated;
    owned_ = owned;
  }
  // The answer to a request refused because `budget` is full, counted in requests_shed.
  wire::DataResponse Shed(const RequestBudget& budget) {
    ++counters.requests_shed;
    return budget.Busy();
  }
  std::mt19937_64 rng;

  // How large a bulk message to each peer process may be (LinkPace), and a page of records it
  // answers us with (the other direction of the link). The node's own, unless the driver
  // shares a process's between its vnodes, which share its connections (ChordNode::SharePaces,
  // before the first input).
  LinkPace& pace() { return *pace_; }
  LinkPace& pull_pace() { return *pull_pace_; }
  void SharePaces(LinkPace* pace, LinkPace* pull_pace) {
    pace_ = pace;
    pull_pace_ = pull_pace;
  }

  // A version for a write this node stamps (RecordStore::NextVersion).
  uint64_t NextVersion() {
    return records.NextVersion([this](const std::string& e) { Log(LogLevel::kWarn, e); });
  }
  const NodeRef& self() const { return ring.self; }
  LedgerStore* store() const { return records.store(); }
  void Log(LogLevel level, std::string text) { out.Log(level, std::move(text)); }

 private:
  RequestBudget own_coordinated_;
  RequestBudget own_owned_;
  RequestBudget* coordinated_ = &own_coordinated_;
  RequestBudget* owned_ = &own_owned_;
  LinkPace own_pace_;
  LinkPace own_pull_pace_;
  LinkPace* pace_ = &own_pace_;
  LinkPace* pull_pace_ = &own_pull_pace_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_NODE_CONTEXT_H_
