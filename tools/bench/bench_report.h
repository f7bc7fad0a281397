// BenchReport: the figures of one chord-bench run (throughput, latency percentiles, hops,
// errors) and their two renderings: one JSON object (DESIGN.md section 5) and a few readable
// lines. Plain value type; any thread.
#ifndef CHORD_TOOLS_BENCH_BENCH_REPORT_H_
#define CHORD_TOOLS_BENCH_BENCH_REPORT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tools/bench/bench_options.h"

namespace chord::bench {

struct BenchReport {
  BenchOptions options;
  uint64_t ops = 0;        // successful requests in the measured window
  uint64_t gets = 0;       // ... of which gets
  uint64_t puts = 0;       // ... of which puts
  uint64_t errors = 0;     // failed requests in the measured window (not_found included)
  uint64_t not_found = 0;  // gets that found no value
  uint64_t redirects = 0;  // NOT_OWNER answers followed (direct)
  uint64_t ring_refreshes = 0;
  size_t ring_nodes = 0;  // ring positions known (direct)
  double elapsed_s = 0;   // from the window's start until the last client stopped
  double ops_per_sec = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0;
  double mean_us = 0, min_us = 0, max_us = 0;
  double mean_hops = 0;
  uint64_t preload_keys = 0;  // keys written before the run (get and mix)
  double preload_s = 0;
  std::string last_error;  // one of the errors, empty without any
  // What the servers spent (ServerCost); the optionals are empty when not measured.
  std::string server_source;                   // "status", "pid", or "" when not measured
  size_t server_processes = 0;                 // processes whose figures were summed
  std::optional<double> server_cpu_s;          // CPU seconds spent in the measured window
  std::optional<double> server_cpu_us_per_op;  // ... per successful operation
  // With --server-pid (from /proc), per successful operation: the CPU split into user and
  // system time, read/write system calls, and sleeps (voluntary context switches).
  std::optional<double> server_user_us_per_op;
  std::optional<double> server_sys_us_per_op;
  std::optional<double> server_syscalls_per_op;
  std::optional<double> server_sleeps_per_op;
  std::optional<double> preload_rss_bytes;   // resident-memory growth over the preload
  std::optional<double> bytes_per_key;       // ... per key preloaded
  std::optional<uint64_t> server_rss_bytes;  // resident memory at the end of the run
  std::string server_cost_error;             // why the figures are missing, when they are
};

nlohmann::ordered_json ReportToJson(const BenchReport& report);
// A few lines for a terminal, ending in a newline.
std::string ReportToText(const BenchReport& report);

}  // namespace chord::bench

#endif  // CHORD_TOOLS_BENCH_BENCH_REPORT_H_
