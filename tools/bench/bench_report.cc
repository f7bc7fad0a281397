#include "tools/bench/bench_report.h"

#include <cstdio>
#include <string>

namespace chord::bench {
namespace {

// `value` with `decimals` digits after the point.
std::string Fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

std::string JoinNodes(const BenchOptions& options) {
  std::string out;
  for (const std::string& node : options.nodes) {
    if (!out.empty()) out += ",";
    out += node;
  }
  return out;
}

const char* ConsistencyName(wire::Consistency level) {
  switch (level) {
    case wire::CONSISTENCY_ONE:
      return "one";
    case wire::CONSISTENCY_QUORUM:
      return "quorum";
    case wire::CONSISTENCY_ALL:
      return "all";
    default:
      return "default";
  }
}

}  // namespace

nlohmann::ordered_json ReportToJson(const BenchReport& r) {
  const BenchOptions& o = r.options;
  nlohmann::ordered_json j;
  j["op"] = OpName(o.op);
  j["clients"] = o.clients;
  j["seconds"] = o.seconds;
  j["keys"] = o.keys;
  j["value_size"] = o.value_bytes;
  j["direct"] = o.direct;
  j["redis"] = o.redis;
  j["consistency"] = ConsistencyName(o.consistency);
  j["ops"] = r.ops;
  j["errors"] = r.errors;
  j["ops_per_sec"] = r.ops_per_sec;
  j["p50_us"] = r.p50_us;
  j["p99_us"] = r.p99_us;
  j["p999_us"] = r.p999_us;
  j["mean_hops"] = r.mean_hops;
  j["mean_us"] = r.mean_us;
  j["min_us"] = r.min_us;
  j["max_us"] = r.max_us;
  j["gets"] = r.gets;
  j["puts"] = r.puts;
  j["not_found"] = r.not_found;
  j["redirects"] = r.redirects;
  j["ring_refreshes"] = r.ring_refreshes;
  j["ring_nodes"] = r.ring_nodes;
  j["elapsed_s"] = r.elapsed_s;
  j["warmup_s"] = o.warmup_seconds;
  j["get_ratio"] = o.op == BenchOp::kGet ? 1.0 : o.op == BenchOp::kPut ? 0.0 : o.get_ratio;
  j["timeout_ms"] = o.timeout_ms;
  j["seed"] = o.seed;
  j["nodes"] = o.nodes;
  j["preload_keys"] = r.preload_keys;
  j["preload_s"] = r.preload_s;
  j["last_error"] = r.last_error;
  j["pipeline"] = o.pipeline;
  j["hot_keys"] = MeasuredKeys(o);
  auto opt = [](const auto& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
  };
  j["server_source"] = r.server_source;
  j["server_processes"] = r.server_processes;
  j["server_cpu_s"] = opt(r.server_cpu_s);
  j["server_cpu_us_per_op"] = opt(r.server_cpu_us_per_op);
  j["server_user_us_per_op"] = opt(r.server_user_us_per_op);
  j["server_sys_us_per_op"] = opt(r.server_sys_us_per_op);
  j["server_syscalls_per_op"] = opt(r.server_syscalls_per_op);
  j["server_sleeps_per_op"] = opt(r.server_sleeps_per_op);
  j["server_rss_bytes"] = opt(r.server_rss_bytes);
  j["preload_rss_bytes"] = opt(r.preload_rss_bytes);
  j["bytes_per_key"] = opt(r.bytes_per_key);
  j["server_cost_error"] = r.server_cost_error;
  return j;
}

std::string ReportToText(const BenchReport& r) {
  const BenchOptions& o = r.options;
  std::string out = "chord-bench: " + std::string(OpName(o.op));
  if (o.op == BenchOp::kMix) out += " (" + Fixed(o.get_ratio * 100, 0) + "% gets)";
  out += ", " + std::to_string(o.clients) + " clients, " + Fixed(r.elapsed_s, 1) + " s";
  if (o.pipeline > 1) out += ", pipeline " + std::to_string(o.pipeline);
  if (MeasuredKeys(o) < o.keys) out += ", " + std::to_string(MeasuredKeys(o)) + " hot keys";
  if (o.warmup_seconds > 0) out += " after " + Fixed(o.warmup_seconds, 1) + " s of warm-up";
  if (o.consistency != wire::CONSISTENCY_DEFAULT) {
    out += ", consistency " + std::string(ConsistencyName(o.consistency));
  }
  out +=
      ", " + std::to_string(o.keys) + " keys, " + std::to_string(o.value_bytes) + "-byte values, ";
  if (o.redis) {
    out += "GET/SET to redis-servers " + JoinNodes(o) + ", each key to the one its SHA-1 picks\n";
  } else if (o.direct) {
    out += "direct to the owner (" + std::to_string(r.ring_nodes) + " ring positions)\n";
  } else {
    out += "routed via " + JoinNodes(o) + "\n";
  }
  if (r.preload_keys > 0) {
    out += "  preload     " + std::to_string(r.preload_keys) + " keys in " + Fixed(r.preload_s, 2) +
           " s (not timed)\n";
  }
  out += "  ops         " + std::to_string(r.ops) + "  (" + Fixed(r.ops_per_sec, 0) + " ops/s)\n";
  out += "  errors      " + std::to_string(r.errors);
  if (r.not_found > 0) out += " (" + std::to_string(r.not_found) + " not found)";
  out += "\n";
  out += "  latency us  p50 " + Fixed(r.p50_us, 1) + "  p99 " + Fixed(r.p99_us, 1) + "  p999 " +
         Fixed(r.p999_us, 1) + "  mean " + Fixed(r.mean_us, 1) + "  max " + Fixed(r.max_us, 1) +
         "\n";
  out += "  mean hops   " + Fixed(r.mean_hops, 2) + "\n";
  if (r.server_cpu_us_per_op) {
    out += "  server CPU  " + Fixed(*r.server_cpu_us_per_op, 1) + " us/op (" +
           Fixed(r.server_cpu_s.value_or(0), 2) + " s over " + std::to_string(r.server_processes) +
           (r.server_processes == 1 ? " process" : " processes") + ", from " + r.server_source +
           ")\n";
  }
  if (r.server_user_us_per_op && r.server_sys_us_per_op) {
    out += "  split       user " + Fixed(*r.server_user_us_per_op, 2) + "  system " +
           Fixed(*r.server_sys_us_per_op, 2) + " us/op\n";
  }
  if (r.server_syscalls_per_op || r.server_sleeps_per_op) {
    const auto shown = [](const std::optional<double>& v) {
      return v ? Fixed(*v, 3) : std::string("unknown");
    };
    out += "  per op      " + shown(r.server_syscalls_per_op) + " read/write system calls, " +
           shown(r.server_sleeps_per_op) + " sleeps (voluntary context switches)\n";
  }
  if (r.bytes_per_key) {
    out += "  bytes/key   " + Fixed(*r.bytes_per_key, 1) + " (resident memory grew " +
           Fixed(r.preload_rss_bytes.value_or(0) / (1 << 20), 1) + " MiB over the preload)\n";
  }
  if (!r.server_cost_error.empty())
    out += "  server cost not measured: " + r.server_cost_error + "\n";
  if (o.direct) {
    out += "  redirects   " + std::to_string(r.redirects) + " (ring fetched " +
           std::to_string(r.ring_refreshes) + " times)\n";
  }
  if (!r.last_error.empty()) out += "  last error  " + r.last_error + "\n";
  return out;
}

}  // namespace chord::bench
