// chord-bench: a load generator for a running chord ring (DESIGN.md section 5). Parses the
// command line with CLI11, runs one BenchRunner and prints its report, as text or as one JSON
// object. Exit codes: 0 ok, 2 usage, 3 the ring could not be reached or no request succeeded.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "tools/bench/bench_options.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/bench_runner.h"
#include "tools/client/chord_client.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitUnavailable = 3;

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

int Main(int argc, char** argv) {
  using chord::bench::BenchOp;
  chord::bench::BenchOptions options;
  std::string op = "get";
  std::vector<std::string> nodes;

  CLI::App app{"chord-bench: measure the throughput and latency of gets and puts on a chord ring",
               "chord-bench"};
  app.add_option("--node", nodes,
                 "HOST:PORT of a node to send requests to (repeat, or separate by commas; "
                 "default: $CHORD_NODE, then 127.0.0.1:4000)")
      ->delimiter(',');
  app.add_option("--clients", options.clients, "client threads, one connection set each")
      ->check(CLI::Range(1, chord::bench::kMaxClients))
      ->capture_default_str();
  app.add_option("--seconds", options.seconds, "length of the measured window")
      ->check(CLI::Range(0.001, chord::bench::kMaxSeconds))
      ->capture_default_str();
  app.add_option("--warmup-s", options.warmup_seconds,
                 "seconds of load before the measured window, not recorded")
      ->check(CLI::Range(0.0, chord::bench::kMaxSeconds))
      ->capture_default_str();
  app.add_option("--op", op, "get, put, or mix (gets and puts)")
      ->check(CLI::IsMember({"get", "put", "mix"}))
      ->capture_default_str();
  CLI::Option* ratio_opt =
      app.add_option("--get-ratio", options.get_ratio, "share of gets in --op mix (0 to 1)")
          ->check(CLI::Range(0.0, 1.0))
          ->capture_default_str();
  app.add_option("--keys", options.keys, "key space: key-0 .. key-(K-1), chosen uniformly")
      ->check(CLI::Range(uint64_t{1}, chord::bench::kMaxKeys))
      ->capture_default_str();
  app.add_option("--value-size", options.value_bytes, "bytes of every value written")
      ->check(CLI::Range(uint64_t{0}, chord::bench::kMaxValueBytes))
      ->capture_default_str();
  app.add_flag("--direct", options.direct,
               "send each request straight to the key's owner, computed from the ring fetched "
               "once (a smart client), instead of through the given nodes");
  std::string consistency;
  app.add_option("--consistency", consistency,
                 "how many replicas each get and put needs: one, quorum or all (default: the "
                 "node's, quorum for puts and one for gets)")
      ->check(CLI::IsMember({"one", "quorum", "all"}));
  app.add_flag("--json", options.json, "print one JSON object");
  chord::TlsFiles tls;
  app.add_option("--tls-cert", tls.cert,
                 "client certificate (PEM) for a ring that runs TLS (default: $CHORD_TLS_CERT)");
  app.add_option("--tls-key", tls.key, "its private key (default: $CHORD_TLS_KEY)");
  app.add_option("--tls-ca", tls.ca, "the cluster CA certificate (default: $CHORD_TLS_CA)");
  app.add_option("--timeout-ms", options.timeout_ms, "bound of every request")
      ->check(CLI::Range(uint64_t{1}, chord::bench::kMaxTimeoutMs))
      ->capture_default_str();
  app.add_option("--seed", options.seed, "seed of the key choice")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "chord-bench: " << e.what() << "; run chord-bench --help for usage\n";
    return kExitUsage;
  }

  if (chord::Status s = chord::ChordClient::ConfigureTls(tls); !s.ok()) {
    std::cerr << "chord-bench: " << s.message() << "\n";
    return kExitUsage;
  }
  if (nodes.empty()) {
    const char* env = std::getenv("CHORD_NODE");
    nodes.push_back(env != nullptr && *env != '\0' ? env : "127.0.0.1:4000");
  }
  for (const std::string& node : nodes) {
    if (!IsNodeAddress(node)) {
      std::cerr << "chord-bench: \"" << node
                << "\" is not a node address; give --node as HOST:PORT, e.g. 127.0.0.1:4000\n";
      return kExitUsage;
    }
  }
  options.nodes = nodes;
  options.consistency = consistency == "one"      ? chord::wire::CONSISTENCY_ONE
                        : consistency == "quorum" ? chord::wire::CONSISTENCY_QUORUM
                        : consistency == "all"    ? chord::wire::CONSISTENCY_ALL
                                                  : chord::wire::CONSISTENCY_DEFAULT;
  options.op = op == "put" ? BenchOp::kPut : op == "mix" ? BenchOp::kMix : BenchOp::kGet;
  if (ratio_opt->count() > 0 && options.op != BenchOp::kMix) {
    std::cerr << "chord-bench: --get-ratio applies to --op mix only; drop it or use --op mix\n";
    return kExitUsage;
  }

  chord::bench::BenchRunner runner(options);
  chord::Result<chord::bench::BenchReport> report = runner.Run();
  if (!report.ok()) {
    std::cerr << "chord-bench: " << report.status().message() << "\n";
    return kExitUnavailable;
  }
  if (report->ops == 0) {
    char elapsed[32];
    std::snprintf(elapsed, sizeof(elapsed), "%.1f", report->elapsed_s);
    std::cerr << "chord-bench: no request succeeded in " << elapsed << " s (" << report->errors
              << " errors, the last: " << (report->last_error.empty() ? "none" : report->last_error)
              << "); check that chord-node is running at the --node address\n";
    return kExitUnavailable;
  }
  if (options.json) {
    std::cout << chord::bench::ReportToJson(*report).dump() << "\n";
  } else {
    std::cout << chord::bench::ReportToText(*report);
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "chord-bench: internal error: " << e.what() << "; please report it\n";
    return kExitUnavailable;
  } catch (...) {
    std::cerr << "chord-bench: internal error; please report it\n";
    return kExitUnavailable;
  }
}
