// chord-node: runs one member of a Chord ring on this machine (one ring position, or --vnodes
// virtual nodes sharing one store). Parses the command line (the contract in
// shared/DESIGN.md), sets up logging to stderr, opens the store (memory or RocksDB) and hands
// over to NodeRuntime, which runs until SIGTERM/SIGINT has made the node leave the ring.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "node/core/node_config.h"
#include "node/http/api_gateway.h"
#include "node/runtime/host_addresses.h"
#include "node/runtime/net_address.h"
#include "node/runtime/node_runtime.h"
#include "node/runtime/scheduling.h"
#include "node/storage/memory_store.h"
#include "node/storage/rocksdb_store.h"
#include "protocol/frame.h"
#include "protocol/node_ref.h"
#include "protocol/ring_address.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"
#include "tools/client/chord_client.h"

namespace chord {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr int64_t kMinFrameBytes = 64 << 10;
constexpr int64_t kMaxFrameBytes = int64_t{1} << 30;
constexpr int64_t kMaxReplicas = 64;
constexpr int64_t kMaxTombstoneGraceS = int64_t{10} * 365 * 24 * 3600;  // ten years
constexpr int64_t kMaxAntiEntropyMs = int64_t{24} * 3600 * 1000;        // a day
// Where the disk store goes without --data-dir: one directory per listen address.
constexpr const char* kDefaultDataRoot = "./chord-data";

struct Flags {
  std::string listen;
  std::string join;
  bool memory = false;
  std::string data_dir;
  bool sync_writes = false;
  std::string metrics_listen;
  std::string http_listen;
  int64_t vnodes = 1;
  int64_t replicas = 3;
  int64_t successors = 8;
  int64_t tombstone_grace_s = 3600;
  int64_t anti_entropy_ms = 2000;
  int64_t stabilize_ms = 500;
  int64_t rpc_timeout_ms = 1000;
  int64_t max_clock_skew_ms = 2000;
  int64_t max_frame_bytes = kDefaultMaxFrameBytes;
  std::string log_level = "info";
  std::string sched;  // empty: the policy the process was started with
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  bool insecure = false;
  int64_t idle_timeout_ms = 120'000;
  int64_t frame_deadline_ms = 10'000;
  int64_t max_connections_per_host = 1024;
  int64_t max_inbound_connections = 4096;
  int64_t member_reserved_connections = 256;
  int64_t unproven_reserved_per_host = 4;
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

// "127.0.0.1:4000" -> "./chord-data/127.0.0.1-4000".
std::string DefaultDataDir(const std::string& listen) {
  std::string name = listen;
  std::replace(name.begin(), name.end(), ':', '-');
  return std::string(kDefaultDataRoot) + "/" + name;
}

// Whether two addresses ParseIpv4Address accepts name the same endpoint of this host: the
// same address and port however spelled (localhost is 127.0.0.1), or the same port where one
// is the wildcard 0.0.0.0 and the other a loopback address or an address of one of this
// host's interfaces (a LAN address).
bool SameEndpoint(const std::string& a, const std::string& b) {
  auto pa = ParseIpv4Address(a);
  auto pb = ParseIpv4Address(b);
  if (!pa.ok() || !pb.ok() || pa->sin_port != pb->sin_port) return false;
  if (pa->sin_addr.s_addr == pb->sin_addr.s_addr) return true;
  const bool a_any = pa->sin_addr.s_addr == htonl(INADDR_ANY);
  const bool b_any = pb->sin_addr.s_addr == htonl(INADDR_ANY);
  return (a_any && IsAddressOfThisHost(*pb)) || (b_any && IsAddressOfThisHost(*pa));
}

std::string Validate(const Flags& f, const CLI::App& app) {
  if (f.memory && app.count("--data-dir") > 0) {
    return "--memory and --data-dir cannot be used together; give --memory for an in-memory "
           "store or --data-dir DIR for a disk store";
  }
  if (app.count("--data-dir") > 0 && f.data_dir.empty()) {
    return "--data-dir needs a directory name; give --data-dir DIR, or --memory for an "
           "in-memory store";
  }
  if (f.memory && f.sync_writes) {
    return "--sync-writes applies to the disk store only; leave it out, or drop --memory";
  }
  if (f.vnodes < 1 || f.vnodes > kMaxVnodesPerProcess) {
    return "--vnodes must be between 1 and " + std::to_string(kMaxVnodesPerProcess) +
           "; the default is 1";
  }
  if (f.replicas < 1 || f.replicas > kMaxReplicas) {
    return "--replicas must be between 1 and " + std::to_string(kMaxReplicas) +
           "; the default is 3";
  }
  if (f.tombstone_grace_s < 0 || f.tombstone_grace_s > kMaxTombstoneGraceS) {
    return "--tombstone-grace-s must be between 0 and " + std::to_string(kMaxTombstoneGraceS) +
           " (ten years); the default is 3600";
  }
  if (f.anti_entropy_ms < 1 || f.anti_entropy_ms > kMaxAntiEntropyMs) {
    return "--anti-entropy-ms must be between 1 and " + std::to_string(kMaxAntiEntropyMs) +
           " (a day); the default is 2000";
  }
  if (f.successors < 2 || f.successors > 1024) {
    return "--successors must be between 2 (the least a ring survives a failure with, RING.md) "
           "and 1024; the default is 8";
  }
  if (f.stabilize_ms < 1 || f.stabilize_ms > kMaxAntiEntropyMs) {
    return "--stabilize-ms must be between 1 and " + std::to_string(kMaxAntiEntropyMs) +
           " (a day); the default is 500";
  }
  if (f.rpc_timeout_ms < 1 || f.rpc_timeout_ms > kMaxAntiEntropyMs) {
    return "--rpc-timeout-ms must be between 1 and " + std::to_string(kMaxAntiEntropyMs) +
           " (a day); the default is 1000";
  }
  if (f.max_clock_skew_ms < 0 || f.max_clock_skew_ms > kMaxAntiEntropyMs) {
    return "--max-clock-skew-ms must be between 0 and " + std::to_string(kMaxAntiEntropyMs) +
           " (a day); the default is 2000";
  }
  if (f.max_frame_bytes < kMinFrameBytes || f.max_frame_bytes > kMaxFrameBytes) {
    return "--max-frame-bytes must be between " + std::to_string(kMinFrameBytes) + " and " +
           std::to_string(kMaxFrameBytes) + "; the default is " +
           std::to_string(kDefaultMaxFrameBytes);
  }
  if (f.idle_timeout_ms < 100 || f.idle_timeout_ms > kMaxAntiEntropyMs) {
    return "--idle-timeout-ms must be between 100 and " + std::to_string(kMaxAntiEntropyMs) +
           " (a day); the default is 120000";
  }
  if (f.frame_deadline_ms < 100 || f.frame_deadline_ms > 3'600'000) {
    return "--frame-deadline-ms must be between 100 and 3600000; the default is 10000";
  }
  if (f.max_connections_per_host < 1 || f.max_connections_per_host > 65536) {
    return "--max-connections-per-host must be between 1 and 65536; the default is 1024";
  }
  if (f.max_inbound_connections < 1 || f.max_inbound_connections > 65536) {
    return "--max-inbound-connections must be between 1 and 65536; the default is 4096";
  }
  // Not given, the reserve is 256 places, or a quarter of them if there are fewer than 1024.
  if (app.count("--member-reserved-connections") > 0 &&
      (f.member_reserved_connections < 0 ||
       f.member_reserved_connections > f.max_inbound_connections)) {
    return "--member-reserved-connections must be between 0 and --max-inbound-connections (equal "
           "to it, only members may connect); the default is 256";
  }
  if (f.unproven_reserved_per_host < 1 || f.unproven_reserved_per_host > 65536) {
    return "--unproven-reserved-per-host must be between 1 and 65536; the default is 4";
  }
  if (!ParseLogLevel(f.log_level)) {
    return "--log-level must be one of trace, debug, info, warn, error; the default is info";
  }
  if (app.count("--sched") > 0 && !ParseSchedPolicy(f.sched)) {
    return "--sched must be batch or normal (SCHED_OTHER); without it the node keeps the "
           "scheduling policy it was started with";
  }
  auto listen = ParseIpv4Address(f.listen);
  if (!listen.ok()) return "--listen " + listen.status().message();
  const bool tls = !f.tls_cert.empty() || !f.tls_key.empty() || !f.tls_ca.empty();
  if (tls && (f.tls_cert.empty() || f.tls_key.empty() || f.tls_ca.empty())) {
    return "TLS needs all three of --tls-cert, --tls-key and --tls-ca; scripts/certs.sh makes "
           "them";
  }
  if (tls && f.insecure) {
    return "--insecure turns TLS off and cannot be given with the --tls-* files; choose one";
  }
  if (!tls && !f.insecure && !IsLoopback(*listen)) {
    return "refusing to serve " + f.listen +
           " without TLS, where any host on the network could read and overwrite every key; "
           "give --tls-cert, --tls-key and --tls-ca (scripts/certs.sh makes them), or "
           "--insecure on a network you trust";
  }
  if (app.count("--metrics-listen") > 0) {
    if (auto addr = ParseIpv4Address(f.metrics_listen); !addr.ok()) {
      return "--metrics-listen " + addr.status().message();
    }
    if (SameEndpoint(f.metrics_listen, f.listen)) {
      return "--metrics-listen must differ from --listen; give the metrics their own port";
    }
  }
  if (app.count("--http-listen") > 0) {
    auto addr = ParseIpv4Address(f.http_listen);
    if (!addr.ok()) return "--http-listen " + addr.status().message();
    if (SameEndpoint(f.http_listen, f.listen) ||
        (!f.metrics_listen.empty() && SameEndpoint(f.http_listen, f.metrics_listen))) {
      return "--http-listen must differ from --listen and --metrics-listen; give the HTTP API "
             "its own port";
    }
    if (!tls && !f.insecure && !IsLoopback(*addr)) {
      return "refusing to serve the HTTP API on " + f.http_listen +
             " without TLS, where any host on the network could read and overwrite every key; "
             "give --tls-cert, --tls-key and --tls-ca (the API then takes HTTPS with client "
             "certificates), or --insecure on a network you trust";
    }
  }
  for (const std::string& join : SplitJoinList(f.join)) {
    // A member may be named by its process (HOST:PORT) or as one of its vnodes (HOST:PORT#i).
    auto ring_addr = SplitRingAddress(join);
    if (!ring_addr.ok()) return "--join " + ring_addr.status().message();
    if (auto addr = ParseIpv4Address(ring_addr->process); !addr.ok()) {
      return "--join " + addr.status().message();
    }
    if (SameEndpoint(ring_addr->process, f.listen)) {
      return "--join names this node's own address; leave --join out to start a new ring";
    }
  }
  return "";
}

// Connection limits mean nothing if the process runs out of descriptors first: the soft limit
// is raised towards `wanted` (up to the hard limit).
void RaiseOpenFileLimit(size_t wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= wanted) return;
  limit.rlim_cur = std::min<rlim_t>(static_cast<rlim_t>(wanted), limit.rlim_max);
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < wanted) {
    spdlog::warn(
        "this process may open only {} files; connections past that are refused "
        "by the system (raise ulimit -n)",
        static_cast<uint64_t>(limit.rlim_cur));
  }
}

void SetUpLogging(spdlog::level::level_enum level) {
  auto logger = spdlog::stderr_color_mt("chord-node");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(level);
  spdlog::flush_on(spdlog::level::warn);
}

// Starts the HTTP API (--http-listen) and the metrics-only endpoint (--metrics-listen) on the
// runtime's loop. The API speaks HTTPS with client certificates when the node has TLS, and
// its worker threads reach other nodes as this member.
Status StartHttp(const Flags& f, NodeRuntime* runtime) {
  if (!f.metrics_listen.empty()) {
    ApiGateway::Options metrics;
    metrics.api = false;  // plain HTTP, /metrics only, as before the API existed
    auto addr = ParseIpv4Address(f.metrics_listen);
    metrics.loopback = IsLoopback(*addr);  // else a scraper on the LAN would be refused
    auto gateway = ApiGateway::Start(runtime, *addr, f.metrics_listen + " for metrics", metrics);
    if (!gateway.ok()) return gateway.status();
    runtime->AddService(std::move(gateway).value());
    spdlog::info("serving metrics at http://{}/metrics", f.metrics_listen);
  }
  if (f.http_listen.empty()) return Status::Ok();
  ApiGateway::Options api;
  api.tls = TlsFiles{f.tls_cert, f.tls_key, f.tls_ca};
  auto addr = ParseIpv4Address(f.http_listen);
  api.loopback = IsLoopback(*addr);
  if (!api.tls.empty()) {
    if (Status s = ChordClient::ConfigureTls(api.tls); !s.ok()) return s;
  }
  auto gateway = ApiGateway::Start(runtime, *addr, f.http_listen + " for the HTTP API", api);
  if (!gateway.ok()) return gateway.status();
  runtime->AddService(std::move(gateway).value());
  const char* scheme = api.tls.empty() ? "http" : "https";
  spdlog::info("HTTP API at {}://{}/v1/, ring page at {}://{}/", scheme, f.http_listen, scheme,
               f.http_listen);
  return Status::Ok();
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
  app.add_flag("--memory", f.memory,
               "Keep records in memory only (lost when the process stops); excludes --data-dir");
  app.add_option("--data-dir", f.data_dir,
                 "Directory of the RocksDB disk store (created if missing); default: "
                 "./chord-data/HOST-PORT of --listen");
  app.add_flag("--sync-writes", f.sync_writes,
               "Disk store: fsync every write before acknowledging it (survives power loss; "
               "slower)");
  app.add_option("--vnodes", f.vnodes,
                 "Virtual nodes (ring positions HOST:PORT#i) this process runs, 1 to 64; "
                 "default 1");
  app.add_option("--replicas", f.replicas,
                 "Copies of each key: its owner and the next R-1 distinct processes; default 3");
  app.add_option("--successors", f.successors,
                 "Length of the successor list; at least replicas x vnodes is used; default 8");
  app.add_option("--tombstone-grace-s", f.tombstone_grace_s,
                 "Seconds a deleted key's tombstone is kept before it may be purged; default "
                 "3600");
  app.add_option("--anti-entropy-ms", f.anti_entropy_ms,
                 "Period in ms of the replica comparison and repair; default 2000");
  app.add_option("--stabilize-ms", f.stabilize_ms, "Period of ring maintenance in ms");
  app.add_option("--rpc-timeout-ms", f.rpc_timeout_ms, "Time a peer has to answer in ms");
  app.add_option("--max-clock-skew-ms", f.max_clock_skew_ms,
                 "How far the nodes' clocks may disagree, in ms: a request arriving later than "
                 "its sender's deadline plus this is refused");
  app.add_option("--max-frame-bytes", f.max_frame_bytes, "Largest accepted message in bytes");
  app.add_option("--log-level", f.log_level, "trace, debug, info, warn or error");
  app.add_option("--sched", f.sched,
                 "Scheduling policy of the node's threads: batch (SCHED_BATCH: a node woken by "
                 "a message does not preempt the task running on that CPU; for several ring "
                 "members on one host) or normal (SCHED_OTHER); default: the policy the node "
                 "was started with");
  app.add_option("--metrics-listen", f.metrics_listen,
                 "[HOST:]PORT to serve Prometheus metrics on (HTTP, GET /metrics); a bare "
                 "PORT is on 127.0.0.1; default: none");
  app.add_option("--http-listen", f.http_listen,
                 "[HOST:]PORT to serve the HTTP API (/v1/...), the live ring page (/) and "
                 "/metrics on; HTTPS with client certificates when TLS is on; a bare PORT is on "
                 "127.0.0.1; default: none");
  app.add_option("--tls-cert", f.tls_cert,
                 "This member's certificate (PEM; scripts/certs.sh member); turns on mutual "
                 "TLS for every connection (CHORD_TLS_* are the clients' variables; a node "
                 "takes flags only)");
  app.add_option("--tls-key", f.tls_key, "Its private key (PEM)");
  app.add_option("--tls-ca", f.tls_ca, "The cluster CA certificate every peer must chain to");
  app.add_option("--idle-timeout-ms", f.idle_timeout_ms,
                 "Close a connection that has sent no complete message for this long; default "
                 "120000");
  app.add_option("--frame-deadline-ms", f.frame_deadline_ms,
                 "A message (and a TLS handshake) must arrive whole within this many ms of its "
                 "first byte; default 10000");
  app.add_option("--max-connections-per-host", f.max_connections_per_host,
                 "Connections one source address may hold open at once; default 1024");
  app.add_option("--max-inbound-connections", f.max_inbound_connections,
                 "Connections the node accepts at once, from everyone; default 4096");
  app.add_option("--member-reserved-connections", f.member_reserved_connections,
                 "With TLS, this many of them are kept for members: once only these are left, a "
                 "new connection must show a member's certificate; default 256 (a quarter of the "
                 "places if there are fewer than 1024)");
  app.add_option("--unproven-reserved-per-host", f.unproven_reserved_per_host,
                 "Of the places kept for members, connections from one source address whose "
                 "handshake has not yet shown a member hold at most this many; default 4");
  app.add_flag("--insecure", f.insecure,
               "Plain TCP on a non-loopback address: every host that can reach the port is "
               "trusted as a member and an admin client");

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
  if (!f.metrics_listen.empty() && f.metrics_listen.find(':') == std::string::npos) {
    f.metrics_listen = "127.0.0.1:" + f.metrics_listen;  // loopback unless a host is named
  }
  if (!f.http_listen.empty() && f.http_listen.find(':') == std::string::npos) {
    f.http_listen = "127.0.0.1:" + f.http_listen;
  }
  if (std::string error = Validate(f, app); !error.empty()) return UsageError(error);
  // One spelling per endpoint: the address is the node's identity.
  f.listen = *CanonicalHostPort(f.listen);
  if (!f.metrics_listen.empty()) f.metrics_listen = *CanonicalHostPort(f.metrics_listen);
  if (!f.http_listen.empty()) f.http_listen = *CanonicalHostPort(f.http_listen);

  SetUpLogging(*ParseLogLevel(f.log_level));
  // Before the store and the runtime start threads of their own, which inherit it.
  if (!f.sched.empty()) {
    const SchedPolicy sched = *ParseSchedPolicy(f.sched);
    if (Status s = ApplySchedPolicy(sched); !s.ok()) {
      std::fprintf(stderr, "%s; start without --sched to keep the policy the node has\n",
                   s.message().c_str());
      return kExitFailure;
    }
    spdlog::info("scheduling policy: {} (--sched)", SchedPolicyName(sched));
  }

  RuntimeOptions options;
  options.listen_addr = f.listen;
  for (const std::string& join : SplitJoinList(f.join)) {
    auto ring_addr = SplitRingAddress(join);
    std::string canonical = *CanonicalHostPort(ring_addr->process);
    if (join.find('#') != std::string::npos) canonical += "#" + std::to_string(ring_addr->vnode);
    options.join_addrs.push_back(std::move(canonical));
  }
  options.tls = TlsFiles{f.tls_cert, f.tls_key, f.tls_ca};
  options.idle_timeout_ms = static_cast<uint64_t>(f.idle_timeout_ms);
  options.frame_deadline_ms = static_cast<uint64_t>(f.frame_deadline_ms);
  options.max_connections_per_host = static_cast<size_t>(f.max_connections_per_host);
  options.max_inbound_connections = static_cast<size_t>(f.max_inbound_connections);
  options.member_reserved_connections = static_cast<size_t>(
      app.count("--member-reserved-connections") > 0
          ? f.member_reserved_connections
          : std::min(f.member_reserved_connections, f.max_inbound_connections / 4));
  options.unproven_reserved_per_host = static_cast<size_t>(f.unproven_reserved_per_host);
  // The ring's connections, the HTTP API's (1024 and the sockets of its walks and watches),
  // RocksDB's files.
  RaiseOpenFileLimit(options.max_inbound_connections + 1024 + 512);
  options.vnodes = static_cast<int>(f.vnodes);
  options.max_frame_bytes = static_cast<uint32_t>(f.max_frame_bytes);
  // Successor lists must reach R distinct processes even when every vnode of a process lies
  // in a row.
  options.node.successors = static_cast<int>(std::max(f.successors, f.replicas * f.vnodes));
  options.node.replicas = static_cast<int>(f.replicas);
  options.node.tombstone_grace_ms = static_cast<uint64_t>(f.tombstone_grace_s) * 1000;
  options.node.anti_entropy_ms = static_cast<uint64_t>(f.anti_entropy_ms);
  options.node.stabilize_ms = static_cast<uint64_t>(f.stabilize_ms);
  options.node.rpc_timeout_ms = static_cast<uint64_t>(f.rpc_timeout_ms);
  options.node.max_clock_skew_ms = static_cast<uint64_t>(f.max_clock_skew_ms);
  // Keep every message the node builds well inside the frame limit.
  const size_t quarter_frame = static_cast<size_t>(f.max_frame_bytes) / 4;
  options.node.transfer_batch_bytes = std::min(options.node.transfer_batch_bytes, quarter_frame);
  options.node.max_value_bytes = std::min(options.node.max_value_bytes, quarter_frame);

  if (options.node.successors > f.successors) {
    spdlog::info("successor lists hold {} entries (replicas {} x vnodes {}) instead of {}",
                 options.node.successors, f.replicas, f.vnodes, f.successors);
  }
  if (f.listen.rfind("0.0.0.0:", 0) == 0) {
    spdlog::warn(
        "listening on {}: peers are told to dial that address, which only reaches this "
        "machine; give --listen this machine's LAN address to run a ring across hosts",
        f.listen);
  }

  // The store outlives the runtime; all vnodes share it.
  std::unique_ptr<Store> store;
  if (f.memory) {
    store = std::make_unique<MemoryStore>();
    spdlog::info("store: in memory (lost when the process stops)");
  } else {
    const std::string dir = f.data_dir.empty() ? DefaultDataDir(f.listen) : f.data_dir;
    RocksDbOptions rocks;
    rocks.sync_writes = f.sync_writes;
    auto opened = RocksDbStore::Open(dir, rocks);
    if (!opened.ok()) {
      std::fprintf(stderr, "%s\n", opened.status().message().c_str());
      return kExitFailure;
    }
    spdlog::info("store: RocksDB in {} ({} records{})", dir, (*opened)->Count(),
                 f.sync_writes ? ", every write synced" : "");
    store = std::move(opened).value();
  }

  const std::string what = f.vnodes == 1 ? "node " + NodeRef::ForAddress(f.listen).id.ToHex()
                                         : std::to_string(f.vnodes) + " vnodes";
  if (f.join.empty()) {
    spdlog::info("{} on {}: starting a new ring", what, f.listen);
  } else {
    spdlog::info("{} on {}: joining the ring through {}", what, f.listen, f.join);
  }
  for (int i = 0; f.vnodes > 1 && i < f.vnodes; ++i) {
    const NodeRef v = NodeRef::ForAddress(VnodeAddress(f.listen, options.vnodes, i));
    spdlog::debug("vnode {} has id {}", v.addr, v.id.ToHex());
  }
  NodeRuntime runtime(options, store.get());
  if (Status s = runtime.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return s.code() == Status::Code::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (Status s = StartHttp(f, &runtime); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return s.code() == Status::Code::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (f.tls_cert.empty()) {
    spdlog::info(
        "plain TCP: every peer and client is trusted (start with --tls-cert, "
        "--tls-key and --tls-ca for mutual TLS)");
  } else {
    spdlog::info("mutual TLS: members must show a certificate of {}", f.tls_ca);
  }
  runtime.Run();
  spdlog::info("{} on {} stopped", what, f.listen);
  spdlog::shutdown();
  return kExitOk;
}

}  // namespace
}  // namespace chord

// Read by jemalloc when chord-node is linked with it (node/CMakeLists.txt), ignored otherwise:
// freed memory goes back to the system within about a second, from a background thread,
// instead of staying resident until later allocations purge it.
extern "C" {
// NOLINTNEXTLINE(readability-identifier-naming): the name jemalloc looks for
const char* malloc_conf = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:1000";
}

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
