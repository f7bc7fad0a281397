// chord-node: runs one member of a Chord ring on this machine. Parses the command line (the
// contract in shared/DESIGN.md), sets up logging to stderr and hands over to NodeRuntime,
// which runs until SIGTERM/SIGINT has made the node leave the ring.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "node/core/node_config.h"
#include "node/core/node_ref.h"
#include "node/runtime/net_address.h"
#include "node/runtime/node_runtime.h"
#include "protocol/frame.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace chord {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr int64_t kMinFrameBytes = 64 << 10;
constexpr int64_t kMaxFrameBytes = int64_t{1} << 30;

struct Flags {
  std::string listen;
  std::string join;
  bool memory = false;
  std::string data_dir;
  std::string metrics_listen;
  int64_t vnodes = 1;
  int64_t replicas = 3;
  int64_t successors = 8;
  int64_t stabilize_ms = 500;
  int64_t rpc_timeout_ms = 1000;
  int64_t max_frame_bytes = kDefaultMaxFrameBytes;
  std::string log_level = "info";
};

int UsageError(const std::string& sentence) {
  std::fprintf(stderr, "%s\n", sentence.c_str());
  return kExitUsage;
}

std::optional<spdlog::level::level_enum> ParseLogLevel(const std::string& name) {
  if (name == "trace") return spdlog::level::trace;
  if (name == "debug") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warn") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  return std::nullopt;
}

// Checks what CLI11 cannot; returns the usage error sentence, or "" when all is well.
// "A,B,C" -> {"A", "B", "C"}; empty entries are dropped.
std::vector<std::string> SplitJoinList(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string Validate(const Flags& f, const CLI::App& app) {
  if (app.count("--data-dir") > 0) {
    return "--data-dir is not available yet: the disk store arrives with replication; run with "
           "--memory";
  }
  if (app.count("--metrics-listen") > 0) {
    return "--metrics-listen is not available yet: metrics arrive in a later milestone; leave "
           "it out";
  }
  if (f.vnodes != 1) {
    return "--vnodes other than 1 is not available yet: virtual nodes arrive in a later "
           "milestone; leave it at 1";
  }
  if (f.replicas < 1) return "--replicas must be at least 1; the default is 3";
  if (f.successors < 1 || f.successors > 1024) {
    return "--successors must be between 1 and 1024; the default is 8";
  }
  if (f.stabilize_ms < 1) return "--stabilize-ms must be at least 1; the default is 500";
  if (f.rpc_timeout_ms < 1) return "--rpc-timeout-ms must be at least 1; the default is 1000";
  if (f.max_frame_bytes < kMinFrameBytes || f.max_frame_bytes > kMaxFrameBytes) {
    return "--max-frame-bytes must be between " + std::to_string(kMinFrameBytes) + " and " +
           std::to_string(kMaxFrameBytes) + "; the default is " +
           std::to_string(kDefaultMaxFrameBytes);
  }
  if (!ParseLogLevel(f.log_level)) {
    return "--log-level must be one of trace, debug, info, warn, error; the default is info";
  }
  if (auto addr = ParseIpv4Address(f.listen); !addr.ok()) {
    return "--listen " + addr.status().message();
  }
  for (const std::string& join : SplitJoinList(f.join)) {
    if (auto addr = ParseIpv4Address(join); !addr.ok()) {
      return "--join " + addr.status().message();
    }
    if (join == f.listen) {
      return "--join names this node's own address; leave --join out to start a new ring";
    }
  }
  return "";
}

void SetUpLogging(spdlog::level::level_enum level) {
  auto logger = spdlog::stderr_color_mt("chord-node");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(level);
  spdlog::flush_on(spdlog::level::warn);
}

int Main(int argc, char** argv) {
  Flags f;
  CLI::App app{"chord-node: one member of a Chord distributed hash table ring."};
  app.add_option("--listen", f.listen, "HOST:PORT to listen on; also the address peers dial")
      ->required();
  app.add_option(
      "--join", f.join,
      "HOST:PORT of a ring member to join (several, comma-separated, are tried in turn); "
      "omit to start a ring");
  app.add_flag("--memory", f.memory, "Keep records in memory (the default for now)");
  app.add_option("--data-dir", f.data_dir, "Directory of the disk store (not available yet)");
  app.add_option("--vnodes", f.vnodes, "Virtual nodes per process (only 1 for now)");
  app.add_option("--replicas", f.replicas, "Copies of each key (accepted, not used yet)");
  app.add_option("--successors", f.successors, "Length of the successor list");
  app.add_option("--stabilize-ms", f.stabilize_ms, "Period of ring maintenance in ms");
  app.add_option("--rpc-timeout-ms", f.rpc_timeout_ms, "Time a peer has to answer in ms");
  app.add_option("--max-frame-bytes", f.max_frame_bytes, "Largest accepted message in bytes");
  app.add_option("--log-level", f.log_level, "trace, debug, info, warn or error");
  app.add_option("--metrics-listen", f.metrics_listen, "HOST:PORT for metrics (not available yet)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::string what = e.what();
    while (!what.empty() && (what.back() == '.' || what.back() == ' ' || what.back() == '\n')) {
      what.pop_back();
    }
    return UsageError(what + "; run chord-node --help for usage");
  }
  if (std::string error = Validate(f, app); !error.empty()) return UsageError(error);

  SetUpLogging(*ParseLogLevel(f.log_level));

  RuntimeOptions options;
  options.listen_addr = f.listen;
  options.join_addrs = SplitJoinList(f.join);
  options.max_frame_bytes = static_cast<uint32_t>(f.max_frame_bytes);
  options.node.successors = static_cast<int>(f.successors);
  options.node.stabilize_ms = static_cast<uint64_t>(f.stabilize_ms);
  options.node.rpc_timeout_ms = static_cast<uint64_t>(f.rpc_timeout_ms);
  // Keep every message the node builds well inside the frame limit.
  const size_t quarter_frame = static_cast<size_t>(f.max_frame_bytes) / 4;
  options.node.transfer_batch_bytes = std::min(options.node.transfer_batch_bytes, quarter_frame);
  options.node.max_value_bytes = std::min(options.node.max_value_bytes, quarter_frame);

  const NodeRef self = NodeRef::ForAddress(f.listen);
  spdlog::debug("--replicas {} is accepted but not used yet: replication arrives later",
                f.replicas);
  if (f.listen.rfind("0.0.0.0:", 0) == 0) {
    spdlog::warn(
        "listening on {}: peers are told to dial that address, which only reaches this "
        "machine; give --listen this machine's LAN address to run a ring across hosts",
        f.listen);
  }

  if (f.join.empty()) {
    spdlog::info("node {} on {}: starting a new ring", self.id.ToHex(), f.listen);
  } else {
    spdlog::info("node {} on {}: joining the ring through {}", self.id.ToHex(), f.listen, f.join);
  }
  NodeRuntime runtime(options, /*store=*/nullptr);
  if (Status s = runtime.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return s.code() == Status::Code::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  runtime.Run();
  spdlog::info("node {} stopped", self.id.ShortHex());
  spdlog::shutdown();
  return kExitOk;
}

}  // namespace
}  // namespace chord

int main(int argc, char** argv) {
  try {
    return chord::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chord-node stopped on an internal error (%s); please report it\n",
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "chord-node stopped on an unknown internal error; please report it\n");
  }
  return chord::kExitFailure;
}
