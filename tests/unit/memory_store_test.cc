// The Store contract (node/storage/store.h), run on every implementation: MemoryStore,
// RocksDbStore, and RocksDbStore closed and reopened between the writes and the reads (so the
// reads come from the recovered write-ahead log and the files, not the open memtable). Point
// operations, counts, and ring-range scans (a, b] including wrap-around, the whole ring
// (a == b), boundaries and early stop. RocksDB-only behaviour: rocksdb_store_test.cc.
#include "node/storage/memory_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "node/storage/rocksdb_store.h"
#include "tests/unit/store_test_records.h"

namespace chord {
namespace {

using test_support::IdOf;
using test_support::MakeRecord;

// An id from a short hex prefix, padded with `fill`: HighId("8", '0') is 2^159.
Id HighId(const std::string& high_hex, char fill) {
  auto id = Id::FromHex(high_hex + std::string(40 - high_hex.size(), fill));
  EXPECT_TRUE(id.has_value()) << high_hex;
  return id.value_or(Id());
}

// Every (id, key) a scan of (from, to] visits, in visiting order.
std::vector<std::pair<Id, std::string>> ScanAll(Store& store, const Id& from, const Id& to) {
  std::vector<std::pair<Id, std::string>> out;
  Status s = store.Scan(from, to, [&out](const Id& id, const wire::Record& r) {
    out.emplace_back(id, r.key());
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

std::vector<std::string> ScanKeys(Store& store, const Id& from, const Id& to) {
  std::vector<std::string> keys;
  for (auto& [id, key] : ScanAll(store, from, to)) keys.push_back(key);
  return keys;
}

using Keys = std::vector<std::string>;

enum class StoreKind { kMemory, kRocksDb, kRocksDbReopened };

std::string KindName(const ::testing::TestParamInfo<StoreKind>& info) {
  switch (info.param) {
    case StoreKind::kMemory:
      return "Memory";
    case StoreKind::kRocksDb:
      return "RocksDb";
    case StoreKind::kRocksDbReopened:
      return "RocksDbReopened";
  }
  return "Unknown";
}

// Owns the store under test and, for RocksDB, its temporary directory (removed at the end).
class StoreTestBase : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    if (GetParam() == StoreKind::kMemory) {
      store_ = std::make_unique<MemoryStore>();
      return;
    }
    std::string pattern = ::testing::TempDir() + "chord-store-contract-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr) << pattern;
    dir_ = pattern;
    OpenRocksDb();
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  // For kRocksDbReopened: closes and reopens the store, so what follows reads what was
  // recovered from disk. Nothing for the other kinds.
  void MaybeReopen() {
    if (GetParam() != StoreKind::kRocksDbReopened) return;
    const uint64_t count = store_->Count();
    store_.reset();
    OpenRocksDb();
    ASSERT_EQ(store_->Count(), count);
  }
  Store& store() { return *store_; }

 private:
  void OpenRocksDb() {
    auto opened = RocksDbStore::Open(dir_ + "/db");
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
  }
  std::string dir_;
  std::unique_ptr<Store> store_;
};

using StoreContractTest = StoreTestBase;

TEST_P(StoreContractTest, EmptyStore) {
  MaybeReopen();
  EXPECT_EQ(store().Count(), 0u);
  wire::Record r;
  EXPECT_TRUE(store().Get(IdOf("1"), "k", &r).IsNotFound());
  EXPECT_TRUE(ScanAll(store(), IdOf("1"), IdOf("1")).empty());
  EXPECT_TRUE(ScanAll(store(), IdOf("1"), IdOf("5")).empty());
  EXPECT_TRUE(ScanAll(store(), IdOf("5"), IdOf("1")).empty());
  EXPECT_EQ(store().CountInRange(Id(), Id()), 0u);
}

TEST_P(StoreContractTest, PutGetEraseCount) {
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord("a", "va")).ok());
  ASSERT_TRUE(store().Put(IdOf("20"), MakeRecord("b", "vb", 7)).ok());
  EXPECT_EQ(store().Count(), 2u);
  MaybeReopen();

  wire::Record r;
  ASSERT_TRUE(store().Get(IdOf("10"), "a", &r).ok());
  EXPECT_EQ(r.key(), "a");
  EXPECT_EQ(r.value(), "va");
  ASSERT_TRUE(store().Get(IdOf("20"), "b", &r).ok());
  EXPECT_EQ(r.value(), "vb");
  EXPECT_EQ(r.version(), 7u);

  // A lookup needs both the id and the key.
  EXPECT_TRUE(store().Get(IdOf("10"), "b", &r).IsNotFound());
  EXPECT_TRUE(store().Get(IdOf("11"), "a", &r).IsNotFound());

  ASSERT_TRUE(store().Erase(IdOf("10"), "a").ok());
  EXPECT_EQ(store().Count(), 1u);
  MaybeReopen();
  EXPECT_TRUE(store().Get(IdOf("10"), "a", &r).IsNotFound());
  ASSERT_TRUE(store().Get(IdOf("20"), "b", &r).ok());

  // Erasing what is not there is fine and changes nothing.
  EXPECT_TRUE(store().Erase(IdOf("10"), "a").ok());
  EXPECT_TRUE(store().Erase(IdOf("20"), "not-b").ok());
  EXPECT_EQ(store().Count(), 1u);
  MaybeReopen();
  EXPECT_EQ(store().Count(), 1u);
  EXPECT_EQ(ScanKeys(store(), Id(), Id()), (Keys{"b"}));
}

TEST_P(StoreContractTest, PutReplaces) {
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord("a", "old", 1)).ok());
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord("a", "new", 2)).ok());
  EXPECT_EQ(store().Count(), 1u);
  MaybeReopen();
  wire::Record r;
  ASSERT_TRUE(store().Get(IdOf("10"), "a", &r).ok());
  EXPECT_EQ(r.value(), "new");
  EXPECT_EQ(r.version(), 2u);
  EXPECT_EQ(store().CountInRange(Id(), Id()), 1u);
}

// A write reads the record it replaces first; the Put that follows must replace exactly that
// record, and only while nothing has been inserted or erased in between (MemoryStore finds the
// read's slot again without a descent).
TEST_P(StoreContractTest, PutAfterGetReplacesOnlyThatRecord) {
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord("a", "a1", 1)).ok());
  wire::Record r;
  ASSERT_TRUE(store().Get(IdOf("10"), "a", &r).ok());
  // Another key of the same id, and the same key under another id: new records, not "a".
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord("b", "b1", 1)).ok());
  ASSERT_TRUE(store().Get(IdOf("10"), "a", &r).ok());
  ASSERT_TRUE(store().Put(IdOf("11"), MakeRecord("a", "a-other", 1)).ok());
  EXPECT_EQ(store().Count(), 3u);
  ASSERT_TRUE(store().Get(IdOf("10"), "a", &r).ok());
  EXPECT_EQ(r.value(), "a1");
  // Read, then hundreds of inserts and erases (which move the slots: the last record's moves
  // to a new node when its leaf splits), then the write.
  const Id last = HighId("f", 'f');
  ASSERT_TRUE(store().Put(last, MakeRecord("z", "z1", 1)).ok());
  ASSERT_TRUE(store().Get(last, "z", &r).ok());
  for (int i = 0; i < 600; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_TRUE(store().Put(Id::Sha1(k), MakeRecord(k, "v", 1)).ok());
  }
  for (int i = 0; i < 600; i += 2) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_TRUE(store().Erase(Id::Sha1(k), k).ok());
  }
  ASSERT_TRUE(store().Put(last, MakeRecord("z", "z2", 2)).ok());
  ASSERT_TRUE(store().Get(IdOf("10"), "a", &r).ok());
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord("a", "a2", 2)).ok());
  // Read, erase, write again: the record comes back.
  ASSERT_TRUE(store().Get(IdOf("10"), "b", &r).ok());
  ASSERT_TRUE(store().Erase(IdOf("10"), "b").ok());
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord("b", "b2", 2)).ok());
  EXPECT_EQ(store().Count(), 304u);
  MaybeReopen();
  ASSERT_TRUE(store().Get(last, "z", &r).ok());
  EXPECT_EQ(r.value(), "z2");
  ASSERT_TRUE(store().Get(IdOf("10"), "a", &r).ok());
  EXPECT_EQ(r.value(), "a2");
  ASSERT_TRUE(store().Get(IdOf("10"), "b", &r).ok());
  EXPECT_EQ(r.value(), "b2");
  ASSERT_TRUE(store().Get(IdOf("11"), "a", &r).ok());
  EXPECT_EQ(r.value(), "a-other");
  for (int i = 1; i < 600; i += 2) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_TRUE(store().Get(Id::Sha1(k), k, &r).ok()) << k;
    EXPECT_EQ(r.key(), k);
  }
  EXPECT_EQ(store().CountInRange(Id(), Id()), 304u);
}

// GetHeader reads what a record says of itself; a store may leave the value out, and the
// memory store does (that is its point). Writers the memory store keeps in its table (up to 64
// bytes) and in the record (longer ones) both come back.
TEST_P(StoreContractTest, GetHeaderReadsAllButPerhapsTheValue) {
  wire::Record live = MakeRecord("a", std::string(300, 'v'), 7);
  live.set_writer(std::string("\x00\x01", 2) + std::string(80, 'w'));
  live.set_expires_unix_ms(123'456);
  wire::Record tomb = MakeRecord("b", "", 9);
  tomb.set_deleted(true);
  tomb.set_expired(true);
  tomb.set_writer(std::string(20, 'w'));
  wire::Record table = MakeRecord("c", std::string(40, 't'), 5);
  table.set_writer(std::string(20, 'x'));
  for (const wire::Record* r : {&live, &tomb, &table}) {
    ASSERT_TRUE(store().Put(IdOf("10"), *r).ok());
  }
  MaybeReopen();
  for (const wire::Record* want : {&live, &tomb, &table}) {
    wire::Record r;
    r.set_value("left over from an earlier read");
    ASSERT_TRUE(store().GetHeader(IdOf("10"), want->key(), &r).ok()) << want->key();
    EXPECT_EQ(r.key(), want->key());
    EXPECT_EQ(r.version(), want->version());
    EXPECT_EQ(r.writer(), want->writer());
    EXPECT_EQ(r.deleted(), want->deleted());
    EXPECT_EQ(r.expired(), want->expired());
    EXPECT_EQ(r.expires_unix_ms(), want->expires_unix_ms());
    if (GetParam() == StoreKind::kMemory) {
      EXPECT_EQ(r.value(), "");
    } else {
      EXPECT_EQ(r.value(), want->value());
    }
  }
  wire::Record r;
  EXPECT_TRUE(store().GetHeader(IdOf("10"), "d", &r).IsNotFound());
  EXPECT_TRUE(store().GetHeader(IdOf("11"), "a", &r).IsNotFound());
  // A write that read only the header replaces that record, value and all.
  ASSERT_TRUE(store().GetHeader(IdOf("10"), "a", &r).ok());
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord("a", "new", 8)).ok());
  ASSERT_TRUE(store().Get(IdOf("10"), "a", &r).ok());
  EXPECT_EQ(r.value(), "new");
  EXPECT_EQ(store().Count(), 3u);
}

TEST_P(StoreContractTest, CountsAfterOverwriteAndErase) {
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(store().Put(Id::Sha1(std::to_string(i)), MakeRecord(std::to_string(i), "a")).ok());
  }
  EXPECT_EQ(store().Count(), 50u);
  // Overwrite every other record: the count does not change.
  for (int i = 0; i < 50; i += 2) {
    ASSERT_TRUE(store().Put(Id::Sha1(std::to_string(i)), MakeRecord(std::to_string(i), "b")).ok());
  }
  EXPECT_EQ(store().Count(), 50u);
  MaybeReopen();
  // Erase every third, twice each: the second erase changes nothing.
  uint64_t erased = 0;
  for (int i = 0; i < 50; i += 3) {
    ASSERT_TRUE(store().Erase(Id::Sha1(std::to_string(i)), std::to_string(i)).ok());
    ASSERT_TRUE(store().Erase(Id::Sha1(std::to_string(i)), std::to_string(i)).ok());
    ++erased;
  }
  EXPECT_EQ(store().Count(), 50u - erased);
  // Putting an erased key back counts it again.
  ASSERT_TRUE(store().Put(Id::Sha1("0"), MakeRecord("0", "c")).ok());
  EXPECT_EQ(store().Count(), 51u - erased);
  MaybeReopen();
  EXPECT_EQ(store().Count(), 51u - erased);
  EXPECT_EQ(store().CountInRange(Id(), Id()), store().Count());
}

TEST_P(StoreContractTest, TombstonesAreRecordsLikeAnyOther) {
  wire::Record tomb = MakeRecord("a", "", 9);
  tomb.set_deleted(true);
  tomb.set_writer(std::string("\x00\x01w", 3));
  ASSERT_TRUE(store().Put(IdOf("10"), tomb).ok());
  MaybeReopen();
  wire::Record r;
  ASSERT_TRUE(store().Get(IdOf("10"), "a", &r).ok());
  EXPECT_TRUE(r.deleted());
  EXPECT_EQ(r.version(), 9u);
  EXPECT_EQ(r.writer(), std::string("\x00\x01w", 3));
  EXPECT_EQ(store().Count(), 1u);
}

TEST_P(StoreContractTest, KeysAndValuesAreBytes) {
  const std::string key("k\x00\xff\n", 4);
  const std::string value("\x00\x01\x02\xff", 4);
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord(key, value)).ok());
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord("", "empty key")).ok());
  MaybeReopen();
  wire::Record r;
  ASSERT_TRUE(store().Get(IdOf("10"), key, &r).ok());
  EXPECT_EQ(r.key(), key);
  EXPECT_EQ(r.value(), value);
  // A key is not a prefix match: "k" alone is another key.
  EXPECT_TRUE(store().Get(IdOf("10"), "k", &r).IsNotFound());
  ASSERT_TRUE(store().Get(IdOf("10"), "", &r).ok());
  EXPECT_EQ(r.value(), "empty key");
  EXPECT_EQ(ScanKeys(store(), IdOf("f"), IdOf("10")), (Keys{"", key}));
}

TEST_P(StoreContractTest, SameIdDifferentKeysAreDistinctRecords) {
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord("b", "vb")).ok());
  ASSERT_TRUE(store().Put(IdOf("10"), MakeRecord("a", "va")).ok());
  EXPECT_EQ(store().Count(), 2u);
  MaybeReopen();
  wire::Record r;
  ASSERT_TRUE(store().Get(IdOf("10"), "a", &r).ok());
  EXPECT_EQ(r.value(), "va");
  ASSERT_TRUE(store().Get(IdOf("10"), "b", &r).ok());
  EXPECT_EQ(r.value(), "vb");
  // Both are in the range, ordered by key bytes within the id.
  EXPECT_EQ(ScanKeys(store(), IdOf("f"), IdOf("10")), (Keys{"a", "b"}));
  EXPECT_TRUE(ScanKeys(store(), IdOf("10"), IdOf("11")).empty());
  // Both are excluded by a range starting at their id unless it is the whole ring.
  EXPECT_EQ(ScanKeys(store(), IdOf("10"), IdOf("f")), Keys{});
  EXPECT_EQ(ScanKeys(store(), IdOf("10"), IdOf("10")), (Keys{"a", "b"}));
}

TEST_P(StoreContractTest, ScanVisitsInIdOrderNotInsertionOrder) {
  // Inserted out of order; "x100" sorts after "x0ff" numerically, also by bytes.
  ASSERT_TRUE(store().Put(IdOf("100"), MakeRecord("x100", "")).ok());
  ASSERT_TRUE(store().Put(IdOf("2"), MakeRecord("x002", "")).ok());
  ASSERT_TRUE(store().Put(IdOf("ff"), MakeRecord("x0ff", "")).ok());
  ASSERT_TRUE(store().Put(HighId("8", '0'), MakeRecord("xhalf", "")).ok());
  ASSERT_TRUE(store().Put(IdOf("1"), MakeRecord("x001", "")).ok());
  MaybeReopen();
  EXPECT_EQ(ScanKeys(store(), Id(), HighId("f", 'f')),
            (Keys{"x001", "x002", "x0ff", "x100", "xhalf"}));
}

TEST_P(StoreContractTest, IdOrderBeatsKeyOrder) {
  // Records are ordered by id first; key bytes only order records of the same id.
  ASSERT_TRUE(store().Put(IdOf("2"), MakeRecord("a", "")).ok());
  ASSERT_TRUE(store().Put(IdOf("1"), MakeRecord("z", "")).ok());
  ASSERT_TRUE(store().Put(IdOf("1"), MakeRecord("zz", "")).ok());
  ASSERT_TRUE(store().Put(IdOf("100"), MakeRecord("", "")).ok());
  MaybeReopen();
  EXPECT_EQ(ScanKeys(store(), Id(), Id()), (Keys{"z", "zz", "a", ""}));
}

class StoreScanTest : public StoreTestBase {
 protected:
  void SetUp() override {
    StoreTestBase::SetUp();
    if (HasFatalFailure()) return;
    // Records at 0, 0x10, 0x20, 0x30, 2^159 and Max.
    Add(Id(), "zero");
    Add(IdOf("10"), "r10");
    Add(IdOf("20"), "r20");
    Add(IdOf("30"), "r30");
    Add(HighId("8", '0'), "half");
    Add(Id::Max(), "max");
    MaybeReopen();
  }
  void Add(const Id& id, const std::string& key) {
    ASSERT_TRUE(store().Put(id, MakeRecord(key, "v-" + key)).ok());
  }
};

TEST_P(StoreScanTest, NonWrappingRange) {
  EXPECT_EQ(ScanKeys(store(), IdOf("5"), IdOf("25")), (Keys{"r10", "r20"}));
  EXPECT_EQ(ScanKeys(store(), IdOf("11"), IdOf("1f")), Keys{});
  EXPECT_EQ(ScanKeys(store(), IdOf("30"), HighId("8", '0')), (Keys{"half"}));
}

TEST_P(StoreScanTest, BoundariesExcludeFromAndIncludeTo) {
  EXPECT_EQ(ScanKeys(store(), IdOf("10"), IdOf("30")), (Keys{"r20", "r30"}));
  EXPECT_EQ(ScanKeys(store(), IdOf("10"), IdOf("20")), (Keys{"r20"}));
  EXPECT_EQ(ScanKeys(store(), IdOf("f"), IdOf("10")), (Keys{"r10"}));
  EXPECT_EQ(ScanKeys(store(), IdOf("10"), IdOf("11")), Keys{});
  // The record at zero is only in ranges that end at or wrap past zero.
  EXPECT_EQ(ScanKeys(store(), Id(), IdOf("10")), (Keys{"r10"}));
  EXPECT_EQ(ScanKeys(store(), Id::Max(), Id()), (Keys{"zero"}));
  EXPECT_EQ(ScanKeys(store(), Id::Max() - IdOf("1"), Id::Max()), (Keys{"max"}));
}

TEST_P(StoreScanTest, WrappingRangeGoesClockwiseThroughZero) {
  // (0x25, 0x15]: from above 0x25 to Max, then 0 up to 0x15.
  EXPECT_EQ(ScanKeys(store(), IdOf("25"), IdOf("15")), (Keys{"r30", "half", "max", "zero", "r10"}));
  // (2^159, 0]: max, then zero.
  EXPECT_EQ(ScanKeys(store(), HighId("8", '0'), Id()), (Keys{"max", "zero"}));
  // (Max, 0x10]: zero and r10; the record at Max itself is excluded.
  EXPECT_EQ(ScanKeys(store(), Id::Max(), IdOf("10")), (Keys{"zero", "r10"}));
  // (0x30, 0x10]
  EXPECT_EQ(ScanKeys(store(), IdOf("30"), IdOf("10")), (Keys{"half", "max", "zero", "r10"}));
  // (0x20, 0x10]: r20 is `from`, so excluded although the range covers almost the ring.
  EXPECT_EQ(ScanKeys(store(), IdOf("20"), IdOf("10")), (Keys{"r30", "half", "max", "zero", "r10"}));
}

TEST_P(StoreScanTest, EqualEndpointsScanTheWholeRingOnce) {
  const std::vector<std::pair<Id, Keys>> cases = {
      {IdOf("20"), {"r30", "half", "max", "zero", "r10", "r20"}},
      {IdOf("15"), {"r20", "r30", "half", "max", "zero", "r10"}},
      {Id(), {"r10", "r20", "r30", "half", "max", "zero"}},
      {Id::Max(), {"zero", "r10", "r20", "r30", "half", "max"}},
  };
  for (const auto& [a, want] : cases) {
    EXPECT_EQ(ScanKeys(store(), a, a), want) << a.ToHex();
    EXPECT_EQ(store().CountInRange(a, a), store().Count());
  }
}

TEST_P(StoreScanTest, ScanPassesTheMatchingIdAndRecord) {
  for (auto& [id, key] : ScanAll(store(), Id(), Id())) {
    wire::Record r;
    ASSERT_TRUE(store().Get(id, key, &r).ok()) << key;
    EXPECT_EQ(r.value(), "v-" + key);
  }
  Status s = store().Scan(Id(), Id(), [](const Id& id, const wire::Record& r) {
    if (r.key() == "r20") {
      EXPECT_EQ(id, IdOf("20"));
    }
    if (r.key() == "max") {
      EXPECT_EQ(id, Id::Max());
    }
    EXPECT_EQ(r.value(), "v-" + r.key());
    return true;
  });
  EXPECT_TRUE(s.ok());
}

TEST_P(StoreScanTest, EarlyStop) {
  for (const auto& [from, to] : std::vector<std::pair<Id, Id>>{{Id(), Id()},
                                                               {IdOf("25"), IdOf("15")},
                                                               {Id(), Id::Max()},
                                                               {IdOf("30"), IdOf("30")},
                                                               {Id::Max(), IdOf("20")}}) {
    const auto all = ScanAll(store(), from, to);
    for (size_t stop_after = 1; stop_after <= all.size(); ++stop_after) {
      std::vector<std::string> seen;
      Status s = store().Scan(from, to, [&](const Id&, const wire::Record& r) {
        seen.push_back(r.key());
        return seen.size() < stop_after;
      });
      EXPECT_TRUE(s.ok());
      ASSERT_EQ(seen.size(), stop_after) << from.ToHex() << " " << to.ToHex();
      for (size_t i = 0; i < stop_after; ++i) EXPECT_EQ(seen[i], all[i].second);
    }
  }
}

TEST_P(StoreScanTest, CountInRange) {
  EXPECT_EQ(store().CountInRange(IdOf("5"), IdOf("25")), 2u);
  EXPECT_EQ(store().CountInRange(IdOf("25"), IdOf("15")), 5u);
  EXPECT_EQ(store().CountInRange(IdOf("11"), IdOf("1f")), 0u);
  EXPECT_EQ(store().Count(), 6u);
}

// Every (from, to] over a set of endpoints, against a reference on a small ring with the
// same cyclic order (membership in a ring interval depends only on that order).
TEST_P(StoreContractTest, ScanMatchesModularReference) {
  constexpr int kRing = 1000;
  struct Point {
    Id id;
    int small;
  };
  const std::vector<Point> points = {
      {Id(), 0},
      {IdOf("1"), 1},
      {IdOf("2"), 2},
      {IdOf("3"), 3},
      {IdOf("7"), 7},
      {HighId("7", 'f'), 499},
      {HighId("8", '0'), 500},
      {Id::Max() - IdOf("2"), 997},
      {Id::Max() - IdOf("1"), 998},
      {Id::Max(), 999},
  };
  // Records on every other point, so endpoints fall both on and between records.
  std::vector<Point> records;
  for (size_t i = 0; i < points.size(); i += 2) {
    ASSERT_TRUE(store().Put(points[i].id, MakeRecord(points[i].id.ToHex(), "")).ok());
    records.push_back(points[i]);
  }
  MaybeReopen();
  auto lap = [](int a, int x) {
    const int d = ((x - a) % kRing + kRing) % kRing;
    return d == 0 ? kRing : d;  // a itself comes after a full lap
  };
  for (const Point& a : points) {
    for (const Point& b : points) {
      // Reference: records with lap(a, x) <= lap(a, b), sorted by lap(a, x).
      std::vector<std::pair<int, std::string>> want_sorted;
      for (const Point& r : records) {
        if (lap(a.small, r.small) <= lap(a.small, b.small)) {
          want_sorted.emplace_back(lap(a.small, r.small), r.id.ToHex());
        }
      }
      std::sort(want_sorted.begin(), want_sorted.end());
      Keys want;
      for (auto& [l, key] : want_sorted) want.push_back(key);
      EXPECT_EQ(ScanKeys(store(), a.id, b.id), want) << a.id.ToHex() << " " << b.id.ToHex();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreContractTest,
                         ::testing::Values(StoreKind::kMemory, StoreKind::kRocksDb,
                                           StoreKind::kRocksDbReopened),
                         KindName);
INSTANTIATE_TEST_SUITE_P(AllStores, StoreScanTest,
                         ::testing::Values(StoreKind::kMemory, StoreKind::kRocksDb,
                                           StoreKind::kRocksDbReopened),
                         KindName);

}  // namespace
}  // namespace chord
