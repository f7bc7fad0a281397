// LinkPace: the size of a bulk message to a peer follows what its link carried in the last
// exchanges (a quarter of the RPC deadline's worth), grows at most twofold per exchange, falls
// to an eighth after a failure, ignores exchanges too small to time the link, and is kept per
// peer within a bounded table.
#include "node/core/link_pace.h"

#include <gtest/gtest.h>

#include <string>

namespace chord {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(LinkPaceTest, APeerStartsAtTheConfiguredSize) {
  const LinkPace pace(4 * kMiB, 1000);
  EXPECT_EQ(pace.BatchBytes("10.0.0.1:4000"), 4 * kMiB);
  EXPECT_EQ(pace.target_ms(), 250u);
}

TEST(LinkPaceTest, ASlowExchangeCutsTheNextToWhatTheLinkCarriesInTheTargetTime) {
  LinkPace pace(4 * kMiB, 1000);
  // 4 MiB in 8.4 s: 0.5 MB/s, so 250 ms carry 4 MiB * 250 / 8400.
  pace.Answered("slow:1", 4 * kMiB, 8400, pace.BatchBytes("slow:1"));
  EXPECT_EQ(pace.BatchBytes("slow:1"), 4 * kMiB * 250 / 8400);
  EXPECT_EQ(pace.BatchBytes("other:1"), 4 * kMiB) << "another peer's link is not this one";
}

TEST(LinkPaceTest, AFastLinkGrowsBackAtMostTwofoldPerExchange) {
  LinkPace pace(4 * kMiB, 1000);
  pace.Failed("p:1", 4 * kMiB, pace.BatchBytes("p:1"));
  EXPECT_EQ(pace.BatchBytes("p:1"), 512 * 1024u);
  pace.Answered("p:1", 512 * 1024, 2, pace.BatchBytes("p:1"));  // quick: the link carries far more
  EXPECT_EQ(pace.BatchBytes("p:1"), kMiB);
  pace.Answered("p:1", kMiB, 3, pace.BatchBytes("p:1"));
  EXPECT_EQ(pace.BatchBytes("p:1"), 2 * kMiB);
  pace.Answered("p:1", 2 * kMiB, 5, pace.BatchBytes("p:1"));
  EXPECT_EQ(pace.BatchBytes("p:1"), 4 * kMiB);
  pace.Answered("p:1", 4 * kMiB, 5, pace.BatchBytes("p:1"));
  EXPECT_EQ(pace.BatchBytes("p:1"), 4 * kMiB) << "never above the configured size";
}

TEST(LinkPaceTest, FailuresCutToAnEighthDownToTheFloor) {
  LinkPace pace(4 * kMiB, 1000);
  for (int i = 0; i < 10; ++i) pace.Failed("p:1", 4 * kMiB, pace.BatchBytes("p:1"));
  EXPECT_EQ(pace.BatchBytes("p:1"), LinkPace::kMinBytes);
  // A slow exchange never goes below the floor either.
  pace.Answered("q:1", 4 * kMiB, 10'000'000, pace.BatchBytes("q:1"));
  EXPECT_EQ(pace.BatchBytes("q:1"), LinkPace::kMinBytes);
  // A small exchange that failed says nothing about the link (a dead peer fails them all).
  pace.Failed("r:1", 1000, pace.BatchBytes("r:1"));
  EXPECT_EQ(pace.BatchBytes("r:1"), 4 * kMiB);
}

TEST(LinkPaceTest, ExchangesLostTogetherCutThePaceOnce) {
  LinkPace pace(4 * kMiB, 1000);
  // A hand-over batch and a push, both sent at 4 MiB, fail in the same reset.
  pace.Failed("p:1", 4 * kMiB, 4 * kMiB);
  pace.Failed("p:1", 3 * kMiB, 4 * kMiB);
  EXPECT_EQ(pace.BatchBytes("p:1"), 512 * 1024u);
}

TEST(LinkPaceTest, AQuickAnswerLetsTheNextBeAtMostTwiceThisExchange) {
  LinkPace pace(4 * kMiB, 1000);
  pace.Failed("p:1", 4 * kMiB, 4 * kMiB);
  ASSERT_EQ(pace.BatchBytes("p:1"), 512 * 1024u);
  // Half the pace, answered at once: the next may be twice that, the pace itself, no more.
  pace.Answered("p:1", 256 * 1024, 1, 512 * 1024);
  EXPECT_EQ(pace.BatchBytes("p:1"), 512 * 1024u);
}

TEST(LinkPaceTest, AnExchangeAnsweredInTimeSetsTheNextToWhatTheLinkCarriesNotTwice) {
  LinkPace pace(4 * kMiB, 1000);
  pace.Answered("p:1", 4 * kMiB, 4000, pace.BatchBytes("p:1"));  // 1 MiB/s
  ASSERT_EQ(pace.BatchBytes("p:1"), 256 * 1024u);
  // 256 KiB in 200 ms: 320 KiB in 250, not the 512 KiB that would take 500 ms on the wire.
  pace.Answered("p:1", 256 * 1024, 200, pace.BatchBytes("p:1"));
  EXPECT_EQ(pace.BatchBytes("p:1"), 320 * 1024u);
}

TEST(LinkPaceTest, AConfiguredSizeBelowTheFloorIsKeptAsItIs) {
  LinkPace pace(300, 1000);  // tests hand over pages of a few records
  EXPECT_EQ(pace.BatchBytes("p:1"), 300u);
  pace.Failed("p:1", 300, pace.BatchBytes("p:1"));
  EXPECT_EQ(pace.BatchBytes("p:1"), 300u);
  pace.Answered("p:1", 300, 10'000, pace.BatchBytes("p:1"));
  EXPECT_EQ(pace.BatchBytes("p:1"), 300u);
}

TEST(LinkPaceTest, ASmallQuickExchangeSaysNothingAgainstThePace) {
  LinkPace pace(4 * kMiB, 1000);
  pace.Answered("p:1", 4 * kMiB, 4000, pace.BatchBytes("p:1"));  // 1 MiB/s: 256 KiB in 250 ms
  const size_t paced = pace.BatchBytes("p:1");
  EXPECT_EQ(paced, 256 * 1024u);
  pace.Answered("p:1", 300, 1, pace.BatchBytes("p:1"));  // a near-empty push, answered at once
  EXPECT_EQ(pace.BatchBytes("p:1"), paced);
  // Nor one that waited long (behind other messages, or a long round trip): its time is not
  // the link's.
  pace.Answered("p:1", 16 * 1024, 900, pace.BatchBytes("p:1"));
  pace.Answered("p:1", 0, 900, pace.BatchBytes("p:1"));
  EXPECT_EQ(pace.BatchBytes("p:1"), paced);
  // Half the current size is enough to time it: 128 KiB in 500 ms carry 64 KiB in 250.
  pace.Answered("p:1", 128 * 1024, 500, pace.BatchBytes("p:1"));
  EXPECT_EQ(pace.BatchBytes("p:1"), 64 * 1024u);
}

TEST(LinkPaceTest, TheTableOfPacedPeersIsBounded) {
  LinkPace pace(4 * kMiB, 1000);
  const size_t peers = LinkPace::kMaxPeers + 100;
  for (size_t i = 0; i < peers; ++i) pace.Failed("peer:" + std::to_string(i), 4 * kMiB, 4 * kMiB);
  size_t paced = 0;
  for (size_t i = 0; i < peers; ++i)
    paced += pace.BatchBytes("peer:" + std::to_string(i)) < 4 * kMiB;
  // Past the bound one peer is forgotten (back at the full size) for each new one.
  EXPECT_EQ(paced, LinkPace::kMaxPeers);
  EXPECT_LT(pace.BatchBytes("peer:" + std::to_string(peers - 1)), 4 * kMiB) << "the newest";
}

}  // namespace
}  // namespace chord
