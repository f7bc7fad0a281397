// ExpiryIndex: the in-memory index of the records that carry an expiry time (expiry time ->
// key id and key), so that the ExpirySweeper finds the expired ones without scanning the
// store. RecordStore fills it for every live record with an expiry it stores, and once at
// start-up from the whole store. It holds one entry per key: a key written again with an
// expiry moves its entry to the new time, so a key refreshed often with a long TTL (a lease,
// a session) takes one entry, not one per write. Bounded by kMaxEntries keys: once a key
// could not be indexed for lack of room, `overflowed()` stays true and the sweeper also scans
// the store in slices. Entries may be stale (the key was deleted, or written again without an
// expiry, since); the sweeper checks the stored record. Not thread-safe; the node's thread
// only.
#ifndef CHORD_NODE_CORE_EXPIRY_INDEX_H_
#define CHORD_NODE_CORE_EXPIRY_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "protocol/id.h"

namespace chord {

class ExpiryIndex {
 public:
  static constexpr size_t kMaxEntries = 200'000;

  struct Entry {
    uint64_t expires_unix_ms = 0;
    Id key_id;
    std::string key;
  };

  // Remembers that `key` expires at `expires_unix_ms` (not 0), in place of any earlier time
  // noted for it.
  void Note(uint64_t expires_unix_ms, const Id& key_id, const std::string& key);
  // Removes and returns up to `max` entries due at `now_wall_ms`, earliest first (keys due at
  // the same time in key order).
  std::vector<Entry> TakeDue(uint64_t now_wall_ms, size_t max);
  size_t size() const { return by_key_.size(); }
  bool overflowed() const { return overflowed_; }

 private:
  using Key = std::pair<Id, std::string>;
  // (expiry time, key), the key pointing into by_key_ (a map's keys do not move).
  using Due = std::pair<uint64_t, const Key*>;
  struct Earlier {
    bool operator()(const Due& a, const Due& b) const {
      return a.first != b.first ? a.first < b.first : *a.second < *b.second;
    }
  };

  std::map<Key, uint64_t> by_key_;  // each key's expiry time
  std::set<Due, Earlier> by_time_;  // the same entries, by expiry time
  bool overflowed_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_EXPIRY_INDEX_H_
