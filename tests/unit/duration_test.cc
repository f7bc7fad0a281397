// chordctl's durations (put --ttl).
#include "tools/client/duration.h"

#include <gtest/gtest.h>

#include "node/core/data/write_conditions.h"
#include "protocol/limits.h"

namespace chord {
namespace {

TEST(DurationTest, ReadsEveryUnitAndSums) {
  EXPECT_EQ(*ParseDuration("500ms"), 500u);
  EXPECT_EQ(*ParseDuration("30s"), 30'000u);
  EXPECT_EQ(*ParseDuration("5m"), 300'000u);
  EXPECT_EQ(*ParseDuration("1h"), 3'600'000u);
  EXPECT_EQ(*ParseDuration("2d"), 172'800'000u);
  EXPECT_EQ(*ParseDuration("1h30m"), 5'400'000u);
}

TEST(DurationTest, RefusesWhatIsNotADurationWithASentence) {
  for (const char* bad : {"", "10", "s", "5x", "-1s", "1.5s", "1s ", "0s", "99999999999d"}) {
    Result<uint64_t> r = ParseDuration(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_FALSE(r.status().message().empty()) << bad;
    }
  }
  // The bound is the node's own (kMaxTtlMs): every duration that parses is a TTL a node takes.
  EXPECT_TRUE(ParseDuration("3660d").ok());
  EXPECT_EQ(*ParseDuration("3660d"), kMaxTtlMs);
  EXPECT_EQ(TtlProblem(*ParseDuration("3660d")), "");
  EXPECT_FALSE(ParseDuration("3660d1ms").ok());
  EXPECT_FALSE(ParseDuration("3661d").ok());
  // The sentence names the bound, as a duration the parser takes.
  EXPECT_NE(ParseDuration("3661d").status().message().find("(3660d, about ten years)"),
            std::string::npos)
      << ParseDuration("3661d").status().message();
}

}  // namespace
}  // namespace chord
