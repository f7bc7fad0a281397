// ShareStats: how evenly a placement spreads keys, from each node's share (a fraction of the
// key space or a key count): extremes, percentiles and the 99% interval of share / mean, the
// figures Lamping & Veach and the Chord paper report. Pure; any thread.
#ifndef CHORD_TOOLS_PLACEMENT_SHARE_STATS_H_
#define CHORD_TOOLS_PLACEMENT_SHARE_STATS_H_

#include <span>

namespace chord::placement {

struct ShareStats {
  double max_over_mean = 0;
  double min_over_mean = 0;
  double p99_over_mean = 0;     // 99th percentile
  double ci99_low = 0;          // 0.5th percentile: with ci99_high, the central 99% interval
  double ci99_high = 0;         // 99.5th percentile
  double stddev_over_mean = 0;  // the spread (coefficient of variation)
};

// Percentiles by linear interpolation between closest ranks. `shares` must be non-empty.
[[nodiscard]] ShareStats SummarizeShares(std::span<const double> shares);

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_SHARE_STATS_H_
