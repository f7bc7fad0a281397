// NodeConfig: the tunables of one ChordNode. Plain value type; any thread.
#ifndef CHORD_NODE_CORE_NODE_CONFIG_H_
#define CHORD_NODE_CORE_NODE_CONFIG_H_

#include <cstddef>
#include <cstdint>

#include "protocol/limits.h"

namespace chord {

struct NodeConfig {
  int successors = 8;                    // S: successor list length (>= 2 for Zave's proof)
  uint64_t stabilize_ms = 500;           // stabilize / check_predecessor / fix_fingers period
  double stabilize_jitter = 0.25;        // each period is uniform in stabilize_ms * (1 +- this)
  uint64_t rpc_timeout_ms = 1000;        // a peer that has not answered by then is dead
  uint64_t transfer_timeout_ms = 10000;  // one batch of a key transfer
  uint64_t join_retry_ms = 1000;         // wait before retrying a failed join
  uint64_t data_deadline_ms = 8000;      // a client's put/get/del gives up after this
  uint64_t data_retry_ms = 100;          // first back-off between data attempts (doubles)
  uint64_t suspect_ms = 5000;  // a node that did not answer a forward is passed over this long
  size_t max_value_bytes = kMaxValueBytes;  // lowered by chord-node with a small frame limit
  size_t transfer_batch_bytes = 4 << 20;
  int next_hop_candidates = 8;  // fallbacks a lookup step returns
  int max_lookup_steps = 256;   // bound on the RPCs of one lookup
  int probe_every_rounds = 4;   // a remembered non-neighbour is probed every this many rounds
  // Requests arriving later than their sender's deadline plus this are refused; nodes' wall
  // clocks must agree within it.
  uint64_t max_clock_skew_ms = 2000;
  // Bytes of data requests (keys, values and a share per request) a node holds while they are
  // under way; beyond it a request is answered UNAVAILABLE (RequestBudget). Below a member
  // connection's 64 MiB write queue, so that clients' writes cannot fill one.
  size_t max_request_bytes_in_flight = 32 << 20;

  // Replication (see README "Replication and consistency"). Read only by
  // node/core/replication.
  int replicas = 3;                         // R: owner + R-1 distinct processes clockwise
  uint64_t anti_entropy_ms = 2000;          // period of digest comparison and clean-up
  uint64_t tombstone_grace_ms = 3'600'000;  // a tombstone is kept at least this long
  int write_attempts = 3;  // tries of a write that loses to newer writes while its client waits
  // Records of the differing pieces one anti-entropy push looks at, at most; the next round
  // with that replica goes on after the last one looked at.
  size_t anti_entropy_push_visits = 20'000;
  // Keys with an expiry whose times the ExpiryIndex keeps (two tree entries each); while more
  // are stored, the sweeper also scans the store in slices until the index holds them all.
  size_t max_expiry_index_entries = 200'000;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_NODE_CONFIG_H_
