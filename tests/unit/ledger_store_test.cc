// The LedgerStore's arcs, pieces, counts and digests against brute-force scans of the same
// records, after random puts, replaces, erases and tombstones; ranges that wrap round zero,
// ranges inside one arc, the whole ring; paged reads of pieces; vnodes sharing one ledger.
#include "node/storage/ledger_store.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "node/core/node_config.h"
#include "node/core/range_digest.h"
#include "node/core/ready.h"
#include "node/core/record_store.h"
#include "node/storage/memory_store.h"
#include "protocol/id.h"
#include "tests/unit/store_position.h"

namespace chord {
namespace {

// An id of arc `arc` whose other bits are taken from `fill` (every byte of it).
Id IdOf(uint32_t arc, uint8_t fill) {
  Id last = LedgerStore::ArcLast(arc);
  std::array<uint8_t, Id::kBytes> b = last.bytes();
  for (size_t i = 2; i < b.size(); ++i) b[i] = fill;
  b[1] = static_cast<uint8_t>((b[1] & 0xf0) | (fill & 0x0f));
  return Id(b);
}

LedgerTally Brute(Store* store, const Id& from, const Id& to) {
  LedgerTally t;
  EXPECT_TRUE(store
                  ->Scan(from, to,
                         [&t](const Id& id, const wire::Record& rec) {
                           ++(rec.deleted() ? t.tombstones : t.live);
                           t.digest += RecordDigest(id, rec);
                           return true;
                         })
                  .ok());
  return t;
}

void ExpectSame(const LedgerTally& a, const LedgerTally& b, const std::string& what) {
  EXPECT_EQ(a.live, b.live) << what;
  EXPECT_EQ(a.tombstones, b.tombstones) << what;
  EXPECT_EQ(a.digest, b.digest) << what;
}

wire::Record Rec(const std::string& key, uint64_t version, bool deleted) {
  wire::Record r;
  r.set_key(key);
  if (!deleted) r.set_value("value-" + std::to_string(version));
  r.set_version(version);
  r.set_deleted(deleted);
  return r;
}

// The ranges every check runs over: wrapping round zero, inside one arc, one arc exactly,
// ending on an arc's last id, starting on one, the whole ring, and random ones.
std::vector<std::pair<Id, Id>> Ranges(std::mt19937_64& rng, const std::vector<Id>& ids) {
  std::vector<std::pair<Id, Id>> out = {
      {Id::Sha1("x"), Id::Sha1("x")},                          // whole ring
      {Id::Max(), Id::Max()},                                  // whole ring
      {LedgerStore::ArcLast(4000), LedgerStore::ArcLast(20)},  // wraps, whole arcs
      {IdOf(4090, 0x37), IdOf(3, 0x91)},                       // wraps, cut arcs
      {IdOf(77, 0x10), IdOf(77, 0xe0)},                        // inside one arc
      {IdOf(77, 0xe0), IdOf(77, 0x10)},                        // round, one arc cut
      {LedgerStore::ArcLast(76), LedgerStore::ArcLast(77)},    // one arc exactly
      {IdOf(12, 0x55), LedgerStore::ArcLast(900)},             // ends on an arc's end
      {LedgerStore::ArcLast(12), IdOf(900, 0x55)},             // starts on one
      {Id(), Id::Max()},                                       // all but zero
  };
  for (int i = 0; i < 30; ++i) {
    const Id& a = ids[rng() % ids.size()];
    const Id& b = ids[rng() % ids.size()];
    out.emplace_back(a, b);
    out.emplace_back(a - Id::PowerOfTwo(0), b);  // starting just before a record
  }
  return out;
}

// Digests are compared between nodes (anti-entropy), so their values must not change between
// versions or hosts: these were computed by the first implementation (Fold over memcpy'd
// little-endian words). Keys and writers of lengths 0 to 20 cover every tail length.
TEST(LedgerStoreTest, RecordDigestsKeepTheirValues) {
  uint64_t sum = 0;
  uint64_t weighted = 0;
  for (int n = 0; n <= 20; ++n) {
    wire::Record r;
    r.set_key(std::string(static_cast<size_t>(n), static_cast<char>('a' + n)));
    r.set_version(1000003ULL * static_cast<uint64_t>(n + 1));
    r.set_writer(std::string(static_cast<size_t>(20 - n), static_cast<char>(0x80 + n)));
    r.set_deleted(n % 3 == 0);
    const uint64_t d = RecordDigest(Id::Sha1(r.key()), r);
    EXPECT_EQ(d, RecordDigest(KeyDigest(Id::Sha1(r.key()), r.key()), r)) << n;
    sum += d;
    weighted += d * static_cast<uint64_t>(2 * n + 1);
  }
  EXPECT_EQ(sum, 14290064905785935794ULL);
  EXPECT_EQ(weighted, 8819734306330341020ULL);
}

TEST(LedgerStoreTest, PiecesCoverTheRangeInOrderAndIdsFallInTheirPiece) {
  std::mt19937_64 rng(5);
  std::vector<Id> ids;
  for (int i = 0; i < 200; ++i) ids.push_back(Id::Sha1("p" + std::to_string(i)));
  for (const auto& [from, to] : Ranges(rng, ids)) {
    const uint32_t n = LedgerStore::PieceCount(from, to);
    ASSERT_GE(n, 1u);
    ASSERT_LE(n, LedgerStore::kMaxPieces);
    // Consecutive pieces meet, the first starts at `from`, the last ends at `to`.
    EXPECT_EQ(LedgerStore::Piece(from, to, 0).from, from);
    EXPECT_EQ(LedgerStore::Piece(from, to, n - 1).to, to);
    for (uint32_t i = 0; i + 1 < n; ++i) {
      EXPECT_EQ(LedgerStore::Piece(from, to, i).to, LedgerStore::Piece(from, to, i + 1).from);
    }
    for (const Id& id : ids) {
      if (!(from == to) && !Id::InHalfOpen(id, from, to)) continue;
      const RangePiece p = LedgerStore::Piece(from, to, LedgerStore::PieceIndex(from, to, id));
      EXPECT_TRUE(!p.empty() && Id::InHalfOpen(id, p.from, p.to)) << id.ToHex();
      EXPECT_EQ(p.arc, LedgerStore::ArcOf(id));
    }
  }
  EXPECT_EQ(LedgerStore::ArcOf(Id()), 0u);
  EXPECT_EQ(LedgerStore::ArcOf(Id::Max()), LedgerStore::kArcs - 1);
  EXPECT_EQ(LedgerStore::ArcOf(LedgerStore::ArcLast(9)), 9u);
  EXPECT_EQ(LedgerStore::ArcOf(LedgerStore::ArcLast(9) + Id::PowerOfTwo(0)), 10u);
}

TEST(LedgerStoreTest, CountsAndDigestsEqualAScanAfterRandomWrites) {
  std::mt19937_64 rng(11);
  MemoryStore memory;
  // Records stored before the ledger is filled are counted by the fill.
  for (int i = 0; i < 500; ++i) {
    const std::string key = "early-" + std::to_string(i);
    ASSERT_TRUE(memory.Put(Id::Sha1(key), Rec(key, 1 + i % 5, i % 7 == 0)).ok());
  }
  LedgerStore store(&memory);
  ASSERT_TRUE(store.Fill().ok());
  std::vector<std::string> keys;
  for (int i = 0; i < 500; ++i) keys.push_back("early-" + std::to_string(i));
  for (int i = 0; i < 3000; ++i) keys.push_back("key-" + std::to_string(i));
  std::vector<Id> ids;
  for (const auto& k : keys) ids.push_back(Id::Sha1(k));
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 4000; ++i) {
      const std::string& key = keys[rng() % keys.size()];
      const Id id = Id::Sha1(key);
      const uint64_t version = 1 + rng() % 1000;
      switch (rng() % 5) {
        case 0:
          ASSERT_TRUE(store.Erase(id, key).ok());
          break;
        case 1:
          ASSERT_TRUE(store.Put(id, Rec(key, version, /*deleted=*/true)).ok());
          break;
        case 2: {  // a batch: a replace and an erase of the same key, then another put
          StoreBatch batch;
          batch.Put(id, Rec(key, version, false));
          batch.Erase(id, key);
          const std::string& other = keys[rng() % keys.size()];
          batch.Put(Id::Sha1(other), Rec(other, version, false));
          ASSERT_TRUE(store.Write(batch).ok());
          break;
        }
        default:
          ASSERT_TRUE(store.Put(id, Rec(key, version, false)).ok());
      }
    }
    ExpectSame(store.totals(), Brute(&store, Id(), Id()), "totals");
    for (const auto& [from, to] : Ranges(rng, ids)) {
      const std::string what = from.ToHex() + " .. " + to.ToHex();
      auto t = store.Tally(from, to);
      ASSERT_TRUE(t.ok());
      ExpectSame(*t, Brute(&store, from, to), what);
      auto digests = store.PieceDigests(from, to);
      auto scanned = ScanPieceDigests(&store, from, to);
      ASSERT_TRUE(digests.ok() && scanned.ok());
      EXPECT_EQ(*digests, *scanned) << what;
    }
  }
  // A fresh fill of the same records agrees with the ledger kept up to date.
  LedgerStore again(&memory);
  ASSERT_TRUE(again.Fill().ok());
  ExpectSame(again.totals(), store.totals(), "refilled");
  for (uint32_t arc = 0; arc < LedgerStore::kArcs; ++arc) {
    ExpectSame(again.ArcTally(arc), store.ArcTally(arc), "arc " + std::to_string(arc));
  }
}

TEST(LedgerStoreTest, ReadPiecesPagesThroughTheWantedPiecesOnly) {
  MemoryStore memory;
  LedgerStore store(&memory);
  for (int i = 0; i < 3000; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(store.Put(Id::Sha1(key), Rec(key, 1, i % 4 == 0)).ok());
  }
  const Id from = Id::Sha1("k17");
  const Id to = Id::Sha1("k17") - Id::PowerOfTwo(100);  // round the ring, back into its arc
  const uint32_t n = LedgerStore::PieceCount(from, to);
  ASSERT_EQ(n, LedgerStore::kMaxPieces);
  std::vector<uint32_t> wanted;
  for (uint32_t i = 0; i < n; i += 3) wanted.push_back(i);
  wanted.push_back(n - 1);
  wanted.push_back(n + 50);  // out of range: ignored
  const std::set<uint32_t> wanted_set(wanted.begin(), wanted.end());
  auto keep = [](const Id&, const wire::Record& rec) { return !rec.deleted(); };
  std::vector<Id> expected;
  ASSERT_TRUE(store
                  .Scan(from, to,
                        [&](const Id& id, const wire::Record& rec) {
                          if (wanted_set.count(LedgerStore::PieceIndex(from, to, id)) &&
                              !rec.deleted()) {
                            expected.push_back(id);
                          }
                          return true;
                        })
                  .ok());
  ASSERT_GT(expected.size(), 100u);
  std::vector<Id> got;
  std::optional<Id> after;
  for (int pages = 0; pages < 1000; ++pages) {
    auto read = ReadPieces(&store, from, to, wanted, after, PageLimits{2000, SIZE_MAX},
                           /*max_visited=*/50, keep);
    ASSERT_TRUE(read.ok());
    EXPECT_LE(read->page.records.size(), 50u);
    for (const auto& [id, rec] : read->page.records) got.push_back(id);
    if (!read->page.more) break;
    ASSERT_TRUE(read->last.has_value());
    after = read->last;
  }
  EXPECT_EQ(got, expected);
}

// Two keys whose SHA-1s collide share an id; a next page continues after the last page's
// last id, so a page must never end between them. Pages of one record, of several, by bytes
// and by records visited: every record comes back exactly once.
TEST(LedgerStoreTest, APageNeverEndsBetweenTwoKeysOfOneId) {
  MemoryStore memory;
  LedgerStore store(&memory);
  std::set<std::string> all;
  for (int i = 0; i < 40; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(store.Put(Id::Sha1(key), Rec(key, 1, false)).ok());
    all.insert(key);
    if (i % 4 != 0) continue;
    // A twin of the same id (as a collision would make), sorting after the key itself.
    const std::string twin = key + "-twin";
    ASSERT_TRUE(store.Put(Id::Sha1(key), Rec(twin, 1, false)).ok());
    all.insert(twin);
  }
  const Id from = Id::Sha1("k0");
  for (size_t per_page : {1, 2, 3}) {
    SCOPED_TRACE("records per page " + std::to_string(per_page));
    // Store::ReadPage (hand-over, clean-up), limited by records and by bytes.
    for (const PageLimits limits :
         {PageLimits{SIZE_MAX, per_page},
          PageLimits{per_page * Store::RecordBytes(Rec("k10", 1, false)), SIZE_MAX}}) {
      std::multiset<std::string> got;
      std::optional<Id> after;
      for (int pages = 0; pages < 200; ++pages) {
        auto page = store.ReadPage(after ? *after : from, from, limits);
        ASSERT_TRUE(page.ok());
        for (const auto& [id, rec] : page->records) got.insert(rec.key());
        if (!page->more) break;
        after = page->records.back().first;
      }
      EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), all);
      EXPECT_EQ(got.size(), all.size());
    }
    // ReadPieces (anti-entropy, purges), limited by records and by records visited.
    std::vector<uint32_t> wanted;
    for (uint32_t i = 0; i < LedgerStore::PieceCount(from, from); ++i) wanted.push_back(i);
    const auto read_all = [&](const PageLimits& limits, size_t max_visited,
                              const Store::Filter& keep) {
      std::multiset<std::string> got;
      std::optional<Id> after;
      for (int pages = 0; pages < 200; ++pages) {
        auto read = ReadPieces(&store, from, from, wanted, after, limits, max_visited, keep);
        EXPECT_TRUE(read.ok());
        if (!read.ok()) break;
        for (const auto& [id, rec] : read->page.records) got.insert(rec.key());
        if (!read->page.more) break;
        after = read->last;
      }
      return got;
    };
    for (const bool by_visits : {false, true}) {
      const std::multiset<std::string> got =
          read_all(PageLimits{SIZE_MAX, by_visits ? SIZE_MAX : per_page},
                   by_visits ? per_page : SIZE_MAX, nullptr);
      EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), all) << by_visits;
      EXPECT_EQ(got.size(), all.size()) << by_visits;
    }
    // With a filter that skips a key but takes its twin (a skipped record also sets `last`).
    const auto twins_only = [](const Id&, const wire::Record& rec) {
      return rec.key().find("-twin") != std::string::npos;
    };
    const std::multiset<std::string> got =
        read_all(PageLimits{SIZE_MAX, per_page}, per_page, twins_only);
    EXPECT_EQ(got.size(), 10u);  // k0, k4, ..., k36: ten twins
    for (const std::string& key : got) EXPECT_NE(key.find("-twin"), std::string::npos) << key;
  }
}

TEST(LedgerStoreTest, VnodesSharingAStoreCountFromOneLedger) {
  MemoryStore memory;
  for (int i = 0; i < 100; ++i) {
    const std::string key = "old-" + std::to_string(i);
    ASSERT_TRUE(memory.Put(Id::Sha1(key), Rec(key, 5, i % 10 == 0)).ok());
  }
  LedgerStore store(&memory);
  NodeConfig config;
  Clock now{1'000, uint64_t{1'800'000'000'000}};
  StorePosition position_a(&store, &config, &now), position_b(&store, &config, &now);
  RecordStore& a = position_a.records;
  RecordStore& b = position_b.records;
  ASSERT_TRUE(a.ObserveAllVersions(KeyRange{Id(), Id()}).ok());
  EXPECT_TRUE(store.filled());
  ASSERT_TRUE(b.ObserveAllVersions(KeyRange{Id(), Id()}).ok());
  // Writes through either vnode's records show in both views.
  const uint64_t version = uint64_t{1'800'000'000'000} << 16;
  for (int i = 0; i < 300; ++i) {
    const std::string key = "new-" + std::to_string(i);
    RecordStore& via = i % 2 == 0 ? a : b;
    ASSERT_TRUE(via.StoreIfNewer(Id::Sha1(key), Rec(key, version + i, i % 3 == 0)).ok());
  }
  // A replace of a live record by a tombstone, and a purge of tombstones through the other.
  ASSERT_TRUE(a.StoreIfNewer(Id::Sha1("new-1"), Rec("new-1", version + 1000, true)).ok());
  auto erased = b.EraseIfUnchanged({RecordStamp{Id::Sha1("new-0"), "new-0", version, ""},
                                    RecordStamp{Id::Sha1("new-0"), "new-0", version, ""},
                                    RecordStamp{Id::Sha1("new-2"), "new-2", version + 2, ""}},
                                   /*tombstones_only=*/true);
  ASSERT_TRUE(erased.ok());
  EXPECT_EQ(*erased, 1u);  // new-0 was a tombstone (once), new-2 is live
  const Id self_a = Id::Sha1("vnode a");
  const Id self_b = Id::Sha1("vnode b");
  for (const auto& [from, to] :
       std::vector<std::pair<Id, Id>>{{self_a, self_b}, {self_b, self_a}, {self_a, self_a}}) {
    const LedgerTally brute = Brute(&memory, from, to);
    const Result<LedgerTally> ta = a.Tally(from, to);
    const Result<LedgerTally> tb = b.Tally(from, to);
    ASSERT_TRUE(ta.ok() && tb.ok());
    EXPECT_EQ(ta->live, brute.live);
    EXPECT_EQ(tb->live, brute.live);
    EXPECT_EQ(ta->tombstones, brute.tombstones);
  }
  const Result<LedgerTally> ab = a.Tally(self_a, self_b);
  const Result<LedgerTally> ba = b.Tally(self_b, self_a);
  const Result<LedgerTally> aa = a.Tally(self_a, self_a);
  ASSERT_TRUE(ab.ok() && ba.ok() && aa.ok());
  EXPECT_EQ(ab->live + ba->live, aa->live);
}

}  // namespace
}  // namespace chord
