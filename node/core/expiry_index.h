// ExpiryIndex: the in-memory index of the records that carry an expiry time (expiry time ->
// key id and key), so that the ExpirySweeper finds the expired ones without scanning the
// store. RecordStore fills it for every live record with an expiry it stores, and once at
// start-up from the whole store. Bounded by kMaxEntries: once a record could not be indexed
// for lack of room, `overflowed()` stays true and the sweeper also scans the store in
// slices. Entries may be stale (the key was written again since); the sweeper checks the
// stored record. Not thread-safe; the node's thread only.
#ifndef CHORD_NODE_CORE_EXPIRY_INDEX_H_
#define CHORD_NODE_CORE_EXPIRY_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <map>
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

  // Remembers that `key` expires at `expires_unix_ms` (not 0).
  void Note(uint64_t expires_unix_ms, const Id& key_id, const std::string& key);
  // Removes and returns up to `max` entries due at `now_wall_ms`, earliest first.
  std::vector<Entry> TakeDue(uint64_t now_wall_ms, size_t max);
  size_t size() const { return entries_.size(); }
  bool overflowed() const { return overflowed_; }

 private:
  std::multimap<uint64_t, std::pair<Id, std::string>> entries_;
  bool overflowed_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_EXPIRY_INDEX_H_
