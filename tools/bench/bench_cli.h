// chord-bench's command line: parsed with CLI11 into BenchOptions and the TLS files, with the
// checks that span options. Apart from main.cc so that the unit tests parse without a ring.
// Any thread.
#ifndef CHORD_TOOLS_BENCH_BENCH_CLI_H_
#define CHORD_TOOLS_BENCH_BENCH_CLI_H_

#include <ostream>

#include "protocol/tls_context.h"
#include "tools/bench/bench_options.h"

namespace chord::bench {

inline constexpr int kBenchRun = -1;  // parsed: run with the options
inline constexpr int kBenchExitOk = 0;
inline constexpr int kBenchExitUsage = 2;

// Parses argv (argv[0] is the program). kBenchRun with *options and *tls filled in, or the exit
// code to end with: kBenchExitOk after --help (printed to `out`), kBenchExitUsage after one
// sentence on `err`.
int ParseBenchCommandLine(int argc, const char* const* argv, BenchOptions* options, TlsFiles* tls,
                          std::ostream& out, std::ostream& err);

}  // namespace chord::bench

#endif  // CHORD_TOOLS_BENCH_BENCH_CLI_H_
