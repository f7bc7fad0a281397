// ExpiryIndex: the in-memory index of the records that carry an expiry time (each key's
// expiry time, and the keys by that time), so that the ExpirySweeper finds the expired ones
// without scanning the store. RecordStore fills it for every live record with an expiry it
// stores, and once at start-up from the whole store. It holds one entry per key: a key written
// again with an expiry moves its entry to the new time, so a key refreshed often with a long
// TTL (a lease, a session) takes one entry, not one per write; a key deleted or written
// without an expiry is forgotten. Bounded by its capacity (NodeConfig::max_expiry_index_entries
// keys): once a key could not be indexed for lack of room, `overflowed()` is true and the
// sweeper also scans the store in slices, noting what it finds, until a whole pass of the store
// was made with no key refused (`refusals()` unchanged): then it calls EndOverflow(). The vnodes
// of a process share their store and count refusals together (ShareRefusals): a key refused
// by one position's index may be another's to expire, so every position makes that pass. Entries
// may be stale (the key was erased by a hand-over or clean-up since); the sweeper checks the
// stored record. Not copyable (its time order points into its key map). Not thread-safe; the
// node's thread only.
#ifndef CHORD_NODE_CORE_EXPIRY_INDEX_H_
#define CHORD_NODE_CORE_EXPIRY_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/id.h"

namespace chord {

class ExpiryIndex {
 public:
  struct Entry {
    uint64_t expires_unix_ms = 0;
    Id key_id;
    std::string key;
  };

  explicit ExpiryIndex(size_t max_entries) : max_entries_(max_entries) {}
  ExpiryIndex(const ExpiryIndex&) = delete;
  ExpiryIndex& operator=(const ExpiryIndex&) = delete;

  // Remembers that `key` expires at `expires_unix_ms` (not 0), in place of any earlier time
  // noted for it.
  void Note(uint64_t expires_unix_ms, const Id& key_id, const std::string& key);
  // Forgets `key` (deleted, or written again without an expiry), if it is indexed.
  void Forget(const Id& key_id, const std::string& key);
  // Removes and returns up to `max` entries due at `now_wall_ms`, earliest first (entries due
  // at the same time by key id, then key).
  std::vector<Entry> TakeDue(uint64_t now_wall_ms, size_t max);
  size_t size() const { return by_key_.size(); }
  // Some key was refused since the last EndOverflow (or ever).
  bool overflowed() const { return *refusals_ != settled_; }
  // Keys not indexed for lack of room, ever (each Note of a new key refused counts), by this
  // index or those it shares the count with.
  uint64_t refusals() const { return *refusals_; }
  // The caller has seen every key with an expiry in the store indexed: a whole pass of the
  // store noted each one, and refusals() did not change meanwhile.
  void EndOverflow() { settled_ = *refusals_; }
  // Counts refusals in `shared` (which must outlive the index), with the other indexes of the
  // process's positions, from now on; refusals so far are added to it, and the index counts as
  // overflowed while `shared` is above 0 until its next EndOverflow. Before any pass.
  void ShareRefusals(uint64_t* shared) {
    *shared += *refusals_;
    refusals_ = shared;
    settled_ = 0;
  }

 private:
  using Key = std::pair<Id, std::string>;
  // Orders keys by id, then key; also finds a key by (id, view) without copying it.
  struct KeyLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      if (a.first != b.first) return a.first < b.first;
      return std::string_view(a.second) < std::string_view(b.second);
    }
  };
  using ByKey = std::map<Key, uint64_t, KeyLess>;
  // (expiry time, key), the key pointing into by_key_ (a map's keys do not move).
  using Due = std::pair<uint64_t, const Key*>;
  struct Earlier {
    bool operator()(const Due& a, const Due& b) const {
      return a.first != b.first ? a.first < b.first : KeyLess()(*a.second, *b.second);
    }
  };

  ByKey by_key_;                    // each key's expiry time
  std::set<Due, Earlier> by_time_;  // the same entries, by expiry time
  size_t max_entries_;
  uint64_t own_refusals_ = 0;
  uint64_t* refusals_ = &own_refusals_;  // own_refusals_, or the process's (ShareRefusals)
  uint64_t settled_ = 0;                 // refusals() at the last EndOverflow
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_EXPIRY_INDEX_H_
