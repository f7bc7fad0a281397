// Renders the metrics of a process's vnodes in the Prometheus text exposition format,
// version 0.0.4: one "# HELP" and one "# TYPE" line per metric family, then one line per
// series, `name{labels} value`. Every series carries node="<vnode ring address>" (HOST:PORT,
// or HOST:PORT#i with virtual nodes); RPC series add type="<request body name>", histogram
// buckets le="<upper bound>" (cumulative, ending with le="+Inf", equal to _count). Counters
// end in _total. Pure functions, no I/O; any thread.
#ifndef CHORD_NODE_RUNTIME_PROMETHEUS_TEXT_H_
#define CHORD_NODE_RUNTIME_PROMETHEUS_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "node/core/node_counters.h"
#include "node/core/node_metrics.h"
#include "node/core/process_sample.h"

namespace chord {

// The Content-Type of a response in this format.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// One vnode's figures at the time of a scrape.
struct VnodeMetricsSample {
  std::string node;  // the vnode's ring address: the value of the node label
  bool joined = false;
  uint64_t keys = 0;          // live records it owns as primary
  uint64_t replica_keys = 0;  // live records it holds as a replica
  uint64_t tombstones = 0;    // deleted records in its part of the store
  bool store_readable = true;  // false: the counts above could not be read (they are 0)
  NodeCounters counters;
  NodeMetrics metrics;
};

// A label value with backslash, double quote and line feed escaped (\\, \", \n).
std::string EscapeLabelValue(std::string_view value);

// A sample value or bound: the shortest decimal that reads back as `value` ("0", "0.0005",
// "2.5", "1e+06"), or +Inf, -Inf, NaN.
std::string FormatPrometheusValue(double value);

// The exposition text for `vnodes` (families in a fixed order, vnodes in the given order
// within each family, RPC types in name order).
std::string RenderPrometheusText(const std::vector<VnodeMetricsSample>& vnodes);

// Prometheus's standard process metrics, once per process and without a node label:
// process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_start_time_seconds, process_open_fds and process_max_fds (the last only when the
// limit is finite). "" when the sample is not valid.
std::string RenderProcessMetricsText(const ProcessSample& process);

// Once per process: chord_store_free_bytes, the memory the store keeps for reuse
// (Store::FreeHeldBytes; 0 with RocksDB).
std::string RenderStoreMetricsText(uint64_t free_held_bytes);

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_PROMETHEUS_TEXT_H_
