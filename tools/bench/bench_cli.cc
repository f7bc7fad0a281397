#include "tools/bench/bench_cli.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace chord::bench {
namespace {

// HOST:PORT or HOST:PORT#i with a port of 1..65535.
bool IsNodeAddress(const std::string& addr) {
  const std::string process = addr.substr(0, addr.find('#'));
  const size_t colon = process.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= process.size()) return false;
  const std::string port = process.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return false;
  const int value = std::stoi(port);
  return value >= 1 && value <= 65535;
}

}  // namespace

int ParseBenchCommandLine(int argc, const char* const* argv, BenchOptions* options, TlsFiles* tls,
                          std::ostream& out, std::ostream& err) {
  std::string op = "get";
  std::vector<std::string> nodes;

  CLI::App app{"chord-bench: measure the throughput and latency of gets and puts on a chord ring",
               "chord-bench"};
  app.add_option("--node", nodes,
                 "HOST:PORT of a node to send requests to (repeat, or separate by commas; "
                 "default: $CHORD_NODE, then 127.0.0.1:4000)")
      ->delimiter(',');
  app.add_option("--clients", options->clients, "client threads, one connection set each")
      ->check(CLI::Range(1, kMaxClients))
      ->capture_default_str();
  app.add_option("--seconds", options->seconds, "length of the measured window")
      ->check(CLI::Range(0.001, kMaxSeconds))
      ->capture_default_str();
  app.add_option("--warmup-s", options->warmup_seconds,
                 "seconds of load before the measured window, not recorded")
      ->check(CLI::Range(0.0, kMaxSeconds))
      ->capture_default_str();
  app.add_option("--op", op, "get, put, or mix (gets and puts)")
      ->check(CLI::IsMember({"get", "put", "mix"}))
      ->capture_default_str();
  CLI::Option* ratio_opt =
      app.add_option("--get-ratio", options->get_ratio, "share of gets in --op mix (0 to 1)")
          ->check(CLI::Range(0.0, 1.0))
          ->capture_default_str();
  app.add_option("--keys", options->keys, "key space: key-0 .. key-(K-1), chosen uniformly")
      ->check(CLI::Range(uint64_t{1}, kMaxKeys))
      ->capture_default_str();
  app.add_option("--value-size", options->value_bytes, "bytes of every value written")
      ->check(CLI::Range(uint64_t{0}, kMaxValueBytes))
      ->capture_default_str();
  app.add_flag("--direct", options->direct,
               "send each request straight to the key's owner, computed from the ring fetched "
               "once (a smart client), instead of through the given nodes");
  app.add_flag("--redis", options->redis,
               "the --node addresses are redis-servers: GETs and SETs instead of gets and puts, "
               "each key to the server its SHA-1 picks (every client talks to every server, "
               "as with --direct on a ring); a reference measured by the same client; needs "
               "each server once as --node and one --server-pid per server (or "
               "--no-server-cost)");
  std::string consistency;
  app.add_option("--consistency", consistency,
                 "how many replicas each get and put needs: one, quorum or all (default: the "
                 "node's, quorum for puts and one for gets)")
      ->check(CLI::IsMember({"one", "quorum", "all"}));
  app.add_flag("--json", options->json, "print one JSON object");
  app.add_option("--tls-cert", tls->cert,
                 "client certificate (PEM) for a ring that runs TLS (default: $CHORD_TLS_CERT)");
  app.add_option("--tls-key", tls->key, "its private key (default: $CHORD_TLS_KEY)");
  app.add_option("--tls-ca", tls->ca, "the cluster CA certificate (default: $CHORD_TLS_CA)");
  app.add_option("--timeout-ms", options->timeout_ms, "bound of every request")
      ->check(CLI::Range(uint64_t{1}, kMaxTimeoutMs))
      ->capture_default_str();
  app.add_option("--seed", options->seed, "seed of the key choice")->capture_default_str();
  app.add_option("--pipeline", options->pipeline,
                 "requests each client keeps in flight on its connection (like "
                 "redis-benchmark -P)")
      ->check(CLI::Range(1, kMaxPipeline))
      ->capture_default_str();
  app.add_option("--hot-keys", options->hot_keys,
                 "the measured requests pick among the first N keys only, while all --keys "
                 "are preloaded (default: all keys)")
      ->check(CLI::Range(uint64_t{1}, kMaxKeys));
  app.add_option("--server-pid", options->server_pids,
                 "read the servers' CPU time and memory from /proc/PID/stat of this process "
                 "(repeat) instead of from the status of every node of the ring; also splits "
                 "the CPU into user and system time and counts system calls and sleeps")
      ->check(CLI::Range(1, 1 << 30));
  bool no_server_cost = false;
  app.add_flag("--no-server-cost", no_server_cost, "do not read the servers' CPU time and memory");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e, out, err);  // --help
    err << "chord-bench: " << e.what() << "; run chord-bench --help for usage\n";
    return kBenchExitUsage;
  }

  if (options->redis && nodes.empty()) {
    err << "chord-bench: --redis needs the redis-servers as --node HOST:PORT (one per server)\n";
    return kBenchExitUsage;
  }
  if (nodes.empty()) {
    const char* env = std::getenv("CHORD_NODE");
    nodes.push_back(env != nullptr && *env != '\0' ? env : "127.0.0.1:4000");
  }
  for (const std::string& node : nodes) {
    if (!IsNodeAddress(node)) {
      err << "chord-bench: \"" << node
          << "\" is not a node address; give --node as HOST:PORT, e.g. 127.0.0.1:4000\n";
      return kBenchExitUsage;
    }
  }
  options->nodes = nodes;
  options->consistency = consistency == "one"      ? wire::CONSISTENCY_ONE
                         : consistency == "quorum" ? wire::CONSISTENCY_QUORUM
                         : consistency == "all"    ? wire::CONSISTENCY_ALL
                                                   : wire::CONSISTENCY_DEFAULT;
  options->op = op == "put" ? BenchOp::kPut : op == "mix" ? BenchOp::kMix : BenchOp::kGet;
  if (ratio_opt->count() > 0 && options->op != BenchOp::kMix) {
    err << "chord-bench: --get-ratio applies to --op mix only; drop it or use --op mix\n";
    return kBenchExitUsage;
  }

  options->server_cost = !no_server_cost;
  if (no_server_cost && !options->server_pids.empty()) {
    err << "chord-bench: --server-pid and --no-server-cost contradict each other; drop one\n";
    return kBenchExitUsage;
  }
  if (options->redis) {
    const char* mixed = options->direct         ? "--direct"
                        : !consistency.empty()  ? "--consistency"
                        : options->pipeline > 1 ? "--pipeline"
                        : !tls->cert.empty()    ? "--tls-cert"
                        : !tls->key.empty()     ? "--tls-key"
                        : !tls->ca.empty()      ? "--tls-ca"
                                                : nullptr;
    if (mixed != nullptr) {
      err << "chord-bench: " << mixed << " does not apply to redis-servers; drop it or --redis\n";
      return kBenchExitUsage;
    }
    std::set<std::string> seen;
    for (const std::string& node : nodes) {
      if (node.find('#') != std::string::npos) {
        err << "chord-bench: \"" << node
            << "\" names a vnode; give each redis-server as HOST:PORT with --redis\n";
        return kBenchExitUsage;
      }
      if (!seen.insert(node).second) {
        err << "chord-bench: --node " << node
            << " is given twice; with --redis give each redis-server once\n";
        return kBenchExitUsage;
      }
    }
    if (options->server_cost && options->server_pids.size() != nodes.size()) {
      err << "chord-bench: --redis reads the servers' CPU only from --server-pid; give one per "
             "redis-server ("
          << nodes.size() << ") or --no-server-cost\n";
      return kBenchExitUsage;
    }
  }

  return kBenchRun;
}

}  // namespace chord::bench
