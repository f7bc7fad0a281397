// Store: the interface through which the protocol core keeps records. Records are ordered by
// the ring id of their key (then by key bytes), so the keys of a ring range (a, b] are one
// scan. Writes come one at a time or as a StoreBatch applied together; ReadPage cuts a scan
// into pages bounded in bytes and records; a few named values (meta) live beside them.
// Implementations: MemoryStore (memory_store.h) and RocksDbStore (rocksdb_store.h). Not
// thread-safe: called from the core's thread only.
#ifndef CHORD_NODE_STORAGE_STORE_H_
#define CHORD_NODE_STORAGE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"

namespace chord {

// Puts and erases applied together, in order (atomically on RocksDB).
class StoreBatch {
 public:
  struct Entry {
    Id key_id;
    std::string key;
    std::optional<wire::Record> record;  // nullopt: erase the key
  };

  void Put(const Id& key_id, wire::Record record) {
    std::string key = record.key();
    entries_.push_back(Entry{key_id, std::move(key), std::move(record)});
  }
  void Erase(const Id& key_id, std::string_view key) {
    entries_.push_back(Entry{key_id, std::string(key), std::nullopt});
  }
  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<Entry> entries_;
};

// Bounds of one page of a scan.
struct PageLimits {
  size_t max_bytes = std::numeric_limits<size_t>::max();  // by RecordBytes
  size_t max_records = std::numeric_limits<size_t>::max();
};

// One page of a scan: records in scan order with their key ids.
struct StorePage {
  std::vector<std::pair<Id, wire::Record>> records;
  size_t bytes = 0;   // RecordBytes of the records
  bool more = false;  // the scan stopped at a limit; more records may follow the last one
};

class Store {
 public:
  // Return false to stop a scan early.
  using Visitor = std::function<bool(const Id& key_id, const wire::Record& record)>;
  // Which records a page takes; the others are skipped without counting.
  using Filter = std::function<bool(const Id& key_id, const wire::Record& record)>;

  virtual ~Store() = default;

  // Inserts or replaces the record for record.key() (whose ring id is key_id).
  [[nodiscard]] virtual Status Put(const Id& key_id, const wire::Record& record) = 0;
  // NotFound when there is no record for the key. On OK every field of `*out` is the stored
  // record's (none is left as it was); on any other status `*out` is unspecified.
  [[nodiscard]] virtual Status Get(const Id& key_id, std::string_view key, wire::Record* out) = 0;
  // As Get, but the value may be left out (empty): for a caller that needs only what the record
  // says of itself (version, writer, flags, expiry), such as a write reading the record it
  // replaces. A store that can skip copying the value overrides it.
  [[nodiscard]] virtual Status GetHeader(const Id& key_id, std::string_view key,
                                         wire::Record* out) {
    return Get(key_id, key, out);
  }
  // Removes the record; OK if it was not there.
  [[nodiscard]] virtual Status Erase(const Id& key_id, std::string_view key) = 0;
  // Applies every entry of `batch`, in order.
  [[nodiscard]] virtual Status Write(const StoreBatch& batch) = 0;
  // As Put and Write, for a caller that has just read (nothing written since) whether each key
  // had a record: `existed`, and existed[i] for entry i of `batch` (the stored record, or an
  // earlier entry of the batch that put one). A store that keeps an exact count with a read of
  // its own (RocksDbStore) skips that read. A wrong answer makes Count wrong, nothing else.
  [[nodiscard]] virtual Status PutKnowing(const Id& key_id, const wire::Record& record,
                                          bool existed) {
    (void)existed;
    return Put(key_id, record);
  }
  [[nodiscard]] virtual Status WriteKnowing(const StoreBatch& batch,
                                            const std::vector<bool>& existed) {
    (void)existed;
    return Write(batch);
  }
  // Visits the records whose key id lies in the ring range (from, to], clockwise from
  // `from`; from == to means the whole ring.
  [[nodiscard]] virtual Status Scan(const Id& from, const Id& to, const Visitor& visit) = 0;
  // Number of records held.
  virtual uint64_t Count() = 0;
  // Memory the store keeps for reuse (the memory store's free record blocks: freed ones, and
  // the unused ends of its earlier chunks); 0 for a store that keeps none.
  virtual uint64_t FreeHeldBytes() { return 0; }

  // A small named value kept beside the records (the node's remembered ring members), in
  // its own space: it never shows up in scans or counts. NotFound when there is none.
  [[nodiscard]] virtual Status PutMeta(std::string_view name, std::string_view value) = 0;
  [[nodiscard]] virtual Status GetMeta(std::string_view name, std::string* value) = 0;
  // Removes a named value; OK if there was none.
  [[nodiscard]] virtual Status EraseMeta(std::string_view name) = 0;
  // Visits the named values whose names begin with `prefix`, in name order (the hints kept
  // for other members, one value each). Return false to stop early.
  using MetaVisitor = std::function<bool(std::string_view name, std::string_view value)>;
  [[nodiscard]] virtual Status ScanMeta(std::string_view prefix, const MetaVisitor& visit) = 0;

  // The size a record counts for in pages and batches: key and value bytes plus 32.
  static size_t RecordBytes(const wire::Record& r) {
    return r.key().size() + r.value().size() + 32;
  }

  // The records of (from, to] that `keep` accepts (all when it is empty), in scan order,
  // until the next one would go over `limits`; the first accepted record is always taken, and
  // so is every further record of the last one's key id (keys whose SHA-1s collide), since
  // the next page continues after that id.
  [[nodiscard]] Result<StorePage> ReadPage(const Id& from, const Id& to, const PageLimits& limits,
                                           const Filter& keep = nullptr) {
    StorePage page;
    Status s = Scan(from, to, [&](const Id& id, const wire::Record& rec) {
      if (keep && !keep(id, rec)) return true;
      const size_t size = RecordBytes(rec);
      if (!page.records.empty() && page.records.back().first != id &&
          (page.bytes + size > limits.max_bytes || page.records.size() >= limits.max_records)) {
        page.more = true;
        return false;
      }
      page.bytes += size;
      page.records.emplace_back(id, rec);
      return true;
    });
    if (!s.ok()) return s;
    return page;
  }

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
