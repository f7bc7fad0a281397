// WatchLog: the recent changes of the keys that watchers follow, kept by every holder of such
// a key (its owner, which watchers poll, and its replicas, which take over when the owner
// dies), so that a watcher can be sent every change after the last version it saw — or told
// plainly that this node cannot prove it has them all (a resync), never given a silent gap.
//
// Each change is an event (version, type, value) with a link: the version its holder had
// before it. A change is linked when that is known for the whole replica set: the owner's own
// writes (its previous record) and replicated writes of a watched key (the owner sends its
// previous version along). Changes that arrive otherwise (anti-entropy, read repair, a
// hand-over) are unlinked. Events after version V are sent only along an unbroken chain of
// links starting at V. The owner's own writes are held back (unpublished) until the write has
// been answered by its replica set, so that a watcher never sees a change that the node taking
// over from a crashed owner might lack.
//
// Bounded: kMaxWatchedKeys keys (the least recently used is forgotten), kMaxEventsPerKey
// events per key and kMaxHeldBytes in all, each event counted as its value plus
// kEventOverheadBytes (the oldest events go first; a watcher behind them gets a resync). A key no
// one polls and no watched write touches for kForgetAfterMs is forgotten. Owned by the NodeContext;
// fed by the RecordStore, read by the WatchService; the node's thread only.
#ifndef CHORD_NODE_CORE_WATCH_WATCH_LOG_H_
#define CHORD_NODE_CORE_WATCH_WATCH_LOG_H_

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/chord.pb.h"

namespace chord {

// How a stored change links to the one before it (see the class comment).
struct ChangeLink {
  enum class Kind : uint8_t {
    kUnlinked,  // the previous version is not known for the replica set
    kLocal,     // the record this node held before (the owner's own writes)
    kGiven,     // `prev`, as the owner sent it
  };
  Kind kind = Kind::kUnlinked;
  uint64_t prev = 0;
  bool published = true;  // false: held back until Publish (the owner's unanswered writes)
};

class WatchLog {
 public:
  static constexpr size_t kMaxWatchedKeys = 4096;
  static constexpr size_t kMaxEventsPerKey = 1024;
  static constexpr size_t kMaxHeldBytes = 64u << 20;
  // What an event costs beside its value bytes: in memory (its object, its slot, a value's
  // allocation) and, with room to spare, on the wire (version, link, tags). A delete or an
  // empty value is not free.
  static constexpr size_t kEventOverheadBytes = 96;
  static size_t EventBytes(const wire::WatchEvent& e) {
    return e.value().size() + kEventOverheadBytes;
  }
  // What a hand-over carrying `h` is charged for it: its key, and each change as an event.
  static size_t HistoryBytes(const wire::WatchHistory& h);
  static constexpr uint64_t kForgetAfterMs = 120'000;

  // Starts (or refreshes) keeping the changes of `key`, whose current record here is
  // `current` (nullptr: none).
  void Watch(const std::string& key, const wire::Record* current, uint64_t now_ms);
  bool Watched(const std::string& key) const { return keys_.count(key) != 0; }
  // A record of `key` was stored over `prev_local` (0: none) by `link`. No-op for keys not
  // watched.
  void OnStored(const wire::Record& record, uint64_t prev_local, const ChangeLink& link,
                uint64_t now_ms);
  // The change of `key` at `version` turned out not to follow on from the version before it
  // (a replica held a change this node lacks): watchers behind it get a resync.
  void Unlink(const std::string& key, uint64_t version);
  // The owner's write of `key` at `version` has been answered: watchers may see it.
  void Publish(const std::string& key, uint64_t version);
  // The owner's write of `key` at `version` was outranked by a record a replica held (its
  // coordinator stamps it again): it never was the key's state, so watchers never see it.
  // A change that linked to it is unlinked.
  void Retract(const std::string& key, uint64_t version);
  // The link the owner sends along with its write of `key` at `version` (false: not watched
  // or not a linked change of this node).
  bool LinkOf(const std::string& key, uint64_t version, uint64_t* prev) const;

  // The published changes of `key` for a hand-over, the newest that fit in `max_bytes`
  // (HistoryBytes of the result); false when the key is not watched or not even its key fits.
  bool Export(const std::string& key, size_t max_bytes, wire::WatchHistory* out) const;
  // Takes the changes a former holder kept of `history.key`, unless this node keeps some
  // already; malformed histories (too many changes, versions not increasing, values over
  // `max_value_bytes`) are ignored. `handed` is the key's record that came with it: newer
  // than the last change (a write its sender had not yet published), it is kept as an
  // unlinked change, so that a watcher behind it gets a resync rather than a wait.
  void Import(const wire::WatchHistory& history, const wire::Record& handed, size_t max_value_bytes,
              uint64_t now_ms);

  // What a watcher that has seen `after` gets now: at most `max_events` events and
  // `max_value_bytes` of values, or one event of any size (the watcher asks again from the
  // last it got).
  struct Answer {
    std::vector<wire::WatchEvent> events;  // linked, published, in version order
    bool resync = false;                   // nothing can be proven after `after`
  };
  Answer Collect(const std::string& key, uint64_t after, size_t max_events,
                 size_t max_value_bytes) const;

  // Keys with events published since the last call (for waking watchers).
  std::vector<std::string> TakeChanged();
  // Forgets `key`'s changes (its record was erased here: a purged tombstone, a copy cleaned
  // up): the key stays watched from no record, so a watcher starting now (absent, version 0)
  // waits for the next change instead of being sent a resync to version 0 again and again.
  void Forget(const std::string& key);
  // Forgets keys unused for kForgetAfterMs.
  void Expire(uint64_t now_ms);
  size_t watched_keys() const { return keys_.size(); }
  size_t held_bytes() const { return held_bytes_; }

 private:
  struct Event {
    wire::WatchEvent event;
    uint64_t prev = 0;
    bool linked = false;
    bool published = true;
  };
  struct KeyLog {
    uint64_t base = 0;  // the version held when the log started or was last cut (0: none)
    std::deque<Event> events;
    uint64_t used_ms = 0;
  };

  void DropOldest(KeyLog& log);
  void ForgetLeastUsed();

  std::unordered_map<std::string, KeyLog> keys_;
  std::vector<std::string> changed_;
  size_t held_bytes_ = 0;  // EventBytes of every event kept
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_WATCH_WATCH_LOG_H_
