#include "tools/placement/share_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace chord::placement {
namespace {

double Percentile(const std::vector<double>& sorted, double q) {
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (rank - static_cast<double>(below));
}

}  // namespace

ShareStats SummarizeShares(std::span<const double> shares) {
  ShareStats s;
  if (shares.empty()) return s;
  const double n = static_cast<double>(shares.size());
  const double mean = std::accumulate(shares.begin(), shares.end(), 0.0) / n;
  if (mean <= 0) return s;
  std::vector<double> ratios;
  ratios.reserve(shares.size());
  for (const double share : shares) ratios.push_back(share / mean);
  std::sort(ratios.begin(), ratios.end());
  double squares = 0;
  for (const double r : ratios) squares += (r - 1) * (r - 1);
  s.max_over_mean = ratios.back();
  s.min_over_mean = ratios.front();
  s.p99_over_mean = Percentile(ratios, 0.99);
  s.ci99_low = Percentile(ratios, 0.005);
  s.ci99_high = Percentile(ratios, 0.995);
  s.stddev_over_mean = std::sqrt(squares / n);
  return s;
}

}  // namespace chord::placement
