// NodeMetrics: the distributions a ChordNode records about itself for monitoring, next to
// the plain totals of NodeCounters: lookup hop counts, and per RPC type (the Envelope body
// name of the request, e.g. "get_state", "find_next_hop") the number of requests sent, how
// many failed (timed out or could not be sent) and the latency of the answered ones.
// Histograms have fixed bucket bounds so that every node reports the same buckets. Plain
// data: no I/O, no clock (the core passes in durations it measured through Environment).
// Not thread-safe: updated and read on the node's loop thread (or the simulator's) only.
#ifndef CHORD_NODE_CORE_NODE_METRICS_H_
#define CHORD_NODE_CORE_NODE_METRICS_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace chord {

// Upper bounds (inclusive) of the lookup hop histogram; +Inf is implicit.
inline constexpr std::array<double, 12> kLookupHopBuckets = {0, 1, 2,  3,  4,  5,
                                                             6, 8, 10, 12, 16, 20};
// Upper bounds (inclusive), in seconds, of the RPC latency histograms; +Inf is implicit.
inline constexpr std::array<double, 13> kRpcLatencyBucketsSeconds = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

// A histogram over fixed upper bounds (ascending; the bound array must outlive it, which the
// k...Buckets constants above do). Bucket i counts observations v with
// bounds[i-1] < v <= bounds[i]; the last bucket (index bounds.size()) counts those above
// every bound.
class Histogram {
 public:
  explicit Histogram(std::span<const double> bounds)
      : bounds_(bounds), buckets_(bounds.size() + 1, 0) {}

  void Observe(double value) {
    const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
    ++buckets_[static_cast<size_t>(it - bounds_.begin())];
    ++count_;
    sum_ += value;
  }

  std::span<const double> bounds() const { return bounds_; }
  // Per-bucket (not cumulative) counts; size bounds().size() + 1, the last one for +Inf.
  const std::vector<uint64_t>& buckets() const { return buckets_; }
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::span<const double> bounds_;
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  double sum_ = 0;
};

// What happened to the requests of one type this node sent.
struct RpcTypeMetrics {
  uint64_t requests = 0;
  uint64_t timeouts = 0;  // no answer in time, or the request could not be sent
  Histogram latency_seconds{kRpcLatencyBucketsSeconds};  // answered requests only
};

struct NodeMetrics {
  // Hops (lookup RPCs answered) of every lookup that found an owner; 0 when this node
  // could answer from its own successor list.
  Histogram lookup_hops{kLookupHopBuckets};
  // By request type, in name order.
  std::map<std::string, RpcTypeMetrics, std::less<>> rpc;

  // The entry for `type`, created on first use. References stay valid (std::map).
  RpcTypeMetrics& Rpc(std::string_view type) {
    auto it = rpc.find(type);
    if (it == rpc.end()) it = rpc.emplace(std::string(type), RpcTypeMetrics{}).first;
    return it->second;
  }
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_NODE_METRICS_H_
