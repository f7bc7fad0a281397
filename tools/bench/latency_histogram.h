// LatencyHistogram: an HdrHistogram-like record of latencies in nanoseconds, with log-linear
// buckets: values below 2^kSubBucketBits are counted exactly, larger ones in buckets whose
// width is at most 1/2^kSubBucketBits of their value (under 0.8 % relative error), over the
// whole uint64_t range, in a fixed ~58 KiB of counters. chord-bench keeps one per client thread
// and merges them at the end. Header-only so that the unit tests can include it. Not
// thread-safe.
#ifndef CHORD_TOOLS_BENCH_LATENCY_HISTOGRAM_H_
#define CHORD_TOOLS_BENCH_LATENCY_HISTOGRAM_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace chord::bench {

class LatencyHistogram {
 public:
  // Precision: each power of two above 2^kSubBucketBits is cut into 2^kSubBucketBits buckets.
  static constexpr int kSubBucketBits = 7;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;
  static constexpr size_t kBucketCount = (65 - kSubBucketBits) * kSubBuckets;

  LatencyHistogram() : counts_(kBucketCount, 0) {}

  // The bucket that counts `value`.
  static size_t BucketOf(uint64_t value) {
    if (value < kSubBuckets) return static_cast<size_t>(value);
    const int msb = 63 - std::countl_zero(value);
    const int shift = msb - kSubBucketBits;
    const uint64_t mantissa = value >> shift;  // in [kSubBuckets, 2 * kSubBuckets)
    return static_cast<size_t>((static_cast<uint64_t>(shift) + 1) * kSubBuckets +
                               (mantissa - kSubBuckets));
  }
  // The smallest and the largest value that bucket `index` counts.
  static uint64_t BucketLow(size_t index) {
    if (index < kSubBuckets) return index;
    const uint64_t shift = index / kSubBuckets - 1;
    const uint64_t mantissa = kSubBuckets + index % kSubBuckets;
    return mantissa << shift;
  }
  static uint64_t BucketHigh(size_t index) {
    if (index < kSubBuckets) return index;
    const uint64_t shift = index / kSubBuckets - 1;
    const uint64_t mantissa = kSubBuckets + index % kSubBuckets;
    // The last bucket ends at 2^64 - 1; (mantissa + 1) << shift would overflow to 0.
    if (index + 1 == kBucketCount) return std::numeric_limits<uint64_t>::max();
    return ((mantissa + 1) << shift) - 1;
  }

  void Record(uint64_t value_ns) {
    ++counts_[BucketOf(value_ns)];
    ++count_;
    sum_ += static_cast<double>(value_ns);
    min_ = std::min(min_, value_ns);
    max_ = std::max(max_, value_ns);
  }

  // Adds every value recorded in `other`.
  void Merge(const LatencyHistogram& other) {
    for (size_t i = 0; i < kBucketCount; ++i) counts_[i] += other.counts_[i];
    count_ += other.count_;
    sum_ += other.sum_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }

  uint64_t count() const { return count_; }
  // 0 when empty.
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  double Mean() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }

  // The value at percentile `p` (0..100): the highest value of the bucket that holds the
  // sample of rank ceil(p/100 * count) (at least 1), clamped to the recorded minimum and
  // maximum. Never decreases as `p` grows; exact for values below kSubBuckets; 0 when empty.
  uint64_t ValueAtPercentile(double p) const {
    if (count_ == 0) return 0;
    p = std::clamp(p, 0.0, 100.0);
    // The small epsilon keeps e.g. 99.9 % of 1000 at rank 999 despite rounding.
    double wanted = std::ceil(p / 100.0 * static_cast<double>(count_) - 1e-9);
    wanted = std::clamp(wanted, 1.0, static_cast<double>(count_));
    const auto rank = static_cast<uint64_t>(wanted);
    uint64_t seen = 0;
    for (size_t i = 0; i < kBucketCount; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::clamp(BucketHigh(i), min(), max_);
    }
    return max_;
  }

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  double sum_ = 0;
  uint64_t min_ = std::numeric_limits<uint64_t>::max();
  uint64_t max_ = 0;
};

}  // namespace chord::bench

#endif  // CHORD_TOOLS_BENCH_LATENCY_HISTOGRAM_H_
