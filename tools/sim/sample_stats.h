// SampleStats: collects numeric samples and reports mean and percentiles (nearest rank), for
// the simulator's experiment reports. Not thread-safe.
#ifndef CHORD_TOOLS_SIM_SAMPLE_STATS_H_
#define CHORD_TOOLS_SIM_SAMPLE_STATS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace chord::sim {

class SampleStats {
 public:
  void Add(double x) {
    samples_.push_back(x);
    sorted_ = false;
  }
  size_t count() const { return samples_.size(); }
  double Mean() const {
    if (samples_.empty()) return 0;
    double sum = 0;
    for (double x : samples_) sum += x;
    return sum / static_cast<double>(samples_.size());
  }
  // The smallest sample with at least p percent of the samples at or below it (p in 0..100).
  double Percentile(double p) {
    if (samples_.empty()) return 0;
    if (!sorted_) {
      std::sort(samples_.begin(), samples_.end());
      sorted_ = true;
    }
    const double rank = std::ceil(p / 100.0 * static_cast<double>(samples_.size()));
    const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
    return samples_[std::min(index, samples_.size() - 1)];
  }
  double Max() { return Percentile(100); }

 private:
  std::vector<double> samples_;
  bool sorted_ = true;
};

}  // namespace chord::sim

#endif  // CHORD_TOOLS_SIM_SAMPLE_STATS_H_
