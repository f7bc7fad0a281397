#include "node/storage/rocksdb_store.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/statistics.h>
#include <rocksdb/status.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <filesystem>
#include <optional>
#include <system_error>
#include <unordered_map>
#include <utility>

namespace chord {
namespace {

// The column family of the named values beside the records.
constexpr const char* kMetaFamily = "meta";

// The database key of a record: the key id's 20 big-endian bytes, then the key bytes.
std::string DbKey(const Id& key_id, std::string_view key) {
  std::string out = key_id.ToBytes();
  out.append(key.data(), key.size());
  return out;
}

// The key id of a database key; nullopt when the key is too short to hold one.
std::optional<Id> IdOfDbKey(const rocksdb::Slice& db_key) {
  if (db_key.size() < static_cast<size_t>(Id::kBytes)) return std::nullopt;
  return Id::FromBytes(std::string_view(db_key.data(), Id::kBytes));
}

// RocksDB's message without a trailing period, to end our sentence with one.
std::string Reason(const rocksdb::Status& s) {
  std::string reason = s.ToString();
  while (!reason.empty() && (reason.back() == '.' || reason.back() == ' ')) reason.pop_back();
  return reason;
}

// Whether Open failed because the directory's LOCK file is held, by another process (flock
// EAGAIN: "While lock file: <dir>/LOCK: ...") or by another RocksDbStore in this process.
bool IsLockHeld(const rocksdb::Status& s) {
  if (!s.IsIOError()) return false;
  const std::string msg = s.ToString();
  return msg.find("While lock file") != std::string::npos ||
         msg.find("lock hold by current process") != std::string::npos;
}

Status ReadError(const std::string& dir, const rocksdb::Status& s) {
  return Status::IoError("Reading the RocksDB store in " + dir + " failed: " + Reason(s) + ".");
}

Status WriteError(const std::string& dir, const rocksdb::Status& s) {
  return Status::IoError("Writing the RocksDB store in " + dir + " failed: " + Reason(s) + ".");
}

Status Corrupt(const std::string& dir, const std::string& what) {
  return Status::IoError("The RocksDB store in " + dir + " holds a corrupt record (" + what + ").");
}

rocksdb::WriteOptions MakeWriteOptions(const RocksDbOptions& options) {
  rocksdb::WriteOptions w;
  w.sync = options.sync_writes;
  w.disableWAL = false;  // never: the WAL is what makes an acknowledged write durable
  return w;
}

// The options of both column families: small records read by whole key.
rocksdb::ColumnFamilyOptions FamilyOptions(const rocksdb::Options& db_options,
                                           const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions cf(db_options);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  // A whole-key bloom filter (10 bits a key, ~1% false positives): a get of a key a table
  // file does not hold, and the existence check of every put of a new key, skip the file
  // without reading a block.
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.whole_key_filtering = true;
  // Index and filter blocks live in the block cache (bounded memory however many keys), the
  // newest files' pinned so that they are never read twice; before data blocks in eviction.
  table.cache_index_and_filter_blocks = true;
  table.cache_index_and_filter_blocks_with_high_priority = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  table.format_version = 5;
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  // Level sizes follow the data, so that most data sits in the last level: less space and
  // less rewriting than fixed level sizes while the store grows.
  cf.level_compaction_dynamic_level_bytes = true;
  return cf;
}

}  // namespace

Result<std::unique_ptr<RocksDbStore>> RocksDbStore::Open(const std::string& dir,
                                                         RocksDbOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::IoError("Cannot create the data directory " + dir + ": " + ec.message() + ".");
  }

  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;  // "meta" in stores made before it
  db_options.keep_log_file_num = 5;  // RocksDB's own LOG files, not the write-ahead log
  // Counters only (no histograms or timers, which cost on every operation): the bytes
  // behind write_stats().
  std::shared_ptr<rocksdb::Statistics> statistics = rocksdb::CreateDBStatistics();
  statistics->set_stats_level(rocksdb::StatsLevel::kExceptHistogramOrTimers);
  db_options.statistics = statistics;
  const std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  const std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, FamilyOptions(db_options, cache)},
      {kMetaFamily, FamilyOptions(db_options, cache)}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      rocksdb::DB::Open(rocksdb::DBOptions(db_options), dir, families, &handles, &raw);
  if (!s.ok()) {
    if (IsLockHeld(s)) {
      return Status::Unavailable("The data directory " + dir +
                                 " is locked: another chord-node seems to be using it; stop "
                                 "that process or pass a different --data-dir.");
    }
    return Status::IoError("Cannot open the RocksDB store in " + dir + ": " + Reason(s) + ".");
  }
  std::unique_ptr<rocksdb::DB> db(raw);

  // One pass over the keys sets the counter Put and Erase keep up to date.
  uint64_t count = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++count;
    if (!it->status().ok()) {
      const std::string why = Reason(it->status());
      it.reset();
      for (rocksdb::ColumnFamilyHandle* h : handles) (void)db->DestroyColumnFamilyHandle(h);
      return Status::IoError("Cannot open the RocksDB store in " + dir +
                             ": counting its records failed: " + why + ".");
    }
  }
  return std::unique_ptr<RocksDbStore>(
      new RocksDbStore(dir, std::move(db), std::move(handles), options, count, statistics));
}

RocksDbStore::RocksDbStore(std::string dir, std::unique_ptr<rocksdb::DB> db,
                           std::vector<rocksdb::ColumnFamilyHandle*> handles,
                           RocksDbOptions options, uint64_t count,
                           std::shared_ptr<rocksdb::Statistics> statistics)
    : dir_(std::move(dir)),
      db_(std::move(db)),
      handles_(std::move(handles)),
      options_(options),
      count_(count),
      statistics_(std::move(statistics)) {}

RocksDbWriteStats RocksDbStore::write_stats() const {
  RocksDbWriteStats stats;
  stats.user_bytes = statistics_->getTickerCount(rocksdb::BYTES_WRITTEN);
  stats.wal_bytes = statistics_->getTickerCount(rocksdb::WAL_FILE_BYTES);
  stats.flush_bytes = statistics_->getTickerCount(rocksdb::FLUSH_WRITE_BYTES);
  stats.compaction_bytes = statistics_->getTickerCount(rocksdb::COMPACT_WRITE_BYTES);
  return stats;
}

uint64_t RocksDbStore::point_reads() const {
  return statistics_->getTickerCount(rocksdb::NUMBER_KEYS_READ);
}

uint64_t RocksDbStore::table_file_bytes() const {
  uint64_t bytes = 0;
  uint64_t family_bytes = 0;
  for (rocksdb::ColumnFamilyHandle* h : handles_) {
    if (db_->GetIntProperty(h, rocksdb::DB::Properties::kLiveSstFilesSize, &family_bytes)) {
      bytes += family_bytes;
    }
  }
  return bytes;
}

RocksDbStore::~RocksDbStore() {
  // Close waits for background work; nothing is left to report it to, and every write that
  // returned OK is already in the write-ahead log.
  for (rocksdb::ColumnFamilyHandle* h : handles_) {
    rocksdb::Status destroyed = db_->DestroyColumnFamilyHandle(h);
    (void)destroyed;
  }
  rocksdb::Status s = db_->Close();
  (void)s;
}

Status RocksDbStore::Flush() {
  rocksdb::FlushOptions flush;
  flush.wait = true;
  rocksdb::Status s = db_->Flush(flush, handles_);
  return s.ok() ? Status::Ok() : WriteError(dir_, s);
}

Status RocksDbStore::PutMeta(std::string_view name, std::string_view value) {
  rocksdb::Status s =
      db_->Put(MakeWriteOptions(options_), handles_[1], rocksdb::Slice(name.data(), name.size()),
               rocksdb::Slice(value.data(), value.size()));
  return s.ok() ? Status::Ok() : WriteError(dir_, s);
}

Status RocksDbStore::GetMeta(std::string_view name, std::string* value) {
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), handles_[1],
                               rocksdb::Slice(name.data(), name.size()), value);
  if (s.IsNotFound()) return Status::NotFound("no such value");
  return s.ok() ? Status::Ok() : ReadError(dir_, s);
}

Status RocksDbStore::EraseMeta(std::string_view name) {
  rocksdb::Status s = db_->Delete(MakeWriteOptions(options_), handles_[1],
                                  rocksdb::Slice(name.data(), name.size()));
  return s.ok() ? Status::Ok() : WriteError(dir_, s);
}

Status RocksDbStore::ScanMeta(std::string_view prefix, const MetaVisitor& visit) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[1]));
  for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size())); it->Valid(); it->Next()) {
    const std::string_view name(it->key().data(), it->key().size());
    if (name.substr(0, prefix.size()) != prefix) break;
    if (!visit(name, std::string_view(it->value().data(), it->value().size()))) break;
  }
  return it->status().ok() ? Status::Ok() : ReadError(dir_, it->status());
}

Result<bool> RocksDbStore::Contains(const std::string& db_key) {
  rocksdb::PinnableSlice ignored;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), db_key, &ignored);
  if (s.ok()) return true;
  if (s.IsNotFound()) return false;
  return ReadError(dir_, s);
}

Status RocksDbStore::Put(const Id& key_id, const wire::Record& record) {
  Result<bool> existed = Contains(DbKey(key_id, record.key()));
  if (!existed.ok()) return existed.status();
  return PutKnowing(key_id, record, *existed);
}

Status RocksDbStore::PutKnowing(const Id& key_id, const wire::Record& record, bool existed) {
  std::string value;
  if (!record.SerializeToString(&value)) {
    return Status::InvalidArgument("The record for a key of " +
                                   std::to_string(record.key().size()) +
                                   " bytes could not be serialized.");
  }
  rocksdb::Status s = db_->Put(MakeWriteOptions(options_), DbKey(key_id, record.key()), value);
  if (!s.ok()) return WriteError(dir_, s);
  if (!existed) ++count_;
  return Status::Ok();
}

Status RocksDbStore::Get(const Id& key_id, std::string_view key, wire::Record* out) {
  rocksdb::PinnableSlice value;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), DbKey(key_id, key), &value);
  if (s.IsNotFound()) return Status::NotFound("no such key");
  if (!s.ok()) return ReadError(dir_, s);
  if (!out->ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return Corrupt(dir_, "the value for key id " + key_id.ToHex() + " does not parse");
  }
  return Status::Ok();
}

Status RocksDbStore::Erase(const Id& key_id, std::string_view key) {
  const std::string db_key = DbKey(key_id, key);
  Result<bool> existed = Contains(db_key);
  if (!existed.ok()) return existed.status();
  if (!*existed) return Status::Ok();
  rocksdb::Status s = db_->Delete(MakeWriteOptions(options_), db_key);
  if (!s.ok()) return WriteError(dir_, s);
  --count_;
  return Status::Ok();
}

Status RocksDbStore::Write(const StoreBatch& batch) {
  // Whether each key has a record before each entry (the stored one, then the entries').
  std::vector<bool> existed;
  existed.reserve(batch.size());
  std::unordered_map<std::string, bool> exists;
  for (const StoreBatch::Entry& e : batch.entries()) {
    std::string db_key = DbKey(e.key_id, e.key);
    auto it = exists.find(db_key);
    if (it == exists.end()) {
      Result<bool> found = Contains(db_key);
      if (!found.ok()) return found.status();
      it = exists.emplace(std::move(db_key), *found).first;
    }
    existed.push_back(it->second);
    it->second = e.record.has_value();
  }
  return WriteKnowing(batch, existed);
}

Status RocksDbStore::WriteKnowing(const StoreBatch& batch, const std::vector<bool>& existed) {
  if (batch.empty()) return Status::Ok();
  if (existed.size() != batch.size()) {
    return Status::InvalidArgument("a batch's existence answers do not match its entries");
  }
  rocksdb::WriteBatch wb;
  int64_t delta = 0;
  const auto& entries = batch.entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    const StoreBatch::Entry& e = entries[i];
    const std::string db_key = DbKey(e.key_id, e.key);
    if (e.record) {
      std::string value;
      if (!e.record->SerializeToString(&value)) {
        return Status::InvalidArgument("The record for a key of " + std::to_string(e.key.size()) +
                                       " bytes could not be serialized.");
      }
      wb.Put(db_key, value);
      if (!existed[i]) ++delta;
    } else {
      wb.Delete(db_key);
      if (existed[i]) --delta;
    }
  }
  rocksdb::Status s = db_->Write(MakeWriteOptions(options_), &wb);
  if (!s.ok()) return WriteError(dir_, s);
  count_ = static_cast<uint64_t>(static_cast<int64_t>(count_) + delta);
  return Status::Ok();
}

Status RocksDbStore::Scan(const Id& from, const Id& to, const Visitor& visit) {
  // (from, to] clockwise: the ids above `from`, then, if the range wraps (or is the whole
  // ring, from == to), the ids from zero up to `to`. One iterator, so one snapshot.
  const bool wraps = !(from < to);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  wire::Record record;

  // Visits the entry under `it`. Sets *stop when the visitor asked to stop.
  auto visit_current = [&](const Id& id, bool* stop) -> Status {
    const rocksdb::Slice value = it->value();
    if (!record.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      return Corrupt(dir_, "the value for key id " + id.ToHex() + " does not parse");
    }
    *stop = !visit(id, record);
    return Status::Ok();
  };

  // Seeking to the 20 bytes of `from` lands on its first record (if any); skip those.
  for (it->Seek(from.ToBytes()); it->Valid(); it->Next()) {
    std::optional<Id> id = IdOfDbKey(it->key());
    if (!id) return Corrupt(dir_, "a key is shorter than a key id");
    if (*id == from) continue;
    if (!wraps && to < *id) return Status::Ok();
    bool stop = false;
    Status s = visit_current(*id, &stop);
    if (!s.ok() || stop) return s;
  }
  if (!it->status().ok()) return ReadError(dir_, it->status());
  if (!wraps) return Status::Ok();

  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::optional<Id> id = IdOfDbKey(it->key());
    if (!id) return Corrupt(dir_, "a key is shorter than a key id");
    if (to < *id) return Status::Ok();
    bool stop = false;
    Status s = visit_current(*id, &stop);
    if (!s.ok() || stop) return s;
  }
  if (!it->status().ok()) return ReadError(dir_, it->status());
  return Status::Ok();
}

}  // namespace chord
