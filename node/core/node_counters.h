// NodeCounters: the plain running totals a ChordNode keeps about itself (status, /metrics).
// Plain data; the node's thread only.
#ifndef CHORD_NODE_CORE_NODE_COUNTERS_H_
#define CHORD_NODE_CORE_NODE_COUNTERS_H_

#include <cstdint>

namespace chord {

struct NodeCounters {
  uint64_t stabilize_rounds = 0;
  uint64_t successor_changes = 0;
  uint64_t predecessor_changes = 0;
  uint64_t lookups = 0;
  uint64_t lookup_hops = 0;
  uint64_t rpc_timeouts = 0;
  uint64_t keys_sent = 0;
  uint64_t keys_received = 0;
  uint64_t bytes_sent = 0;           // record bytes of hand-overs (join / leave)
  uint64_t writes_replicated = 0;    // writes this node coordinated as owner
  uint64_t anti_entropy_rounds = 0;  // digest comparisons with one replica
  uint64_t anti_entropy_clean = 0;   // ... that found nothing to repair
  uint64_t anti_entropy_bytes = 0;   // digest, pull and push message bytes sent and received
  uint64_t keys_repaired = 0;        // records sent or taken by anti-entropy / quorum read repair
  uint64_t keys_dropped = 0;         // records erased once their holders confirmed them
  uint64_t tombstones_purged = 0;
  uint64_t requests_expired = 0;  // requests refused for arriving after their deadline
  uint64_t requests_refused = 0;  // requests refused for the sender's credentials
  uint64_t watch_resyncs = 0;     // watchers sent the current state instead of the changes
  uint64_t watchers_waiting = 0;  // (a gauge) watch requests waiting for a change
  // Hinted records accepted for another member: new ones, and those that replaced an older
  // hint of the same key; hints found in the store at start (kept from before a restart). So
  // hints_stored + hints_loaded = hints_delivered + hints_dropped + hints_pending.
  uint64_t hints_stored = 0;
  uint64_t hints_replaced = 0;
  uint64_t hints_loaded = 0;
  uint64_t hints_delivered = 0;   // ... handed to that member once it answered
  uint64_t hints_dropped = 0;     // ... too old to deliver (see HintDeliverer), or unreadable
  uint64_t hints_refused = 0;     // ... refused because the hint store was full
  uint64_t requests_shed = 0;     // data requests refused: the node held its limit under way
  uint64_t writes_failed = 0;     // writes that did not reach the replicas they needed
  // Gauges, kept current by the HintStore: hinted records held now and their bytes.
  uint64_t hints_pending = 0;
  uint64_t hint_bytes = 0;
  uint64_t cas_conflicts = 0;  // conditional writes whose condition did not hold
  uint64_t keys_expired = 0;   // records turned into tombstones by their TTL
  // Slices of the store the expiry sweeper scanned because its index had overflowed.
  uint64_t expiry_scan_slices = 0;
  // Owners' condition reads this node refused as a replica (it owns the key itself, or does
  // not take the owner as its predecessor), and those whose answers came to this node, the
  // owner, too late to decide on (ReplicaReads).
  uint64_t condition_reads_refused = 0;
  uint64_t condition_reads_late = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_NODE_COUNTERS_H_
