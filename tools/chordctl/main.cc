// chordctl: the command-line client of a chord ring (DESIGN.md section 5). Parses the
// command line with CLI11 and hands over to one function of commands.h. Exit codes: 0 ok,
// 1 not found, 2 usage, 3 unreachable or timeout.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "tools/chordctl/commands.h"

namespace {

constexpr uint64_t kMaxTimeoutMs = 3600 * 1000;

int Main(int argc, char** argv) {
  using chord::ctl::CtlOptions;
  CtlOptions options;
  if (const char* env = std::getenv("CHORD_NODE"); env != nullptr && *env != '\0') {
    options.node = env;
  }
  std::string key;
  std::string value;
  std::string value_file;

  CLI::App app{"chordctl: talk to a chord ring (put, get, delete, look up keys; inspect nodes)",
               "chordctl"};
  app.require_subcommand(0, 1);
  app.fallthrough();
  app.add_option("--node", options.node,
                 "HOST:PORT of the node to ask, or HOST:PORT#i for its virtual node i (default: "
                 "$CHORD_NODE, then 127.0.0.1:4000)");
  app.add_option("--timeout-ms", options.timeout_ms, "give up on a node after this many ms")
      ->check(CLI::Range(uint64_t{1}, kMaxTimeoutMs))
      ->capture_default_str();

  CLI::App* put = app.add_subcommand("put", "store VALUE under KEY; exit 0 once acknowledged");
  put->add_option("KEY", key, "the key (1 to 1024 bytes)")->required();
  CLI::Option* value_opt = put->add_option("VALUE", value, "the value (at most 1 MiB)");
  CLI::Option* value_file_opt =
      put->add_option("--value-file", value_file,
                      "read the value from FILE instead (- for stdin); for values too long for "
                      "a command line");
  value_opt->excludes(value_file_opt);

  CLI::App* get = app.add_subcommand("get", "print the value of KEY; exit 1 if it is missing");
  get->add_option("KEY", key, "the key")->required();

  CLI::App* del = app.add_subcommand("del", "delete KEY");
  del->add_option("KEY", key, "the key")->required();

  CLI::App* lookup = app.add_subcommand("lookup", "show which node owns KEY");
  lookup->add_option("KEY", key, "the key")->required();
  lookup->add_flag("--json", options.json, "print one JSON object");

  CLI::App* status = app.add_subcommand("status", "show one node's view of the ring");
  status->add_flag("--json", options.json, "print one JSON object");

  CLI::App* ring =
      app.add_subcommand("ring", "walk the ring from --node and check that all pointers agree");
  ring->add_flag("--json", options.json, "print one JSON object");

  CLI::App* dump = app.add_subcommand(
      "dump", "print every key the ring holds as TSV key<TAB>value (\\t \\n \\\\ escaped)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "chordctl: " << e.what() << "; run chordctl --help for usage\n";
    return chord::ctl::kExitUsage;
  }

  if (put->parsed()) {
    if (value_opt->count() == 0 && value_file_opt->count() == 0) {
      std::cerr << "chordctl: put needs a VALUE (or --value-file FILE); run chordctl put --help "
                   "for usage\n";
      return chord::ctl::kExitUsage;
    }
    if (value_file_opt->count() > 0) {
      if (!chord::ctl::ReadValueFile(value_file, &value)) return chord::ctl::kExitUsage;
    }
    return chord::ctl::RunPut(options, key, value);
  }
  if (get->parsed()) return chord::ctl::RunGet(options, key);
  if (del->parsed()) return chord::ctl::RunDelete(options, key);
  if (lookup->parsed()) return chord::ctl::RunLookup(options, key);
  if (status->parsed()) return chord::ctl::RunStatus(options);
  if (ring->parsed()) return chord::ctl::RunRing(options);
  if (dump->parsed()) return chord::ctl::RunDump(options);
  std::cerr << "chordctl: no command given (put, get, del, lookup, status, ring or dump); run "
               "chordctl --help for usage\n";
  return chord::ctl::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "chordctl: internal error: " << e.what() << "; please report it\n";
    return chord::ctl::kExitUnavailable;
  } catch (...) {
    std::cerr << "chordctl: internal error; please report it\n";
    return chord::ctl::kExitUnavailable;
  }
}
