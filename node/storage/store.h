// Store: the interface through which the protocol core keeps records. Records are ordered by
// the ring id of their key (then by key bytes), so the keys of a ring range (a, b] are one
// scan. Implementations: MemoryStore (memory_store.h); RocksDB comes later. Not thread-safe:
// called from the core's thread only.
#ifndef CHORD_NODE_STORAGE_STORE_H_
#define CHORD_NODE_STORAGE_STORE_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "node/core/status.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"

namespace chord {

class Store {
 public:
  // Return false to stop a scan early.
  using Visitor = std::function<bool(const Id& key_id, const wire::Record& record)>;

  virtual ~Store() = default;

  // Inserts or replaces the record for record.key() (whose ring id is key_id).
  virtual Status Put(const Id& key_id, const wire::Record& record) = 0;
  // NotFound when there is no record for the key.
  virtual Status Get(const Id& key_id, std::string_view key, wire::Record* out) = 0;
  // Removes the record; OK if it was not there.
  virtual Status Erase(const Id& key_id, std::string_view key) = 0;
  // Visits the records whose key id lies in the ring range (from, to], clockwise from
  // `from`; from == to means the whole ring.
  virtual Status Scan(const Id& from, const Id& to, const Visitor& visit) = 0;
  // Number of records held.
  virtual uint64_t Count() = 0;

  // Number of records whose key id lies in (from, to].
  uint64_t CountInRange(const Id& from, const Id& to) {
    uint64_t n = 0;
    Status s = Scan(from, to, [&n](const Id&, const wire::Record&) {
      ++n;
      return true;
    });
    return s.ok() ? n : 0;
  }
};

}  // namespace chord

#endif  // CHORD_NODE_STORAGE_STORE_H_
