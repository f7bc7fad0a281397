// HintStore: records this node keeps for another member of a key's replica set that did not
// answer a write (hinted hand-off, Dynamo section 4.6), apart from the records it holds
// itself: hints never show in the record scans, key counts, digests or ListKeys. Each hint is
// one durable value in the Store's meta space, named "hint/<holder>/<intended member>\n<key>"
// (the holder is this ring position: vnodes sharing a store keep apart; one hint per member
// and key, the newest version wins), so hints survive a restart; an index of them
// (member, key, version, size) is kept in memory. Bounded by HintLimits (count and bytes):
// a hint beyond them is refused. Used by the ReplicaServer (Add), the HintDeliverer (Page,
// EraseDelivered) and status (through NodeCounters::hints_pending / hint_bytes, which it
// keeps current, and the counters of hints loaded, delivered and dropped, so that
// hints_stored + hints_loaded = hints_delivered + hints_dropped + hints_pending). The node's
// thread only.
#ifndef CHORD_NODE_CORE_REPLICATION_HINT_STORE_H_
#define CHORD_NODE_CORE_REPLICATION_HINT_STORE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "node/core/node_counters.h"
#include "node/storage/store.h"
#include "protocol/base/status.h"
#include "protocol/chord.pb.h"
#include "protocol/node_ref.h"

namespace chord {

// How long after its version's time a hint may still be delivered: half the tombstone grace
// (a delete of its key may be purged after the grace, and the old copy would bring the key
// back), less the clock skew allowed between the node that judges its age and the others.
// 0: a hint is never delivered, so none counts toward a write's consistency level.
inline uint64_t HintDeliveryWindowMs(uint64_t tombstone_grace_ms, uint64_t max_clock_skew_ms) {
  const uint64_t half = tombstone_grace_ms / 2;
  return half > max_clock_skew_ms ? half - max_clock_skew_ms : 0;
}

struct HintLimits {
  static constexpr size_t kDefaultMaxHints = 100'000;
  static constexpr uint64_t kDefaultMaxBytes = 64ull << 20;
  size_t max_hints = kDefaultMaxHints;
  uint64_t max_bytes = kDefaultMaxBytes;  // by Store::RecordBytes
};

class HintStore {
 public:
  // kStored: a new hint; kReplaced: it replaced an older hint of the same key for the same
  // member (one hint pending for the key either way).
  enum class AddResult { kStored, kReplaced, kAlreadyNewer, kFull };

  // `holder` is the address of the ring position that keeps these hints.
  HintStore(Store* store, NodeCounters* counters, const std::string& holder, HintLimits limits = {})
      : store_(store), counters_(counters), prefix_("hint/" + holder + "/"), limits_(limits) {}
  HintStore(const HintStore&) = delete;
  HintStore& operator=(const HintStore&) = delete;

  // Rebuilds the index from the hints an earlier life of this node kept.
  [[nodiscard]] Status Load();
  // Keeps `record` (already checked against the data limits) for `target`. kAlreadyNewer: a
  // hint for the same key at this version or a newer one is held; kFull: over the limits.
  [[nodiscard]] Result<AddResult> Add(const NodeRef& target, const wire::Record& record);
  // The members that hints are held for.
  std::vector<NodeRef> Targets() const;
  // Hinted records for `target`, in key order, up to `max_bytes` (the first is always
  // taken) and `max_records`.
  [[nodiscard]] Result<std::vector<wire::Record>> Page(const NodeRef& target, size_t max_bytes,
                                                       size_t max_records);
  // Erases the hints for `target` that are still at the versions in `delivered`, counting each
  // as delivered, or as dropped when `too_old` (not sent); returns how many were erased. On a
  // store error the ones erased before it are counted too.
  [[nodiscard]] Result<uint64_t> EraseDelivered(const NodeRef& target,
                                                const std::vector<wire::Record>& delivered,
                                                bool too_old = false);
  uint64_t count() const { return count_; }
  uint64_t bytes() const { return bytes_; }

 private:
  struct Entry {
    uint64_t version = 0;
    std::string writer;
    uint64_t bytes = 0;
  };

  std::string Name(const std::string& target_addr, const std::string& key) const;
  void Index(const std::string& target_addr, const wire::Record& record);
  void Unindex(const std::string& target_addr, const std::string& key);
  void Publish();

  Store* store_;
  NodeCounters* counters_;
  const std::string prefix_;
  HintLimits limits_;
  // Intended member's address -> key -> the hint held.
  std::map<std::string, std::map<std::string, Entry>> index_;
  uint64_t count_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_HINT_STORE_H_
