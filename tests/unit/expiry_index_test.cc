#include "node/core/expiry_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/id.h"

namespace chord {
namespace {

constexpr uint64_t kT0 = 1'800'000'000'000;  // a wall time, ms
constexpr size_t kCapacity = 1'000;

std::vector<std::string> KeysOf(const std::vector<ExpiryIndex::Entry>& entries) {
  std::vector<std::string> keys;
  for (const auto& e : entries) keys.push_back(e.key);
  return keys;
}

// A key refreshed with a TTL more often than the index has room for (a lease, a session) keeps
// one entry, due at its latest expiry, and the index never falls back to scanning the store.
TEST(ExpiryIndexTest, AKeyWrittenAgainKeepsOneEntryAtItsLatestExpiry) {
  ExpiryIndex index(kCapacity);
  const Id id = Id::Sha1("lease");
  const uint64_t writes = kCapacity + 10;
  for (uint64_t i = 0; i < writes; ++i) index.Note(kT0 + 60'000 + i, id, "lease");
  EXPECT_EQ(index.size(), 1u);
  EXPECT_FALSE(index.overflowed());
  // Not due at any of its earlier expiries.
  EXPECT_TRUE(index.TakeDue(kT0 + 60'000 + writes - 2, 100).empty());
  const auto due = index.TakeDue(kT0 + 60'000 + writes - 1, 100);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].key, "lease");
  EXPECT_EQ(due[0].key_id, id);
  EXPECT_EQ(due[0].expires_unix_ms, kT0 + 60'000 + writes - 1);
  EXPECT_EQ(index.size(), 0u);
  EXPECT_TRUE(index.TakeDue(kT0 + 600'000, 100).empty());
}

// A shorter TTL moves the entry earlier: the key falls due at its new time, once.
TEST(ExpiryIndexTest, AShorterExpiryMovesTheEntryEarlier) {
  ExpiryIndex index(kCapacity);
  const Id id = Id::Sha1("k");
  index.Note(kT0 + 10'000, id, "k");
  index.Note(kT0 + 1'000, id, "k");
  index.Note(0, id, "k");  // no expiry: ignored (the sweeper checks the record itself)
  const auto due = index.TakeDue(kT0 + 1'000, 100);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].expires_unix_ms, kT0 + 1'000);
  EXPECT_TRUE(index.TakeDue(kT0 + 10'000, 100).empty());
}

// Forget drops a key's entry (and only that one); forgetting a key never noted changes nothing.
TEST(ExpiryIndexTest, AForgottenKeyIsNotDue) {
  ExpiryIndex index(kCapacity);
  index.Note(kT0 + 1, Id::Sha1("gone"), "gone");
  index.Note(kT0 + 1, Id::Sha1("stays"), "stays");
  index.Forget(Id::Sha1("gone"), "gone");
  index.Forget(Id::Sha1("never"), "never");
  EXPECT_EQ(index.size(), 1u);
  EXPECT_EQ(KeysOf(index.TakeDue(kT0 + 1, 10)), (std::vector<std::string>{"stays"}));
}

// Entries come out earliest first, at most `max` per call; the same time by key id.
TEST(ExpiryIndexTest, DueEntriesComeOutEarliestFirstAndBounded) {
  ExpiryIndex index(kCapacity);
  index.Note(kT0 + 3, Id::Sha1("c"), "c");
  index.Note(kT0 + 1, Id::Sha1("b"), "b");
  index.Note(kT0 + 2, Id::Sha1("a"), "a");
  index.Note(kT0 + 1, Id::Sha1("a2"), "a2");
  index.Note(kT0 + 9, Id::Sha1("late"), "late");
  const std::string first_of_t1 = Id::Sha1("a2") < Id::Sha1("b") ? "a2" : "b";
  const std::string second_of_t1 = first_of_t1 == "b" ? "a2" : "b";
  EXPECT_EQ(KeysOf(index.TakeDue(kT0 + 3, 3)),
            (std::vector<std::string>{first_of_t1, second_of_t1, "a"}));
  EXPECT_EQ(KeysOf(index.TakeDue(kT0 + 3, 3)), (std::vector<std::string>{"c"}));
  EXPECT_EQ(index.size(), 1u);
}

// Distinct keys beyond the capacity overflow the index (the sweeper then scans the store too),
// each one refused counted; a key already indexed still moves. The overflow lasts until the
// sweeper ends it (it saw every key indexed); the count of refusals stays.
TEST(ExpiryIndexTest, DistinctKeysBeyondTheBoundOverflow) {
  ExpiryIndex index(kCapacity);
  for (size_t i = 0; i < kCapacity; ++i) {
    const std::string key = "k" + std::to_string(i);
    index.Note(kT0 + 1'000, Id::Sha1(key), key);
  }
  EXPECT_EQ(index.size(), kCapacity);
  EXPECT_FALSE(index.overflowed());
  index.Note(kT0 + 5, Id::Sha1("k7"), "k7");
  EXPECT_FALSE(index.overflowed());
  EXPECT_EQ(index.refusals(), 0u);
  index.Note(kT0 + 1'000, Id::Sha1("one-more"), "one-more");
  EXPECT_TRUE(index.overflowed());
  EXPECT_EQ(index.refusals(), 1u);
  index.Note(kT0 + 1'000, Id::Sha1("one-more"), "one-more");
  EXPECT_EQ(index.refusals(), 2u);
  EXPECT_EQ(index.size(), kCapacity);
  EXPECT_EQ(KeysOf(index.TakeDue(kT0 + 5, 10)), (std::vector<std::string>{"k7"}));
  index.Note(kT0 + 1'000, Id::Sha1("one-more"), "one-more");  // room again
  EXPECT_EQ(index.refusals(), 2u);
  EXPECT_EQ(index.size(), kCapacity);
  EXPECT_TRUE(index.overflowed());
  index.EndOverflow();
  EXPECT_FALSE(index.overflowed());
  EXPECT_EQ(index.refusals(), 2u);
}

// The vnodes of a process share their store and their count of refusals: a key refused by one
// position's index may be another's to expire, so each counts as overflowed until it has made
// its own clean pass (EndOverflow). Refusals before sharing count too.
TEST(ExpiryIndexTest, PositionsSharingACountOfRefusalsOverflowTogether) {
  ExpiryIndex a(1), b(1), c(1);
  a.Note(kT0 + 1'000, Id::Sha1("a1"), "a1");
  a.Note(kT0 + 1'000, Id::Sha1("a2"), "a2");  // refused before sharing
  EXPECT_TRUE(a.overflowed());
  uint64_t shared = 0;
  a.ShareRefusals(&shared);
  b.ShareRefusals(&shared);
  c.ShareRefusals(&shared);
  EXPECT_EQ(shared, 1u);
  EXPECT_TRUE(a.overflowed());
  EXPECT_TRUE(b.overflowed());
  a.EndOverflow();
  b.EndOverflow();
  c.EndOverflow();
  EXPECT_FALSE(a.overflowed() || b.overflowed() || c.overflowed());
  b.Note(kT0 + 1'000, Id::Sha1("b1"), "b1");
  EXPECT_FALSE(b.overflowed());
  b.Note(kT0 + 1'000, Id::Sha1("b2"), "b2");  // refused by b: every position scans again
  EXPECT_EQ(shared, 2u);
  EXPECT_TRUE(a.overflowed() && b.overflowed() && c.overflowed());
  EXPECT_EQ(a.refusals(), 2u);
  a.EndOverflow();
  EXPECT_FALSE(a.overflowed());
  EXPECT_TRUE(b.overflowed());
}

}  // namespace
}  // namespace chord
