// RecordStore: the core's view of the Store, with the rules every part applies to records:
// no record is stored that breaks the data limits, whoever sent it (key and value sizes, a
// version from the future, a malformed writer); last-writer-wins stores (RecordNewer decides),
// erasing a batch of records only where they are still the versions that were sent or confirmed,
// pages of a range that resume after a key id, and counts of live records and tombstones (from
// the LedgerStore's arcs, which its writes keep up to date). It feeds every version
// it stores to the VersionClock, every expiry time to the ExpiryIndex and every change of a
// watched key to the WatchLog. Not thread-safe; the node's thread only.
#ifndef CHORD_NODE_CORE_RECORD_STORE_H_
#define CHORD_NODE_CORE_RECORD_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "node/core/expiry_index.h"
#include "node/core/kept_record.h"
#include "node/core/node_config.h"
#include "node/core/ready.h"
#include "node/core/ring_state.h"
#include "node/core/version_clock.h"
#include "node/core/watch/watch_log.h"
#include "node/storage/ledger_store.h"
#include "node/storage/store.h"
#include "protocol/base/status.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"

namespace chord {

// A record as it was sent or confirmed: enough to tell later whether it is still the same.
struct RecordStamp {
  Id key_id;
  std::string key;
  uint64_t version = 0;
  std::string writer;  // the record's writer id; empty: any writer of that version
};

class RecordStore {
 public:
  RecordStore(LedgerStore* store, VersionClock* clock, const NodeConfig* config, const Clock* now,
              WatchLog* watches)
      : store_(store),
        clock_(clock),
        config_(config),
        now_(now),
        watches_(watches),
        expiry_(config->max_expiry_index_entries) {}

  LedgerStore* store() const { return store_; }

  // What is wrong with `rec` as a record to store (one sentence), or "": a key outside the
  // limits, a value over max_value_bytes, a version more than max_clock_skew_ms ahead of this
  // node's clock (the version clock could otherwise be pushed to wrap), a writer that is not
  // an id.
  std::string RecordProblem(const wire::Record& rec) const;
  // Whether `expiry` is the tombstone another node's sweeper left for `held` (one version above
  // it, same writer) while by this node's clock `held` has not expired yet: each node expires
  // by its own clock, so such a tombstone is neither stored nor answered here until then.
  bool ExpiresLaterHere(const wire::Record& expiry, const wire::Record& held) const;
  // Whether `version` is not ahead of this node's clock by more than the allowed skew.
  bool VersionPlausible(uint64_t version) const;
  // Stores `rec` unless the record already there outranks it; then `*stored` is false and
  // `*kept` (if given) is that record. InvalidArgument, storing nothing, when RecordProblem
  // finds something wrong with it. A stored change of a watched key goes to the WatchLog
  // with `link` (how it follows the version before it). `new_version` (an owner taking a new
  // write): a record already there at the same version from another writer outranks it too,
  // so that the write is stamped again above it instead of replacing a version that watchers
  // and readers may have seen.
  [[nodiscard]] Status StoreIfNewer(const Id& key_id, const wire::Record& rec,
                                    bool* stored = nullptr, wire::Record* kept = nullptr,
                                    const ChangeLink& link = ChangeLink{},
                                    bool new_version = false);
  // A write with no version yet (a client's put or delete at its owner): stamps `*rec` with a
  // version above the record it replaces (read once) and above every version this node has
  // seen, and with `writer` (this node), then stores it as StoreIfNewer would; such a version
  // outranks whatever is there. InvalidArgument, storing nothing, when RecordProblem finds
  // something wrong with the stamped record.
  [[nodiscard]] Status StoreStamped(const Id& key_id, wire::Record* rec, const Id& writer,
                                    const ChangeLink& link);
  // Erases each stamped record that is still at the stamped version (and, with
  // `tombstones_only`, still a tombstone), in one batch. Returns how many were erased.
  [[nodiscard]] Result<uint64_t> EraseIfUnchanged(const std::vector<RecordStamp>& stamps,
                                                  bool tombstones_only);
  // A page of (range.from, range.to] continuing after key id `after` when given (which must
  // lie in the range; after == range.to leaves nothing).
  [[nodiscard]] Result<StorePage> ReadPage(const KeyRange& range, const std::optional<Id>& after,
                                           const PageLimits& limits,
                                           const Store::Filter& keep = nullptr);
  // Live (not deleted) records in (from, to] (from == to: all), and tombstones; from the
  // ledger, scanning at most the two edge arcs.
  // The store's error when it cannot be read.
  [[nodiscard]] Result<LedgerTally> Tally(const Id& from, const Id& to) const;
  // A new version for a write this node stamps: above every version seen, at least the wall
  // clock's. Every version handed out stays below a lease kept in the store's meta value
  // "version-lease", kVersionLeaseMs ahead and written again when a version reaches it, so a
  // restart (ObserveAllVersions) continues above every version handed out before, including
  // those of writes stored only elsewhere and a wall clock set back meanwhile. A lease the
  // store cannot keep is logged (kWarn through `log`) and tried again at the next version.
  uint64_t NextVersion(const std::function<void(const std::string&)>& log);
  static constexpr uint64_t kVersionLeaseMs = 200;
  // Versions continue above everything stored (a restart on the same data) and above the
  // lease of versions handed out (NextVersion); also fills the
  // expiry index from the records in `expiries` that carry an expiry (the keys this ring
  // position accounts for: vnodes share the store), and the store's ledger when no vnode
  // sharing the store has filled it yet (the same scan).
  [[nodiscard]] Status ObserveAllVersions(const KeyRange& expiries);
  // The records with an expiry time that were stored (the ExpirySweeper's work list).
  ExpiryIndex& expiry() { return expiry_; }

 private:
  // Writes `rec` over `old` (null: none) and tells the expiry index and the watch log (where a
  // value past its expiry that `rec` replaces shows its expiry first).
  [[nodiscard]] Status Replace(const Id& key_id, const wire::Record& rec, const wire::Record* old,
                               const ChangeLink& link);

  LedgerStore* store_;
  VersionClock* clock_;
  uint64_t version_lease_ = 0;  // versions below it are covered by the stored lease
  bool lease_failing_ = false;  // the last lease write failed (said once)
  const NodeConfig* config_;
  const Clock* now_;
  WatchLog* watches_;
  ExpiryIndex expiry_;
  // The record a write replaces, as StoreIfNewer and StoreStamped read it (one Use per call).
  KeptRecord replaced_;
};

// The stamps of the records of a page.
std::vector<RecordStamp> StampsOf(const StorePage& page);

}  // namespace chord

#endif  // CHORD_NODE_CORE_RECORD_STORE_H_
