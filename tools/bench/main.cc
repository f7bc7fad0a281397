// chord-bench: a load generator for a running chord ring (DESIGN.md section 5). Parses the
// command line with CLI11, runs one BenchRunner and prints its report, as text or as one JSON
// object. Exit codes: 0 ok, 2 usage, 3 the ring could not be reached or no request succeeded.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "tools/bench/bench_cli.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/bench_runner.h"
#include "tools/client/chord_client.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitUnavailable = 3;

int Main(int argc, char** argv) {
  // A server that closes a connection while a request is written to it is an error of that
  // request, not the end of the run (hiredis writes with write(2), not send(MSG_NOSIGNAL)).
  std::signal(SIGPIPE, SIG_IGN);
  chord::bench::BenchOptions options;
  chord::TlsFiles tls;
  const int parsed =
      chord::bench::ParseBenchCommandLine(argc, argv, &options, &tls, std::cout, std::cerr);
  if (parsed != chord::bench::kBenchRun) return parsed;
  if (chord::Status s = options.redis ? chord::Status::Ok() : chord::ChordClient::ConfigureTls(tls);
      !s.ok()) {
    std::cerr << "chord-bench: " << s.message() << "\n";
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
              << "); check that " << (options.redis ? "redis-server" : "chord-node")
              << " is running at the --node address\n";
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
