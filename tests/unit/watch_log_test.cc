// WatchLog: which changes a watcher that has seen a version is sent, and when it must resync.
#include "node/core/watch/watch_log.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace chord {
namespace {

using Kind = ChangeLink::Kind;

wire::Record Put(const std::string& key, uint64_t version, const std::string& value) {
  wire::Record r;
  r.set_key(key);
  r.set_version(version);
  r.set_value(value);
  return r;
}

wire::Record Tombstone(const std::string& key, uint64_t version, bool expired) {
  wire::Record r;
  r.set_key(key);
  r.set_version(version);
  r.set_deleted(true);
  r.set_expired(expired);
  return r;
}

// Everything a watcher that has seen `after` may get, unbounded.
WatchLog::Answer All(const WatchLog& log, const std::string& key, uint64_t after) {
  return log.Collect(key, after, SIZE_MAX, SIZE_MAX);
}

std::vector<uint64_t> Versions(const WatchLog::Answer& a) {
  std::vector<uint64_t> v;
  for (const auto& e : a.events) v.push_back(e.version());
  return v;
}

TEST(WatchLogTest, SendsTheChainAfterTheWatchersVersion) {
  WatchLog log;
  const wire::Record base = Put("k", 10, "a");
  log.Watch("k", &base, 0);
  log.OnStored(Put("k", 20, "b"), 10, ChangeLink{Kind::kLocal, 0, true}, 1);
  log.OnStored(Tombstone("k", 30, false), 20, ChangeLink{Kind::kLocal, 0, true}, 2);
  log.OnStored(Tombstone("k", 31, true), 30, ChangeLink{Kind::kGiven, 30, true}, 3);
  EXPECT_EQ(Versions(All(log, "k", 10)), (std::vector<uint64_t>{20, 30, 31}));
  EXPECT_EQ(Versions(All(log, "k", 20)), (std::vector<uint64_t>{30, 31}));
  const auto a = All(log, "k", 10);
  EXPECT_EQ(a.events[0].type(), wire::WatchEvent::PUT);
  EXPECT_EQ(a.events[0].value(), "b");
  EXPECT_EQ(a.events[1].type(), wire::WatchEvent::DELETE);
  EXPECT_EQ(a.events[2].type(), wire::WatchEvent::EXPIRE);
  EXPECT_FALSE(a.resync);
  // Up to date: nothing, and no resync (the watcher waits).
  const auto none = All(log, "k", 31);
  EXPECT_TRUE(none.events.empty());
  EXPECT_FALSE(none.resync);
}

TEST(WatchLogTest, AnAnswerIsBoundedInEventsAndValueBytesAndTheRestComesNext) {
  WatchLog log;
  log.Watch("k", nullptr, 0);
  uint64_t prev = 0;
  for (uint64_t v = 1; v <= 20; ++v) {
    log.OnStored(Put("k", v, std::string(1000, 'x')), prev, ChangeLink{Kind::kLocal, 0, true}, v);
    prev = v;
  }
  // Three events' values fit in 3,500 bytes, a fourth's does not.
  EXPECT_EQ(Versions(log.Collect("k", 0, 100, 3500)), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(Versions(log.Collect("k", 3, 2, 1 << 20)), (std::vector<uint64_t>{4, 5}));
  // One event always comes, however large: a watcher is never stuck behind it.
  EXPECT_EQ(Versions(log.Collect("k", 5, 100, 10)), (std::vector<uint64_t>{6}));
  // Asking on from the last event received reaches the newest.
  uint64_t seen = 0;
  for (int answers = 0; answers < 20 && seen < 20; ++answers) {
    const WatchLog::Answer a = log.Collect("k", seen, 4, 2500);
    ASSERT_FALSE(a.events.empty());
    ASSERT_FALSE(a.resync);
    EXPECT_LE(a.events.size(), 2u);
    EXPECT_EQ(a.events.front().version(), seen + 1);
    seen = a.events.back().version();
  }
  EXPECT_EQ(seen, 20u);
}

TEST(WatchLogTest, AWatcherBeforeTheLogOrAcrossAnUnlinkedChangeResyncs) {
  WatchLog log;
  const wire::Record base = Put("k", 10, "a");
  log.Watch("k", &base, 0);
  // Older than what the log starts at: the changes in between are unknown.
  EXPECT_TRUE(All(log, "k", 5).resync);
  log.OnStored(Put("k", 20, "b"), 10, ChangeLink{Kind::kLocal, 0, true}, 1);
  // A repair (unlinked) may have skipped versions the owner had.
  log.OnStored(Put("k", 40, "d"), 20, ChangeLink{}, 2);
  const auto a = All(log, "k", 10);
  EXPECT_EQ(Versions(a), (std::vector<uint64_t>{20}));  // the chain up to the break
  EXPECT_TRUE(All(log, "k", 20).resync);
  // A replica whose owner says the previous version was 30, which the watcher never saw.
  log.OnStored(Put("k", 50, "e"), 40, ChangeLink{Kind::kGiven, 45, true}, 3);
  EXPECT_TRUE(All(log, "k", 40).resync);
  EXPECT_EQ(Versions(All(log, "k", 45)), (std::vector<uint64_t>{50}));
}

TEST(WatchLogTest, TheOwnersUnansweredWritesAreHeldBackUntilPublished) {
  WatchLog log;
  log.Watch("k", nullptr, 0);
  log.OnStored(Put("k", 20, "b"), 0, ChangeLink{Kind::kLocal, 0, false}, 1);
  log.OnStored(Put("k", 30, "c"), 20, ChangeLink{Kind::kLocal, 0, true}, 2);
  const auto held = All(log, "k", 0);
  EXPECT_TRUE(held.events.empty());
  EXPECT_FALSE(held.resync);  // wait, not resync
  uint64_t prev = 0;
  ASSERT_TRUE(log.LinkOf("k", 30, &prev));
  EXPECT_EQ(prev, 20u);
  log.TakeChanged();
  log.Publish("k", 20);
  EXPECT_EQ(log.TakeChanged(), (std::vector<std::string>{"k"}));
  EXPECT_EQ(Versions(All(log, "k", 0)), (std::vector<uint64_t>{20, 30}));
}

TEST(WatchLogTest, IsBoundedPerKeyAndInKeys) {
  WatchLog log;
  log.Watch("k", nullptr, 0);
  uint64_t prev = 0;
  for (uint64_t v = 1; v <= WatchLog::kMaxEventsPerKey + 10; ++v) {
    log.OnStored(Put("k", v, "x"), prev, ChangeLink{Kind::kLocal, 0, true}, v);
    prev = v;
  }
  // The oldest changes are gone: a watcher behind them resyncs, one after them does not.
  EXPECT_TRUE(All(log, "k", 1).resync);
  EXPECT_EQ(All(log, "k", prev - 2).events.size(), 2u);
  for (size_t i = 0; i < WatchLog::kMaxWatchedKeys + 5; ++i) {
    log.Watch("key-" + std::to_string(i), nullptr, 100 + i);
  }
  EXPECT_EQ(log.watched_keys(), WatchLog::kMaxWatchedKeys);
  // Keys unused for long are forgotten, with their values.
  log.Expire(100 + WatchLog::kMaxWatchedKeys + 5 + WatchLog::kForgetAfterMs + 1);
  EXPECT_EQ(log.watched_keys(), 0u);
  EXPECT_EQ(log.held_bytes(), 0u);
}

TEST(WatchLogTest, AHandOverCarriesTheChangesToTheNextHolder) {
  WatchLog old_owner;
  const wire::Record base = Put("k", 10, "a");
  old_owner.Watch("k", &base, 0);
  uint64_t prev = 10;
  for (uint64_t v = 20; v <= 50; v += 10) {
    old_owner.OnStored(Put("k", v, "value"), prev, ChangeLink{Kind::kLocal, 0, true}, v);
    prev = v;
  }
  // Not yet answered by the replicas: stays behind.
  old_owner.OnStored(Put("k", 60, "late"), 50, ChangeLink{Kind::kLocal, 0, false}, 60);
  wire::WatchHistory h;
  ASSERT_TRUE(old_owner.Export("k", 1 << 20, &h));
  EXPECT_EQ(h.base_version(), 10u);
  EXPECT_EQ(h.changes_size(), 4);
  WatchLog new_owner;
  new_owner.Import(h, Put("k", 50, "value"), 1 << 20, 100);
  EXPECT_EQ(Versions(All(new_owner, "k", 10)), (std::vector<uint64_t>{20, 30, 40, 50}));
  // Its own next write links to the last handed-over version.
  new_owner.OnStored(Put("k", 70, "next"), 50, ChangeLink{Kind::kLocal, 0, true}, 101);
  EXPECT_EQ(Versions(All(new_owner, "k", 40)), (std::vector<uint64_t>{50, 70}));
  // A budget keeps only the newest changes: a watcher behind them resyncs.
  const size_t two_changes =
      1 + WatchLog::kEventOverheadBytes + 2 * (5 + WatchLog::kEventOverheadBytes);
  wire::WatchHistory small;
  ASSERT_TRUE(old_owner.Export("k", two_changes, &small));
  EXPECT_EQ(small.changes_size(), 2);
  EXPECT_EQ(small.base_version(), 30u);
  EXPECT_EQ(WatchLog::HistoryBytes(small), two_changes);
  wire::WatchHistory none;
  EXPECT_FALSE(old_owner.Export("k", WatchLog::kEventOverheadBytes, &none));
  // Malformed histories (versions not increasing) are ignored.
  wire::WatchHistory bad = h;
  bad.set_key("other");
  bad.mutable_changes(2)->mutable_event()->set_version(5);
  new_owner.Import(bad, Put("other", 50, "value"), 1 << 20, 102);
  EXPECT_FALSE(new_owner.Watched("other"));
}

TEST(WatchLogTest, AHandOversBudgetCountsEveryChangeNotOnlyItsValue) {
  // A key deleted and written empty a thousand times holds no value bytes, yet each change
  // takes room on the wire: the history handed over stays within its budget as sent.
  WatchLog log;
  log.Watch("k", nullptr, 0);
  uint64_t prev = 0;
  for (uint64_t v = 1; v <= 1000; ++v) {
    const wire::Record r = v % 2 == 0 ? Tombstone("k", v, false) : Put("k", v, "");
    log.OnStored(r, prev, ChangeLink{Kind::kLocal, 0, true}, v);
    prev = v;
  }
  // In memory too: each change counts.
  EXPECT_EQ(log.held_bytes(), 1000 * WatchLog::kEventOverheadBytes);
  constexpr size_t kBudget = 4096;
  wire::WatchHistory h;
  ASSERT_TRUE(log.Export("k", kBudget, &h));
  EXPECT_GT(h.changes_size(), 0);
  EXPECT_LT(h.changes_size(), 1000);
  EXPECT_LE(WatchLog::HistoryBytes(h), kBudget);
  EXPECT_LE(h.ByteSizeLong(), kBudget);
  EXPECT_EQ(h.changes(h.changes_size() - 1).event().version(), 1000u);  // the newest kept
  log.Forget("k");
  EXPECT_TRUE(log.Watched("k"));
  EXPECT_EQ(log.held_bytes(), 0u);
}

TEST(WatchLogTest, AWriteItsSenderHadNotPublishedMakesWatchersBehindItResync) {
  // The old owner hands the key over while its write of 60 still waits for its replicas: the
  // history ends at 50, the record handed over is 60. A watcher at 50 must not wait at the
  // new owner for a change that will never be published there.
  WatchLog old_owner;
  const wire::Record base = Put("k", 50, "a");
  old_owner.Watch("k", &base, 0);
  old_owner.OnStored(Put("k", 60, "late"), 50, ChangeLink{Kind::kLocal, 0, false}, 1);
  wire::WatchHistory h;
  ASSERT_TRUE(old_owner.Export("k", 1 << 20, &h));
  EXPECT_EQ(h.changes_size(), 0);
  WatchLog new_owner;
  new_owner.Import(h, Put("k", 60, "late"), 1 << 20, 2);
  EXPECT_TRUE(All(new_owner, "k", 50).resync);
  EXPECT_TRUE(All(new_owner, "k", 60).events.empty());
  EXPECT_FALSE(All(new_owner, "k", 60).resync);
  // A full history and a newer record: still at most kMaxEventsPerKey changes kept.
  WatchLog full_owner;
  const wire::Record zero = Put("f", 0, "");
  full_owner.Watch("f", &zero, 0);
  for (uint64_t v = 1; v <= WatchLog::kMaxEventsPerKey; ++v) {
    full_owner.OnStored(Put("f", v, "x"), v - 1, ChangeLink{Kind::kLocal, 0, true}, v);
  }
  wire::WatchHistory full;
  ASSERT_TRUE(full_owner.Export("f", 1 << 30, &full));
  ASSERT_EQ(static_cast<size_t>(full.changes_size()), WatchLog::kMaxEventsPerKey);
  WatchLog taker;
  taker.Import(full, Put("f", WatchLog::kMaxEventsPerKey + 1, "late"), 1 << 20, 3);
  EXPECT_EQ(All(taker, "f", 1).events.size(), WatchLog::kMaxEventsPerKey - 1);  // 2..1024
  EXPECT_TRUE(All(taker, "f", WatchLog::kMaxEventsPerKey).resync);
  EXPECT_EQ(taker.held_bytes(), WatchLog::kMaxEventsPerKey * (1 + WatchLog::kEventOverheadBytes) +
                                    3);  // 1,023 values of "x" and "late"
  // A record no newer than the history adds nothing.
  WatchLog up_to_date;
  up_to_date.Import(h, Put("k", 50, "a"), 1 << 20, 2);
  EXPECT_TRUE(up_to_date.Watched("k"));
  EXPECT_FALSE(All(up_to_date, "k", 50).resync);
}

TEST(WatchLogTest, AChangeFoundNotToFollowOnMakesWatchersBehindItResync) {
  WatchLog log;
  const wire::Record base = Put("k", 10, "a");
  log.Watch("k", &base, 0);
  log.OnStored(Put("k", 30, "c"), 10, ChangeLink{Kind::kLocal, 0, false}, 1);
  // A replica answered that it holds 20, which this owner never had.
  log.Unlink("k", 30);
  log.Publish("k", 30);
  EXPECT_TRUE(All(log, "k", 10).resync);
}

TEST(WatchLogTest, AnOutrankedWriteIsRetractedAndNeverSeen) {
  WatchLog log;
  const wire::Record base = Put("k", 10, "a");
  log.Watch("k", &base, 0);
  log.OnStored(Put("k", 20, "x"), 10, ChangeLink{Kind::kLocal, 0, false}, 1);  // unanswered
  // A replica held a newer record, stored here as it came (unlinked).
  log.OnStored(Put("k", 30, "y"), 20, ChangeLink{Kind::kUnlinked, 0, true}, 2);
  log.Retract("k", 20);
  const WatchLog::Answer a = All(log, "k", 10);
  EXPECT_TRUE(a.events.empty());
  EXPECT_TRUE(a.resync);
  // Stamped again above it, and answered: it follows on from 30.
  log.OnStored(Put("k", 40, "x"), 30, ChangeLink{Kind::kLocal, 0, false}, 3);
  log.Publish("k", 40);
  EXPECT_EQ(Versions(All(log, "k", 30)), (std::vector<uint64_t>{40}));
  EXPECT_EQ(log.held_bytes(), 2 * (1 + WatchLog::kEventOverheadBytes));
}

TEST(WatchLogTest, KeysNotWatchedKeepNothing) {
  WatchLog log;
  log.OnStored(Put("k", 20, "b"), 0, ChangeLink{Kind::kLocal, 0, true}, 1);
  EXPECT_FALSE(log.Watched("k"));
  EXPECT_TRUE(All(log, "k", 0).resync);
  EXPECT_TRUE(log.TakeChanged().empty());
}

}  // namespace
}  // namespace chord
