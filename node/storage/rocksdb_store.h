// RocksDbStore: the on-disk Store (chord-node --data-dir, the default), one RocksDB database
// per directory. A record is stored under the 20 big-endian bytes of its key id followed by
// the key bytes, so RocksDB's bytewise order is ring order then key bytes (as in MemoryStore)
// and a ring range is one iterator scan; the value is the serialized wire::Record. Every write
// goes through the write-ahead log, so a write that returned OK survives a crash of the
// process (and, with sync_writes, of the machine). Not thread-safe: the core's thread only.
#ifndef CHORD_NODE_STORAGE_ROCKSDB_STORE_H_
#define CHORD_NODE_STORAGE_ROCKSDB_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "node/storage/store.h"
#include "protocol/base/status.h"

namespace rocksdb {
class ColumnFamilyHandle;
class DB;
class Statistics;
}  // namespace rocksdb

namespace chord {

struct RocksDbOptions {
  // fsync the write-ahead log before every write returns (survives power loss, slower).
  // Without it a returned write survives a crash of the process but not of the machine.
  bool sync_writes = false;
  // Capacity of the cache of uncompressed blocks (data, index and bloom filter blocks).
  size_t block_cache_bytes = size_t{32} << 20;
};

// What RocksDB has written since the store was opened. The write amplification is
// (flush_bytes + compaction_bytes) / user_bytes: the table-file bytes written per byte of
// keys and values put; the write-ahead log (wal_bytes) comes on top of it.
struct RocksDbWriteStats {
  uint64_t user_bytes = 0;        // keys and values of puts and deletes
  uint64_t wal_bytes = 0;         // appended to the write-ahead log
  uint64_t flush_bytes = 0;       // table files written by memtable flushes
  uint64_t compaction_bytes = 0;  // table files written by compactions
  // 0 before anything was written.
  double write_amplification() const {
    return user_bytes == 0 ? 0.0
                           : static_cast<double>(flush_bytes + compaction_bytes) /
                                 static_cast<double>(user_bytes);
  }
};

class RocksDbStore final : public Store {
 public:
  // Opens (creating it and its parents if missing) the store in `dir`. If another process
  // holds the directory's lock the Status (kUnavailable) says so in one sentence naming the
  // directory; any other failure is one sentence naming the directory and RocksDB's reason.
  static Result<std::unique_ptr<RocksDbStore>> Open(const std::string& dir,
                                                    RocksDbOptions options = {});

  RocksDbStore(const RocksDbStore&) = delete;
  RocksDbStore& operator=(const RocksDbStore&) = delete;
  // Closes the database (waits for RocksDB's background work).
  ~RocksDbStore() override;

  [[nodiscard]] Status Put(const Id& key_id, const wire::Record& record) override;
  [[nodiscard]] Status Get(const Id& key_id, std::string_view key, wire::Record* out) override;
  [[nodiscard]] Status Erase(const Id& key_id, std::string_view key) override;
  // One RocksDB WriteBatch: every entry or none.
  [[nodiscard]] Status Write(const StoreBatch& batch) override;
  // Without the read of each key that Put and Write make to keep the count exact.
  [[nodiscard]] Status PutKnowing(const Id& key_id, const wire::Record& record,
                                  bool existed) override;
  [[nodiscard]] Status WriteKnowing(const StoreBatch& batch,
                                    const std::vector<bool>& existed) override;
  [[nodiscard]] Status Scan(const Id& from, const Id& to, const Visitor& visit) override;
  // Exact: counted once at Open and kept up to date by every write.
  uint64_t Count() override { return count_; }
  // In the "meta" column family, apart from the records.
  [[nodiscard]] Status PutMeta(std::string_view name, std::string_view value) override;
  [[nodiscard]] Status GetMeta(std::string_view name, std::string* value) override;
  [[nodiscard]] Status EraseMeta(std::string_view name) override;
  [[nodiscard]] Status ScanMeta(std::string_view prefix, const MetaVisitor& visit) override;

  const std::string& dir() const { return dir_; }
  // Bytes written since Open, from RocksDB's statistics (safe on the core's thread only, like
  // every other method).
  RocksDbWriteStats write_stats() const;
  // Point reads (RocksDB Gets, found or not) since Open, from RocksDB's statistics.
  uint64_t point_reads() const;
  // Bytes of the live table files (RocksDB's "rocksdb.live-sst-files-size").
  uint64_t table_file_bytes() const;
  // Writes the memtables out to table files and waits for it (tests and measurements).
  [[nodiscard]] Status Flush();

 private:
  RocksDbStore(std::string dir, std::unique_ptr<rocksdb::DB> db,
               std::vector<rocksdb::ColumnFamilyHandle*> handles, RocksDbOptions options,
               uint64_t count, std::shared_ptr<rocksdb::Statistics> statistics);

  // Whether the database holds `db_key`; NotFound is false, other errors are returned.
  Result<bool> Contains(const std::string& db_key);

  const std::string dir_;
  const std::unique_ptr<rocksdb::DB> db_;
  // The default column family (records) and "meta"; destroyed before the database closes.
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  const RocksDbOptions options_;
  uint64_t count_;
  const std::shared_ptr<rocksdb::Statistics> statistics_;
};

}  // namespace chord

#endif  // CHORD_NODE_STORAGE_ROCKSDB_STORE_H_
