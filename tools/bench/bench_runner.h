// BenchRunner: one chord-bench run. With --direct it first fetches the ring; for get and mix
// it preloads every key (not timed); then `clients` threads send requests for keys chosen
// uniformly at random (seeded per thread) for the warm-up and the measured window, each
// recording its successes' latencies in its own LatencyHistogram, merged at the end into a
// BenchReport. Every request is bounded by the client timeout, so a run ends at most one
// timeout after its window. Run() blocks; call it from one thread.
#ifndef CHORD_TOOLS_BENCH_BENCH_RUNNER_H_
#define CHORD_TOOLS_BENCH_BENCH_RUNNER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "protocol/base/status.h"
#include "tools/bench/bench_client.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/latency_histogram.h"
#include "tools/bench/owner_router.h"
#include "tools/bench/server_cost.h"

namespace chord::bench {

// Attempts per key of the preload, and consecutive keys a preload thread may fail to write
// before the run is abandoned (the ring is unreachable or refusing writes).
inline constexpr int kPreloadAttempts = 3;
inline constexpr int kMaxPreloadFailedKeys = 3;
// The preload gives up after this long (a key space too large for the ring's speed).
inline constexpr std::chrono::seconds kMaxPreloadTime{600};

class BenchRunner {
 public:
  explicit BenchRunner(BenchOptions options);

  // The report of the run; Unavailable when the ring cannot be fetched (--direct) or the
  // keys cannot be preloaded. A run in which no request succeeded is still a report (ops 0).
  Result<BenchReport> Run();

  // "key-N".
  static std::string KeyName(uint64_t n) { return "key-" + std::to_string(n); }

 private:
  using Clock = std::chrono::steady_clock;

  // What one client thread saw in the measured window.
  struct Tally {
    LatencyHistogram latency;
    uint64_t ops = 0, gets = 0, puts = 0, errors = 0, not_found = 0, redirects = 0;
    uint64_t hops = 0;
    Clock::time_point last_done;  // completion of its last request in the window
    std::string last_error;
  };

  // The connection set of client thread `thread`.
  std::unique_ptr<BenchClient> MakeClient(int thread) const;
  std::unique_ptr<BenchClient> MakeClientFor(int thread) const;
  // Writes key-0 .. key-(keys-1) with all client threads.
  Status Preload(BenchReport* report) const;
  // One client thread's loop: requests until `end`, recorded from `measure_start` on.
  void Work(int thread, Clock::time_point measure_start, Clock::time_point end, Tally* tally) const;
  // Work with options_.pipeline requests in flight, matched to their answers by request id.
  void WorkPipelined(int thread, Clock::time_point measure_start, Clock::time_point end,
                     Tally* tally) const;

  BenchOptions options_;
  std::optional<OwnerRouter> router_;  // --direct: the ring as fetched at the start
};

}  // namespace chord::bench

#endif  // CHORD_TOOLS_BENCH_BENCH_RUNNER_H_
