// Tests for what only MemoryStore (node/storage/memory_store.h) does: records packed by hand
// into one block each (every field round-trips, writers kept in a bounded table), the order by
// (key id, key bytes) when ids share their first 8 bytes (kept apart from the block), scans
// whose visitor writes to the store, meta values, and agreement with a plain ordered map over
// random operations, batches and ring-range scans. The Store contract: memory_store_test.cc.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "node/storage/memory_store.h"
#include "protocol/limits.h"
#include "tests/unit/store_test_records.h"

namespace chord {
namespace {

using test_support::MakeRecord;

// An id whose first 8 bytes are `high` and last 12 bytes all `low`.
Id SplitId(uint64_t high, uint8_t low) {
  std::array<uint8_t, Id::kBytes> bytes;
  for (int i = 7; i >= 0; --i, high >>= 8) bytes[i] = static_cast<uint8_t>(high);
  for (int i = 8; i < Id::kBytes; ++i) bytes[i] = low;
  return Id(bytes);
}

wire::Record FullRecord(const std::string& key, const std::string& value,
                        const std::string& writer) {
  wire::Record r;
  r.set_key(key);
  r.set_value(value);
  r.set_version(std::numeric_limits<uint64_t>::max() - 5);
  r.set_deleted(true);
  r.set_writer(writer);
  r.set_expires_unix_ms(1'700'000'000'123);
  r.set_expired(true);
  return r;
}

void ExpectSame(const wire::Record& got, const wire::Record& want) {
  EXPECT_EQ(got.SerializeAsString(), want.SerializeAsString())
      << "got " << got.ShortDebugString() << " want " << want.ShortDebugString();
}

std::vector<std::pair<Id, std::string>> ScanAll(MemoryStore& store, const Id& from, const Id& to) {
  std::vector<std::pair<Id, std::string>> out;
  Status s = store.Scan(from, to, [&out](const Id& id, const wire::Record& r) {
    out.emplace_back(id, r.key());
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// The packing knows these fields; a field added to wire::Record must be added to
// MemoryStore::Pack and Unpack (and here), or the memory store would drop it.
TEST(MemoryStoreLayoutTest, PacksEveryFieldOfRecord) {
  const auto* d = wire::Record::descriptor();
  std::vector<std::string> names;
  for (int i = 0; i < d->field_count(); ++i) names.push_back(d->field(i)->name());
  EXPECT_EQ(names, (std::vector<std::string>{"key", "value", "version", "deleted", "writer",
                                             "expires_unix_ms", "expired"}));
}

TEST(MemoryStoreLayoutTest, EveryFieldRoundTrips) {
  MemoryStore store;
  const std::string binary_key("\0k\xff\x80", 4);
  const std::vector<wire::Record> records = {
      FullRecord(binary_key, std::string("\0v\xff", 3), std::string(20, '\x01')),
      FullRecord("big", std::string(kMaxValueBytes, 'x'), std::string(20, '\x02')),
      FullRecord(std::string(kMaxKeyBytes, 'k'), "", ""),
      MakeRecord("plain", "value", 0),  // every other field at its default
  };
  for (const wire::Record& r : records) ASSERT_TRUE(store.Put(Id::Sha1(r.key()), r).ok());
  for (const wire::Record& r : records) {
    wire::Record got = MakeRecord("stale", "stale", 99);
    got.set_deleted(true);
    ASSERT_TRUE(store.Get(Id::Sha1(r.key()), r.key(), &got).ok());
    ExpectSame(got, r);
  }
  // A scan passes the same records.
  size_t seen = 0;
  ASSERT_TRUE(store
                  .Scan(Id(), Id(),
                        [&](const Id& id, const wire::Record& r) {
                          EXPECT_EQ(id, Id::Sha1(r.key()));
                          for (const wire::Record& want : records) {
                            if (want.key() == r.key()) ExpectSame(r, want);
                          }
                          ++seen;
                          return true;
                        })
                  .ok());
  EXPECT_EQ(seen, records.size());
}

TEST(MemoryStoreLayoutTest, WritersBeyondTheTableAreKeptInline) {
  MemoryStore store;
  constexpr int kWriters = MemoryStore::kMaxInternedWriters + 45;
  auto writer_of = [](int i) {
    std::string w = "writer-" + std::to_string(i);
    // Some writers too long for the table.
    if (i % 7 == 0) w.append(MemoryStore::kMaxInternedWriterBytes, 'w');
    return w;
  };
  for (int i = 0; i < kWriters; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(store.Put(Id::Sha1(key), FullRecord(key, "v" + key, writer_of(i))).ok());
  }
  for (int i = 0; i < kWriters; ++i) {
    const std::string key = "k" + std::to_string(i);
    wire::Record got;
    ASSERT_TRUE(store.Get(Id::Sha1(key), key, &got).ok());
    ExpectSame(got, FullRecord(key, "v" + key, writer_of(i)));
  }
}

TEST(MemoryStoreLayoutTest, OrdersByWholeIdThenKeyBytes) {
  MemoryStore store;
  // Ids that agree in their first 8 bytes and differ only in the rest, and keys where byte
  // order (unsigned) and length decide.
  const Id low = SplitId(7, 0x01);
  const Id high = SplitId(7, 0xfe);
  const Id next = SplitId(8, 0x00);
  const std::vector<std::pair<Id, std::string>> want = {
      {low, "b"},  {high, "a"}, {high, std::string("a\0", 2)}, {high, "a\x7f"}, {high, "a\x80"},
      {high, "b"}, {next, "a"},
  };
  for (auto it = want.rbegin(); it != want.rend(); ++it) {
    ASSERT_TRUE(store.Put(it->first, MakeRecord(it->second, "v")).ok());
  }
  EXPECT_EQ(store.Count(), want.size());
  EXPECT_EQ(ScanAll(store, Id(), Id()), want);
  // (low, high] takes every key of `high` and none of `low`.
  EXPECT_EQ(ScanAll(store, low, high),
            (std::vector<std::pair<Id, std::string>>(want.begin() + 1, want.end() - 1)));
  // Wrapping: (high, low] is `next`, then through zero to `low`.
  EXPECT_EQ(ScanAll(store, high, low),
            (std::vector<std::pair<Id, std::string>>{want.back(), want.front()}));
  wire::Record r;
  EXPECT_TRUE(store.Get(high, std::string("a\0", 2), &r).ok());
  EXPECT_EQ(r.key(), std::string("a\0", 2));
  EXPECT_TRUE(store.Get(SplitId(7, 0x02), "b", &r).IsNotFound());
  EXPECT_TRUE(store.Get(high, "a\x81", &r).IsNotFound());
}

TEST(MemoryStoreLayoutTest, RecordBytesFollowPutsReplacementsAndErases) {
  MemoryStore store;
  EXPECT_EQ(store.record_bytes(), 0u);
  ASSERT_TRUE(store.Put(Id::Sha1("a"), MakeRecord("a", std::string(100, 'x'))).ok());
  const size_t one = store.record_bytes();
  // Key and value bytes, and a few dozen of header.
  EXPECT_GE(one, 101u);
  EXPECT_LE(one, 101u + 40u);
  ASSERT_TRUE(store.Put(Id::Sha1("a"), MakeRecord("a", std::string(1000, 'x'))).ok());
  EXPECT_EQ(store.record_bytes(), one + 900u + 1u);  // the value's size takes a second byte
  ASSERT_TRUE(store.Erase(Id::Sha1("a"), "a").ok());
  EXPECT_EQ(store.record_bytes(), 0u);
  EXPECT_EQ(store.Count(), 0u);
}

TEST(MemoryStoreLayoutTest, RecordsOfEverySizeComeBackAndFreeTheirBlocks) {
  MemoryStore store;
  // Small records from the arena and records past its bound from the heap, each replaced by
  // one of the other kind and by one of its own, then erased (ASan sees a bad free or a
  // read past a block).
  const std::vector<size_t> sizes = {0, 1, 100, 4000, 4100, 5000, 1 << 20};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string key = "k" + std::to_string(i);
    for (size_t value_size : {sizes[i], sizes[sizes.size() - 1 - i], sizes[i]}) {
      const wire::Record put = MakeRecord(key, std::string(value_size, 'v'));
      ASSERT_TRUE(store.Put(Id::Sha1(key), put).ok());
      wire::Record got;
      ASSERT_TRUE(store.Get(Id::Sha1(key), key, &got).ok());
      ExpectSame(got, put);
    }
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(store.Erase(Id::Sha1(key), key).ok());
  }
  EXPECT_EQ(store.record_bytes(), 0u);
  EXPECT_EQ(store.Count(), 0u);
  // Small blocks freed went to the arena's free lists; the store still holds their chunks.
  EXPECT_GT(store.FreeHeldBytes(), 0u);
  EXPECT_GE(store.arena_bytes(), store.FreeHeldBytes());
}

TEST(MemoryStoreLayoutTest, ScanGoesOnWhenTheVisitorWritesToTheStore) {
  MemoryStore store;
  std::vector<std::pair<Id, std::string>> before;
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(store.Put(Id::Sha1(key), MakeRecord(key, "v")).ok());
  }
  before = ScanAll(store, Id(), Id());
  // Each visit erases the record it was given and puts a record whose id sorts before the
  // scan's start (so it is never visited): every original record is visited once, in order.
  std::vector<std::pair<Id, std::string>> visited;
  int added = 0;
  const Id start = before.front().first;
  ASSERT_TRUE(store
                  .Scan(start, start,
                        [&](const Id& id, const wire::Record& r) {
                          visited.emplace_back(id, r.key());
                          if (id == Id()) return true;  // one put by this visitor
                          EXPECT_TRUE(store.Erase(id, r.key()).ok());
                          const std::string key = "new" + std::to_string(added++);
                          EXPECT_TRUE(store.Put(Id(), MakeRecord(key, "v")).ok());
                          return true;
                        })
                  .ok());
  // (start, start]: everything after the first record, then the first one; the records put
  // at id zero (below `start`) are visited in the wrapped part, before the first record.
  std::vector<std::pair<Id, std::string>> originals;
  for (const auto& v : visited) {
    if (v.first != Id()) originals.push_back(v);
  }
  std::vector<std::pair<Id, std::string>> want(before.begin() + 1, before.end());
  want.push_back(before.front());
  EXPECT_EQ(originals, want);
  EXPECT_EQ(visited.size() - originals.size(), static_cast<size_t>(added - 1));
  EXPECT_EQ(store.Count(), static_cast<size_t>(added));
}

TEST(MemoryStoreLayoutTest, MetaValuesAreApartFromRecords) {
  MemoryStore store;
  ASSERT_TRUE(store.PutMeta("hint/b/1", "x").ok());
  ASSERT_TRUE(store.PutMeta("hint/a/2", "y").ok());
  ASSERT_TRUE(store.PutMeta("members", "z").ok());
  ASSERT_TRUE(store.PutMeta("hint/a/2", "y2").ok());
  EXPECT_EQ(store.Count(), 0u);
  EXPECT_TRUE(ScanAll(store, Id(), Id()).empty());
  std::string value;
  ASSERT_TRUE(store.GetMeta("members", &value).ok());
  EXPECT_EQ(value, "z");
  std::vector<std::pair<std::string, std::string>> hints;
  ASSERT_TRUE(store
                  .ScanMeta("hint/",
                            [&](std::string_view n, std::string_view v) {
                              hints.emplace_back(n, v);
                              return true;
                            })
                  .ok());
  EXPECT_EQ(hints, (std::vector<std::pair<std::string, std::string>>{{"hint/a/2", "y2"},
                                                                     {"hint/b/1", "x"}}));
  ASSERT_TRUE(store.EraseMeta("members").ok());
  ASSERT_TRUE(store.EraseMeta("members").ok());
  EXPECT_TRUE(store.GetMeta("members", &value).IsNotFound());
}

// Random puts, erases and batches over ids that often share their first 8 bytes, checked
// against a std::map after every step by gets and ring-range scans.
TEST(MemoryStoreLayoutTest, MatchesAnOrderedMapOnRandomOperations) {
  MemoryStore store;
  std::map<std::pair<Id, std::string>, std::string> reference;  // -> serialized record
  std::mt19937_64 rng(16);
  auto random_id = [&] {
    return SplitId(rng() % 4 == 0 ? ~uint64_t{0} : rng() % 3, static_cast<uint8_t>(rng() % 3));
  };
  auto random_record = [&](const std::string& key) {
    wire::Record r = MakeRecord(key, std::string(rng() % 300, 'a' + rng() % 26), rng());
    r.set_writer("w" + std::to_string(rng() % 5));
    r.set_deleted(rng() % 5 == 0);
    return r;
  };
  for (int step = 0; step < 3000; ++step) {
    const Id id = random_id();
    const std::string key = "k" + std::to_string(rng() % 4);
    const int op = static_cast<int>(rng() % 10);
    if (op < 5) {
      const wire::Record r = random_record(key);
      ASSERT_TRUE(store.Put(id, r).ok());
      reference[{id, key}] = r.SerializeAsString();
    } else if (op < 7) {
      ASSERT_TRUE(store.Erase(id, key).ok());
      reference.erase({id, key});
    } else {
      StoreBatch batch;
      for (int i = 0; i < 4; ++i) {
        const Id bid = random_id();
        const std::string bkey = "k" + std::to_string(rng() % 4);
        if (rng() % 2 == 0) {
          wire::Record r = random_record(bkey);
          reference[{bid, bkey}] = r.SerializeAsString();
          batch.Put(bid, std::move(r));
        } else {
          reference.erase({bid, bkey});
          batch.Erase(bid, bkey);
        }
      }
      ASSERT_TRUE(store.Write(batch).ok());
    }
    ASSERT_EQ(store.Count(), reference.size());
    wire::Record got;
    auto it = reference.find({id, key});
    Status s = store.Get(id, key, &got);
    if (it == reference.end()) {
      ASSERT_TRUE(s.IsNotFound());
    } else {
      ASSERT_TRUE(s.ok());
      ASSERT_EQ(got.SerializeAsString(), it->second);
    }
    // A ring range (from, to], wrapping or not, against the reference.
    const Id from = random_id();
    const Id to = random_id();
    std::vector<std::pair<Id, std::string>> want;
    for (const auto& [k, v] : reference) {
      if (from < k.first && (!(from < to) || !(to < k.first))) want.push_back(k);
    }
    if (!(from < to)) {
      for (const auto& [k, v] : reference) {
        if (!(to < k.first)) want.push_back(k);
      }
    }
    ASSERT_EQ(ScanAll(store, from, to), want) << "step " << step;
  }
}

}  // namespace
}  // namespace chord
