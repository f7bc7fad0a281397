// Tests for chord::bench::LatencyHistogram (tools/bench/latency_histogram.h): bucket bounds
// over the whole uint64_t range, exact small values, percentiles against sorted samples within
// the bucket precision, monotonic percentiles, merging, and the empty histogram.
#include "tools/bench/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace chord::bench {
namespace {

// Nearest-rank percentile of sorted samples: the smallest with p % of them at or below it.
uint64_t ReferencePercentile(const std::vector<uint64_t>& sorted, double p) {
  double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()) - 1e-9);
  rank = std::clamp(rank, 1.0, static_cast<double>(sorted.size()));
  return sorted[static_cast<size_t>(rank) - 1];
}

TEST(LatencyHistogramTest, BucketsTileTheWholeRangeWithBoundedWidth) {
  using H = LatencyHistogram;
  EXPECT_EQ(H::BucketLow(0), 0u);
  for (size_t i = 0; i + 1 < H::kBucketCount; ++i) {
    ASSERT_LE(H::BucketLow(i), H::BucketHigh(i)) << i;
    ASSERT_EQ(H::BucketHigh(i) + 1, H::BucketLow(i + 1)) << i;
    ASSERT_EQ(H::BucketOf(H::BucketLow(i)), i);
    ASSERT_EQ(H::BucketOf(H::BucketHigh(i)), i);
    // Width at most 1/kSubBuckets of the bucket's lowest value (exact below kSubBuckets).
    const uint64_t width = H::BucketHigh(i) - H::BucketLow(i) + 1;
    if (i < H::kSubBuckets) {
      ASSERT_EQ(width, 1u) << i;
    } else {
      ASSERT_LE(width * H::kSubBuckets, H::BucketLow(i)) << i;
    }
  }
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(H::BucketOf(max), H::kBucketCount - 1);
  EXPECT_EQ(H::BucketHigh(H::kBucketCount - 1), max);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.ValueAtPercentile(50), 50u);
  EXPECT_EQ(h.ValueAtPercentile(99), 99u);
  EXPECT_EQ(h.ValueAtPercentile(99.9), 100u);
  EXPECT_EQ(h.ValueAtPercentile(100), 100u);
  EXPECT_EQ(h.ValueAtPercentile(0), 1u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 100u);
  EXPECT_DOUBLE_EQ(h.Mean(), 50.5);
}

TEST(LatencyHistogramTest, PercentilesMatchSortedSamplesWithinPrecision) {
  std::mt19937_64 rng(7);
  // Latency-like: log-normal around 200 us, in nanoseconds, with a few slow outliers.
  std::lognormal_distribution<double> dist(std::log(200'000.0), 0.6);
  std::vector<uint64_t> samples;
  LatencyHistogram h;
  for (int i = 0; i < 100'000; ++i) {
    uint64_t v = static_cast<uint64_t>(dist(rng));
    if (i % 5000 == 0) v *= 100;
    samples.push_back(v);
    h.Record(v);
  }
  std::sort(samples.begin(), samples.end());
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    const double want = static_cast<double>(ReferencePercentile(samples, p));
    const double got = static_cast<double>(h.ValueAtPercentile(p));
    // The reported value is the top of the sample's bucket: never below it, at most one
    // bucket width (1/128 of the value) above.
    EXPECT_GE(got, want) << "p" << p;
    EXPECT_LE(got, want * (1.0 + 1.0 / LatencyHistogram::kSubBuckets)) << "p" << p;
  }
  EXPECT_EQ(h.ValueAtPercentile(100), samples.back());
  EXPECT_EQ(h.min(), samples.front());
}

TEST(LatencyHistogramTest, PercentilesNeverDecrease) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> dist(1, 50'000'000);
  LatencyHistogram h;
  for (int i = 0; i < 10'000; ++i) h.Record(dist(rng));
  uint64_t last = 0;
  for (int tenths = 0; tenths <= 1000; ++tenths) {
    const uint64_t v = h.ValueAtPercentile(tenths / 10.0);
    EXPECT_GE(v, last) << "p" << tenths / 10.0;
    last = v;
  }
  EXPECT_LE(h.ValueAtPercentile(50), h.ValueAtPercentile(99));
  EXPECT_LE(h.ValueAtPercentile(99), h.ValueAtPercentile(99.9));
}

TEST(LatencyHistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<uint64_t> dist(0, 10'000'000);
  LatencyHistogram all;
  std::vector<LatencyHistogram> parts(4);
  for (int i = 0; i < 20'000; ++i) {
    const uint64_t v = dist(rng);
    all.Record(v);
    parts[static_cast<size_t>(i) % parts.size()].Record(v);
  }
  LatencyHistogram merged;
  for (const LatencyHistogram& part : parts) merged.Merge(part);
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), all.max());
  EXPECT_DOUBLE_EQ(merged.Mean(), all.Mean());
  for (double p : {0.0, 25.0, 50.0, 99.0, 99.9, 100.0}) {
    EXPECT_EQ(merged.ValueAtPercentile(p), all.ValueAtPercentile(p)) << "p" << p;
  }
}

TEST(LatencyHistogramTest, EmptyAndSingleSample) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.ValueAtPercentile(50), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.Mean(), 0.0);
  LatencyHistogram empty;
  h.Merge(empty);
  EXPECT_EQ(h.count(), 0u);

  h.Record(123'456'789);
  for (double p : {0.0, 50.0, 99.9, 100.0}) EXPECT_EQ(h.ValueAtPercentile(p), 123'456'789u);
}

}  // namespace
}  // namespace chord::bench
