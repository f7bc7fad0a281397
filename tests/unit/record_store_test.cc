#include "node/core/record_store.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "node/core/node_config.h"
#include "node/core/ready.h"
#include "node/core/record_order.h"
#include "node/core/version_clock.h"
#include "node/core/watch/watch_log.h"
#include "node/storage/ledger_store.h"
#include "node/storage/memory_store.h"
#include "protocol/id.h"
#include "protocol/limits.h"
#include "tests/unit/store_position.h"

namespace chord {
namespace {

// One RecordStore over a memory store, its clock at a fixed wall time.
struct Fixture {
  MemoryStore memory;
  LedgerStore store{&memory};
  VersionClock clock;
  NodeConfig config;
  Clock now{1'000, uint64_t{1'800'000'000'000}};
  WatchLog watches;
  RecordStore records{&store, &clock, &config, &now, &watches};
};

wire::Record Rec(const std::string& key, const std::string& value, uint64_t version,
                 const std::string& writer) {
  wire::Record r;
  r.set_key(key);
  r.set_value(value);
  r.set_version(version);
  r.set_writer(Id::Sha1(writer).ToBytes());
  return r;
}

TEST(RecordStoreTest, ANewWriteDoesNotReplaceAnotherWritersRecordOfTheSameVersion) {
  Fixture f;
  const Id key_id = Id::Sha1("k");
  const uint64_t v = f.now.wall_ms << 16;
  // Two coordinators stamped different writes with the same version; the first is stored.
  // `second` is the one the tie-break prefers, so that only the new-version rule keeps it out.
  wire::Record first = Rec("k", "first", v, "node-a");
  wire::Record second = Rec("k", "second", v, "node-b");
  if (!RecordNewer(second, first)) {
    std::swap(first, second);
    first.set_value("first");
    second.set_value("second");
  }
  ASSERT_TRUE(RecordNewer(second, first));
  ASSERT_TRUE(f.records.StoreIfNewer(key_id, first).ok());
  // As an owner's new write, the second is refused with the record kept (its coordinator then
  // stamps it above) whichever writer id the tie-break would prefer.
  bool stored = true;
  wire::Record kept;
  ASSERT_TRUE(f.records
                  .StoreIfNewer(key_id, second, &stored, &kept, ChangeLink{},
                                /*new_version=*/true)
                  .ok());
  EXPECT_FALSE(stored);
  EXPECT_EQ(kept.value(), "first");
  // The same write again (a retry) is no conflict: kept equals it.
  ASSERT_TRUE(
      f.records.StoreIfNewer(key_id, first, &stored, &kept, ChangeLink{}, /*new_version=*/true)
          .ok());
  EXPECT_FALSE(stored);
  EXPECT_EQ(kept.writer(), first.writer());
  // Copies between replicas still converge by the tie-break.
  ASSERT_TRUE(f.records.StoreIfNewer(key_id, second, &stored, &kept).ok());
  EXPECT_TRUE(stored);
}

// The record replaced is read without its value (Store::GetHeader), but when version, writer
// and flags tie, the value decides: the same write again stores nothing (a duplicate would
// reach watchers as a change), a higher value of the same stamp wins on every replica.
// Vnodes share one store: on a restart each position indexes the expiries of the keys it
// accounts for, so that the one whose watchers follow a key expires it, and the index is not
// held once per position.
TEST(RecordStoreTest, ARestartIndexesTheExpiriesOfTheGivenArcOnly) {
  MemoryStore memory;
  LedgerStore shared{&memory};
  const uint64_t expires = uint64_t{1'800'000'100'000};
  std::vector<Id> ids;
  for (int i = 0; i < 200; ++i) {
    wire::Record r = Rec("ttl-" + std::to_string(i), "v", uint64_t{1'700'000'000'000} << 16, "w");
    r.set_expires_unix_ms(expires);
    ids.push_back(Id::Sha1(r.key()));
    ASSERT_TRUE(shared.Put(ids.back(), r).ok());
  }
  // Two positions of one process: A accounts for (b, a], B for (a, b].
  const Id a = Id::Sha1("127.0.0.1:4000#0"), b = Id::Sha1("127.0.0.1:4000#1");
  NodeConfig config;
  Clock now{1'000, uint64_t{1'800'000'000'000}};
  StorePosition at_a(&shared, &config, &now), at_b(&shared, &config, &now);
  ASSERT_TRUE(at_a.records.ObserveAllVersions(KeyRange{b, a}).ok());
  ASSERT_TRUE(at_b.records.ObserveAllVersions(KeyRange{a, b}).ok());
  std::set<std::string> in_a, in_b;
  for (int i = 0; i < 200; ++i) {
    (Id::InHalfOpen(ids[i], b, a) ? in_a : in_b).insert("ttl-" + std::to_string(i));
  }
  ASSERT_FALSE(in_a.empty());
  ASSERT_FALSE(in_b.empty());
  std::set<std::string> due_a, due_b;
  for (const auto& e : at_a.records.expiry().TakeDue(expires, 1000)) due_a.insert(e.key);
  for (const auto& e : at_b.records.expiry().TakeDue(expires, 1000)) due_b.insert(e.key);
  EXPECT_EQ(due_a, in_a);
  EXPECT_EQ(due_b, in_b);
  // One position alone accounts for the whole ring.
  StorePosition alone(&shared, &config, &now);
  ASSERT_TRUE(alone.records.ObserveAllVersions(KeyRange{a, a}).ok());
  EXPECT_EQ(alone.records.expiry().TakeDue(expires, 1000).size(), 200u);
}

// A key written again and again with a TTL (a lease kept alive) takes one entry of the expiry
// index, due at its latest expiry; before, every write added one, so that such a key filled
// the index and turned the sweeper's scans of the whole store on.
TEST(RecordStoreTest, AKeyRewrittenWithATtlTakesOneExpiryEntry) {
  Fixture f;
  const Id key_id = Id::Sha1("lease");
  const uint64_t v = f.now.wall_ms << 16;
  for (uint64_t i = 1; i <= 1'000; ++i) {
    wire::Record r = Rec("lease", "alive", v + i, "node-a");
    r.set_expires_unix_ms(f.now.wall_ms + 60'000 + i);
    ASSERT_TRUE(f.records.StoreIfNewer(key_id, r).ok());
  }
  EXPECT_EQ(f.records.expiry().size(), 1u);
  EXPECT_TRUE(f.records.expiry().TakeDue(f.now.wall_ms + 60'999, 10).empty());
  const auto due = f.records.expiry().TakeDue(f.now.wall_ms + 61'000, 10);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].key, "lease");
}

// A key deleted, or written again without a TTL, leaves the expiry index at once instead of
// holding its entry until its old expiry (a session deleted at logout, a month early).
TEST(RecordStoreTest, ADeletedKeyOrOneWrittenWithoutATtlLeavesTheExpiryIndex) {
  Fixture f;
  const uint64_t v = f.now.wall_ms << 16;
  const uint64_t month = uint64_t{30} * 24 * 3600 * 1000;
  for (const std::string key : {"deleted", "rewritten"}) {
    wire::Record r = Rec(key, "session", v + 1, "node-a");
    r.set_expires_unix_ms(f.now.wall_ms + month);
    ASSERT_TRUE(f.records.StoreIfNewer(Id::Sha1(key), r).ok());
  }
  wire::Record kept = Rec("kept", "session", v + 1, "node-a");
  kept.set_expires_unix_ms(f.now.wall_ms + month);
  ASSERT_TRUE(f.records.StoreIfNewer(Id::Sha1("kept"), kept).ok());
  ASSERT_EQ(f.records.expiry().size(), 3u);
  wire::Record tombstone = Rec("deleted", "", v + 2, "node-a");
  tombstone.set_deleted(true);
  ASSERT_TRUE(f.records.StoreIfNewer(Id::Sha1("deleted"), tombstone).ok());
  ASSERT_TRUE(
      f.records.StoreIfNewer(Id::Sha1("rewritten"), Rec("rewritten", "x", v + 2, "node-a")).ok());
  EXPECT_EQ(f.records.expiry().size(), 1u);
  const auto due = f.records.expiry().TakeDue(f.now.wall_ms + month, 10);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].key, "kept");
}

// Hand-over and clean-up erase what they sent once its holders confirmed it; a record of the
// same version by another writer (which wins the tie) stored meanwhile was never sent.
TEST(RecordStoreTest, EraseIfUnchangedLeavesAnotherWritersRecordOfTheSameVersion) {
  Fixture f;
  const uint64_t v = f.now.wall_ms << 16;
  const Id id = Id::Sha1("k");
  ASSERT_TRUE(f.store.Put(id, Rec("k", "later", v, "node-b")).ok());
  const std::string sent_writer = Id::Sha1("node-a").ToBytes();
  auto erased = f.records.EraseIfUnchanged({RecordStamp{id, "k", v, sent_writer}}, false);
  ASSERT_TRUE(erased.ok());
  EXPECT_EQ(*erased, 0u);
  wire::Record kept;
  ASSERT_TRUE(f.store.Get(id, "k", &kept).ok());
  EXPECT_EQ(kept.value(), "later");
  // The record that was sent goes.
  erased =
      f.records.EraseIfUnchanged({RecordStamp{id, "k", v, Id::Sha1("node-b").ToBytes()}}, false);
  ASSERT_TRUE(erased.ok());
  EXPECT_EQ(*erased, 1u);
  EXPECT_TRUE(f.store.Get(id, "k", &kept).IsNotFound());
}

// A purged tombstone or a copy cleaned up ends its key's watch history here: a watcher that
// starts now finds the key absent, and a history leading elsewhere would resync it at once,
// again and again. The key stays followed from no record.
TEST(RecordStoreTest, ErasingAWatchedKeysRecordForgetsItsChanges) {
  Fixture f;
  const uint64_t v = f.now.wall_ms << 16;
  const Id id = Id::Sha1("k");
  wire::Record put = Rec("k", "v", v, "node-a");
  f.watches.Watch("k", nullptr, 0);
  ASSERT_TRUE(f.records.StoreIfNewer(id, put).ok());
  wire::Record del = put;
  del.clear_value();
  del.set_deleted(true);
  del.set_version(v + 1);
  ASSERT_TRUE(f.records.StoreIfNewer(id, del).ok());
  ASSERT_TRUE(f.watches.Watched("k"));
  ASSERT_GT(f.watches.held_bytes(), 0u);  // the put and the delete
  auto erased = f.records.EraseIfUnchanged({RecordStamp{id, "k", v + 1, del.writer()}}, true);
  ASSERT_TRUE(erased.ok());
  ASSERT_EQ(*erased, 1u);
  EXPECT_EQ(f.watches.held_bytes(), 0u);
  f.watches.TakeChanged();
  // A watcher starting now sees the key absent (version 0): it waits, no resync to 0.
  const WatchLog::Answer fresh = f.watches.Collect("k", 0, 10, 1 << 20);
  EXPECT_TRUE(fresh.events.empty());
  EXPECT_FALSE(fresh.resync);
  // The key is still followed: its next write is kept (and reaches waiting watchers).
  ASSERT_TRUE(f.watches.Watched("k"));
  wire::Record again = Rec("k", "again", v + 5, "node-a");
  ASSERT_TRUE(f.records.StoreIfNewer(id, again).ok());
  EXPECT_GT(f.watches.held_bytes(), 0u);
  EXPECT_EQ(f.watches.TakeChanged(), (std::vector<std::string>{"k"}));
}

// A value past its expiry that the sweeper has not reached yet reads as its tombstone
// (version + 1). An owner's write over it is versioned above that tombstone, and a watcher
// sees the expiry before it.
TEST(RecordStoreTest, AStampedWriteOverAnUnsweptExpiryFollowsOnFromTheExpiry) {
  Fixture f;
  const Id id = Id::Sha1("k");
  const uint64_t v = (f.now.wall_ms << 16) + 5;
  wire::Record lease = Rec("k", "held", v, "node-a");
  lease.set_expires_unix_ms(f.now.wall_ms);  // expired now
  ASSERT_TRUE(f.store.Put(id, lease).ok());
  f.watches.Watch("k", &lease, 0);
  wire::Record next;
  next.set_key("k");
  next.set_value("taken");
  ASSERT_TRUE(f.records
                  .StoreStamped(id, &next, Id::Sha1("node-b"),
                                ChangeLink{ChangeLink::Kind::kLocal, 0, true})
                  .ok());
  EXPECT_GT(next.version(), v + 1);
  const WatchLog::Answer a = f.watches.Collect("k", v, 10, 1 << 20);
  ASSERT_EQ(a.events.size(), 2u);
  EXPECT_EQ(a.events[0].type(), wire::WatchEvent::EXPIRE);
  EXPECT_EQ(a.events[0].version(), v + 1);
  EXPECT_EQ(a.events[1].type(), wire::WatchEvent::PUT);
  EXPECT_EQ(a.events[1].version(), next.version());
  EXPECT_FALSE(a.resync);

  // A write a coordinator stamped (every ring with copies), stored over such a value, on the
  // owner or a replica: the expiry shows first there too.
  const Id id2 = Id::Sha1("k2");
  wire::Record lease2 = Rec("k2", "held", v, "node-a");
  lease2.set_expires_unix_ms(f.now.wall_ms);
  ASSERT_TRUE(f.store.Put(id2, lease2).ok());
  f.watches.Watch("k2", &lease2, 0);
  const wire::Record stamped = Rec("k2", "taken", v + 7, "node-c");
  ASSERT_TRUE(f.records
                  .StoreIfNewer(id2, stamped, nullptr, nullptr,
                                ChangeLink{ChangeLink::Kind::kLocal, 0, true}, true)
                  .ok());
  const WatchLog::Answer b = f.watches.Collect("k2", v, 10, 1 << 20);
  ASSERT_EQ(b.events.size(), 2u);
  EXPECT_EQ(b.events[0].type(), wire::WatchEvent::EXPIRE);
  EXPECT_EQ(b.events[0].version(), v + 1);
  EXPECT_EQ(b.events[1].version(), v + 7);
}

// A replica keeps the history its owner keeps: the link the owner sends with a replicated
// write says whether the owner showed the expiry first, whatever the replica's clock says.
TEST(RecordStoreTest, AReplicaShowsAnExpiryBeforeAWriteExactlyWhenItsOwnerDid) {
  const auto replicate = [](bool expired_here, uint64_t owner_prev) {
    Fixture f;
    const Id id = Id::Sha1("k");
    const uint64_t v = (f.now.wall_ms << 16) + 5;
    wire::Record lease = Rec("k", "held", v, "node-a");
    lease.set_expires_unix_ms(expired_here ? f.now.wall_ms : f.now.wall_ms + 1000);
    EXPECT_TRUE(f.store.Put(id, lease).ok());
    f.watches.Watch("k", &lease, 0);
    const wire::Record renewed = Rec("k", "renewed", v + 9, "node-a");
    EXPECT_TRUE(f.records
                    .StoreIfNewer(id, renewed, nullptr, nullptr,
                                  ChangeLink{ChangeLink::Kind::kGiven, owner_prev, true})
                    .ok());
    std::vector<wire::WatchEvent::Type> types;
    for (const auto& e : f.watches.Collect("k", v, 10, 1 << 20).events) types.push_back(e.type());
    return types;
  };
  using T = std::vector<wire::WatchEvent::Type>;
  const T put = {wire::WatchEvent::PUT};
  const T expire_put = {wire::WatchEvent::EXPIRE, wire::WatchEvent::PUT};
  const uint64_t v = (Fixture().now.wall_ms << 16) + 5;
  // The owner renewed it in time (its link is the value), though it expired here since.
  EXPECT_EQ(replicate(/*expired_here=*/true, v), put);
  // The owner found it expired (its link is the expiry), though this clock says not yet.
  EXPECT_EQ(replicate(/*expired_here=*/false, v + 1), expire_put);
  EXPECT_EQ(replicate(/*expired_here=*/true, v + 1), expire_put);
}

TEST(RecordStoreTest, WhenTheStampTiesTheValueDecides) {
  Fixture f;
  const Id key_id = Id::Sha1("k");
  const uint64_t v = f.now.wall_ms << 16;
  ASSERT_TRUE(f.records.StoreIfNewer(key_id, Rec("k", "m", v, "node-a")).ok());
  bool stored = true;
  wire::Record kept;
  ASSERT_TRUE(f.records.StoreIfNewer(key_id, Rec("k", "m", v, "node-a"), &stored, &kept).ok());
  EXPECT_FALSE(stored);
  EXPECT_EQ(kept.value(), "m");
  ASSERT_TRUE(f.records.StoreIfNewer(key_id, Rec("k", "a", v, "node-a"), &stored, &kept).ok());
  EXPECT_FALSE(stored);
  EXPECT_EQ(kept.value(), "m");
  ASSERT_TRUE(f.records.StoreIfNewer(key_id, Rec("k", "z", v, "node-a"), &stored, &kept).ok());
  EXPECT_TRUE(stored);
  wire::Record now;
  ASSERT_TRUE(f.store.Get(key_id, "k", &now).ok());
  EXPECT_EQ(now.value(), "z");
  // An older write is refused and the record kept comes back whole.
  ASSERT_TRUE(
      f.records.StoreIfNewer(key_id, Rec("k", "old", v - 1, "node-b"), &stored, &kept).ok());
  EXPECT_FALSE(stored);
  EXPECT_EQ(kept.value(), "z");
  EXPECT_EQ(kept.version(), v);
}

TEST(RecordStoreTest, AStampedWriteIsVersionedAboveTheRecordItReplacesAndStored) {
  Fixture f;
  const Id key_id = Id::Sha1("k");
  const Id writer = Id::Sha1("node-a");
  // Another node's clock ran 500 ms ahead of ours when it wrote the record now stored; it is
  // put into the store directly, so that this node's clock has not seen its version.
  const uint64_t ahead = (f.now.wall_ms + 500) << 16;
  ASSERT_TRUE(f.store.Put(key_id, Rec("k", "old", ahead, "node-b")).ok());
  ASSERT_LT(f.clock.last(), ahead);

  wire::Record put;
  put.set_key("k");
  put.set_value("new");
  ASSERT_TRUE(f.records.StoreStamped(key_id, &put, writer, ChangeLink{}).ok());
  EXPECT_GT(put.version(), ahead);
  EXPECT_EQ(put.writer(), writer.ToBytes());
  wire::Record stored;
  ASSERT_TRUE(f.store.Get(key_id, "k", &stored).ok());
  EXPECT_EQ(stored.value(), "new");
  EXPECT_EQ(stored.version(), put.version());

  // A delete is stamped the same way and leaves a tombstone above the put.
  wire::Record del;
  del.set_key("k");
  del.set_deleted(true);
  ASSERT_TRUE(f.records.StoreStamped(key_id, &del, writer, ChangeLink{}).ok());
  EXPECT_GT(del.version(), put.version());
  ASSERT_TRUE(f.store.Get(key_id, "k", &stored).ok());
  EXPECT_TRUE(stored.deleted());
  EXPECT_EQ(stored.version(), del.version());
}

TEST(RecordStoreTest, AStampedWriteThatIsWrongStoresNothing) {
  Fixture f;
  const Id writer = Id::Sha1("node-a");
  // A value over the limit, over a record that is there: InvalidArgument, the record kept.
  const Id key_id = Id::Sha1("k");
  ASSERT_TRUE(f.records.StoreIfNewer(key_id, Rec("k", "kept", f.now.wall_ms << 16, "node-b")).ok());
  wire::Record big;
  big.set_key("k");
  big.set_value(std::string(f.config.max_value_bytes + 1, 'v'));
  EXPECT_TRUE(f.records.StoreStamped(key_id, &big, writer, ChangeLink{}).code() ==
              Status::Code::kInvalidArgument);
  wire::Record stored;
  ASSERT_TRUE(f.store.Get(key_id, "k", &stored).ok());
  EXPECT_EQ(stored.value(), "kept");
  // A key over the limit, where nothing is: InvalidArgument, still nothing.
  const std::string long_key(kMaxKeyBytes + 1, 'x');
  wire::Record bad;
  bad.set_key(long_key);
  bad.set_value("v");
  EXPECT_TRUE(f.records.StoreStamped(Id::Sha1(long_key), &bad, writer, ChangeLink{}).code() ==
              Status::Code::kInvalidArgument);
  EXPECT_TRUE(f.store.Get(Id::Sha1(long_key), long_key, &stored).IsNotFound());
}

// A coordinator stamps a write it does not hold (the key's holders are elsewhere) just above a
// version it took from another node's clock, ahead of its own; it restarts on the same store at
// once. Its versions must go on above the one it handed out, or its next write of the key could
// carry the same version and writer as the acknowledged one and be taken for it.
TEST(RecordStoreTest, VersionsAfterARestartStayAboveEveryVersionHandedOutBefore) {
  Fixture f;
  const uint64_t ahead = (f.now.wall_ms + 1'500) << 16;  // another node's clock, 1.5 s ahead
  ASSERT_TRUE(f.records.StoreIfNewer(Id::Sha1("other"), Rec("other", "x", ahead, "node-x")).ok());
  const uint64_t handed = f.records.NextVersion(nullptr);
  EXPECT_GT(handed, ahead);
  for (int i = 0; i < 1000; ++i) (void)f.records.NextVersion(nullptr);
  const uint64_t last = f.records.NextVersion(nullptr);

  // The restart: a new clock and record store over the same data, the wall clock where it
  // was, and then set back by a minute.
  for (const uint64_t wall : {f.now.wall_ms, f.now.wall_ms - 60'000}) {
    VersionClock clock;
    WatchLog watches;
    Clock now{5, wall};
    RecordStore records{&f.store, &clock, &f.config, &now, &watches};
    ASSERT_TRUE(records.ObserveAllVersions(KeyRange{Id(), Id()}).ok());
    EXPECT_GT(records.NextVersion(nullptr), last) << "wall " << wall;
  }
}

}  // namespace
}  // namespace chord
