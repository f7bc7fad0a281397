// chord-lancheck's verdicts (AckLog, CounterLog): what the LAN test bed calls a lost, stale or
// doubled write, against a ring that reads as a map the test fills.

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/lancheck/ack_log.h"
#include "tools/lancheck/counter_log.h"

namespace chord::lancheck {
namespace {

// A ring that reads as `state` (key -> value, version).
ReadFn RingOf(const std::map<std::string, std::pair<std::string, uint64_t>>& state) {
  return [state](const std::string& key, std::string*) {
    auto it = state.find(key);
    return it == state.end() ? std::optional<std::pair<std::string, uint64_t>>() : it->second;
  };
}

TEST(AckLogTest, ALostOrOlderWriteIsReportedAndANewerOneIsNot) {
  const std::vector<Ack> acks = {
      {"a", "1", 10, 0}, {"a", "2", 20, 5}, {"b", "x", 7, 6}, {"c", "y", 9, 7}};
  auto parsed = ParseAckLog(FormatAck(acks[0]) + FormatAck(acks[1]) + FormatAck(acks[2]) +
                            FormatAck(acks[3]));
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->size(), 4u);
  EXPECT_EQ((*parsed)[1].value, "2");
  // a: a newer write than acknowledged (its answer lost); b: older; c: missing.
  const Verdict v = Verify(*parsed, RingOf({{"a", {"3", 30}}, {"b", {"old", 6}}}));
  EXPECT_EQ(v.keys, 3u);
  EXPECT_EQ(v.stale, 1u);
  EXPECT_EQ(v.lost, 1u);
  EXPECT_EQ(v.problems.size(), 2u);
  const Verdict unread = Verify(*parsed, [](const std::string&, std::string* error) {
    *error = "no node answered";
    return std::optional<std::pair<std::string, uint64_t>>();
  });
  EXPECT_EQ(unread.unreadable, 3u);
  EXPECT_EQ(unread.lost + unread.stale, 0u);
  EXPECT_FALSE(ParseAckLog("a\t1\tten\t0\n").ok());
}

TEST(CounterLogTest, IncrementsThatFollowOnFromEachOtherPass) {
  const std::vector<Increment> incs = {
      {"counter-0", 0, 1, 100, 1}, {"counter-0", 100, 2, 110, 2}, {"counter-1", 0, 1, 105, 3}};
  std::string text;
  for (const Increment& inc : incs) text += FormatIncrement(inc);
  auto parsed = ParseIncrementLog(text);
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[1].from_version, 100u);
  EXPECT_EQ((*parsed)[1].value, 2u);
  // counter-0 went on past what was acknowledged (an increment whose answer was lost).
  const Verdict v =
      VerifyCounters(*parsed, RingOf({{"counter-0", {"3", 120}}, {"counter-1", {"1", 105}}}));
  EXPECT_EQ(v.keys, 2u);
  EXPECT_EQ(v.lost + v.stale + v.doubled, 0u) << (v.problems.empty() ? "" : v.problems[0]);
}

TEST(CounterLogTest, TwoIncrementsFromOneStateAreALostUpdate) {
  // Both read 1 at version 100 and both were acknowledged: one of them is not in the counter.
  const std::vector<Increment> incs = {
      {"counter-0", 0, 1, 100, 1}, {"counter-0", 100, 2, 110, 2}, {"counter-0", 100, 2, 111, 3}};
  const Verdict v = VerifyCounters(incs, RingOf({{"counter-0", {"2", 111}}}));
  EXPECT_EQ(v.doubled, 1u);
  ASSERT_FALSE(v.problems.empty());
  EXPECT_NE(v.problems[0].find("acknowledged twice"), std::string::npos) << v.problems[0];
}

TEST(CounterLogTest, ACounterBelowItsAcknowledgedValueOrOlderIsReported) {
  const std::vector<Increment> incs = {{"c0", 0, 1, 100, 1},
                                       {"c0", 100, 2, 110, 2},
                                       {"c1", 0, 1, 100, 3},
                                       {"c2", 0, 1, 100, 4},
                                       {"c3", 0, 1, 100, 5}};
  const Verdict v =
      VerifyCounters(incs, RingOf({{"c0", {"1", 100}}, {"c1", {"one", 100}}, {"c3", {"1", 90}}}));
  EXPECT_EQ(v.keys, 4u);
  EXPECT_EQ(v.lost, 3u);   // c0 went back, c1 is not a number, c2 is missing
  EXPECT_EQ(v.stale, 1u);  // c3 reads an older version
  EXPECT_EQ(v.doubled, 0u);
  // A counter no node could read is neither lost nor kept: the verdict says so apart.
  const Verdict unread = VerifyCounters(incs, [](const std::string&, std::string* error) {
    *error = "no node answered";
    return std::optional<std::pair<std::string, uint64_t>>();
  });
  EXPECT_EQ(unread.unreadable, 4u);
  EXPECT_EQ(unread.lost + unread.stale + unread.doubled, 0u);
  EXPECT_FALSE(ParseIncrementLog("c0\t0\t1\t100\n").ok());
  EXPECT_FALSE(ParseIncrementLog("c0\t0\t-1\t100\t5\n").ok());
}

}  // namespace
}  // namespace chord::lancheck
