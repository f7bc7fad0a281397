// chordctl: the command-line client of a chord ring (DESIGN.md section 5). Parses the
// command line with CLI11 and hands over to one Run function (commands.h, watch.h,
// bulk_load.h). Exit codes: 0 ok, 1 not found (check: [ERR]), 2 usage, 3 unreachable or
// timeout, 4 a compare-and-set conflict.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "tools/chordctl/bulk_load.h"
#include "tools/chordctl/commands.h"
#include "tools/client/duration.h"
#include "tools/chordctl/watch.h"
#include "tools/chordctl/watch_key.h"
#include "tools/client/chord_client.h"

namespace {

constexpr uint64_t kMaxTimeoutMs = 3600 * 1000;
constexpr uint64_t kMaxWatchFrames = 1000000000;
// Above any replication factor a node accepts; the node names the real limit.
constexpr uint32_t kMaxRequired = 64;

// The options of issue 14 as given on the command line, before they are checked.
struct DataFlags {
  std::string consistency;
  uint32_t required = 0;
  uint64_t if_version = 0;
  bool if_absent = false;
  std::string ttl;
};

// --consistency, -w/-r on a data subcommand (`letter` is w for writes, r for reads).
void AddConsistencyFlags(CLI::App* cmd, DataFlags* flags, const std::string& letter) {
  cmd->add_option("--consistency", flags->consistency,
                  letter == "w"
                      ? "how many of the key's R replicas must store the write: one, quorum "
                        "(R/2+1, the default) or all"
                      : "how many of the key's R replicas must answer: one (the default: the "
                        "owner), quorum (R/2+1, newest wins, stale ones repaired) or all")
      ->check(CLI::IsMember({"one", "quorum", "all"}));
  cmd->add_option("-" + letter, flags->required,
                  letter == "w" ? "replicas that must store the write (overrides --consistency)"
                                : "replicas that must answer (overrides --consistency)")
      ->check(CLI::Range(uint32_t{1}, kMaxRequired));
}

// The DataOptions of `flags`, or false with the reason printed.
bool ToDataOptions(const DataFlags& flags, chord::DataOptions* out) {
  if (flags.consistency == "one") out->consistency = chord::wire::CONSISTENCY_ONE;
  if (flags.consistency == "quorum") out->consistency = chord::wire::CONSISTENCY_QUORUM;
  if (flags.consistency == "all") out->consistency = chord::wire::CONSISTENCY_ALL;
  out->required = flags.required;
  out->if_version = flags.if_version;
  out->if_absent = flags.if_absent;
  if (!flags.ttl.empty()) {
    chord::Result<uint64_t> ms = chord::ParseDuration(flags.ttl);
    if (!ms.ok()) {
      std::cerr << "chordctl: --ttl: " << ms.status().message() << "\n";
      return false;
    }
    out->ttl_ms = *ms;
  }
  return true;
}

int Main(int argc, char** argv) {
  using chord::ctl::CtlOptions;
  CtlOptions options;
  if (const char* env = std::getenv("CHORD_NODE"); env != nullptr && *env != '\0') {
    options.node = env;
  }
  std::string key;
  std::string value;
  std::string value_file;
  std::string svg_path;
  chord::ctl::WatchOptions watch_options;
  DataFlags data_flags;
  chord::ctl::WatchKeyOptions watch_key_options;
  chord::ctl::LoadOptions load_options;

  CLI::App app{"chordctl: talk to a chord ring (put, get, delete, look up keys; inspect nodes)",
               "chordctl"};
  app.footer(
      "Exit codes: 0 ok; 1 not found (get), or [ERR] (check); 2 usage (bad flags, key or value "
      "too large, malformed load input); 3 node unreachable, timeout, or the ring could not "
      "complete the request (too few replicas answered); 4 a compare-and-set condition did not "
      "hold.\nExamples:\n  chordctl ring                      every node, its "
      "keys, [OK]/[ERR]\n  chordctl ring --svg ring.svg       a picture of the ring\n  "
      "chordctl watch                     live key counts (Ctrl-C to stop)\n  chordctl dump > "
      "keys.tsv; chordctl load keys.tsv   export and re-import every key");
  app.require_subcommand(0, 1);
  app.fallthrough();
  app.add_option("--node", options.node,
                 "HOST:PORT of the node to ask, or HOST:PORT#i for its virtual node i (default: "
                 "$CHORD_NODE, then 127.0.0.1:4000)");
  chord::TlsFiles tls;
  app.add_option("--tls-cert", tls.cert,
                 "client certificate (PEM, scripts/certs.sh client) for a ring that runs TLS "
                 "(default: $CHORD_TLS_CERT)");
  app.add_option("--tls-key", tls.key, "its private key (default: $CHORD_TLS_KEY)");
  app.add_option("--tls-ca", tls.ca, "the cluster CA certificate (default: $CHORD_TLS_CA)");
  CLI::Option* timeout_opt =
      app.add_option("--timeout-ms", options.timeout_ms,
                     "give up on a node after this many ms (watch: 2000 unless given)")
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
  AddConsistencyFlags(put, &data_flags, "w");
  CLI::Option* if_version_opt =
      put->add_option("--if-version", data_flags.if_version,
                      "compare-and-set: store only if the key is at version V now (exit 4 "
                      "otherwise, naming the version it is at)")
          ->option_text("V")
          ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
  put->add_flag("--if-absent", data_flags.if_absent,
                "compare-and-set: store only if the key does not exist (exit 4 otherwise)")
      ->excludes(if_version_opt);
  put->add_option("--ttl", data_flags.ttl,
                  "the value expires after DURATION (500ms, 30s, 5m, 1h): then it reads as "
                  "absent everywhere")
      ->option_text("DURATION");
  put->add_flag("--json", options.json,
                "print one JSON object: key, code, version, acks (replicas that stored it), "
                "required");

  CLI::App* get = app.add_subcommand("get", "print the value of KEY; exit 1 if it is missing");
  get->add_option("KEY", key, "the key")->required();
  AddConsistencyFlags(get, &data_flags, "r");
  get->add_flag("--json", options.json,
                "print one JSON object: key, code, value, version, acks, required, "
                "expires_unix_ms");

  CLI::App* del = app.add_subcommand("del", "delete KEY");
  del->add_option("KEY", key, "the key")->required();
  AddConsistencyFlags(del, &data_flags, "w");
  del->add_option("--if-version", data_flags.if_version,
                  "compare-and-set: delete only if the key is at version V now (exit 4 "
                  "otherwise)")
      ->option_text("V")
      ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
  del->add_flag("--json", options.json, "print one JSON object: key, code, version, acks");

  CLI::App* lookup = app.add_subcommand("lookup", "show which node owns KEY");
  lookup->add_option("KEY", key, "the key")->required();
  lookup->add_flag("--json", options.json, "print one JSON object");

  CLI::App* status = app.add_subcommand("status", "show one node's view of the ring");
  status->add_flag("--json", options.json, "print one JSON object");

  CLI::App* ring = app.add_subcommand(
      "ring",
      "walk the ring from --node: one row per ring position (Up, Joining, Leaving, Down) with "
      "its address, id, primary and replica keys and share, totals, and the pointer check");
  CLI::Option* ring_json = ring->add_flag("--json", options.json, "print one JSON object");
  ring->add_option("--svg", svg_path,
                   "write a picture of the ring to FILE instead (self-contained SVG; - for "
                   "stdout) and print a one-line summary")
      ->option_text("FILE")
      ->excludes(ring_json);

  app.add_subcommand("check",
                     "print only the ring's pointer check: [OK] ..., or one [ERR] line per "
                     "disagreement; exit 0 on [OK], 1 on [ERR], 3 if --node is unreachable");

  CLI::App* watch = app.add_subcommand(
      "watch",
      "live view of every node's primary and replica keys, redrawn in place on a terminal "
      "(plain frames otherwise); Ctrl-C to stop");
  watch->add_option("--interval-ms", watch_options.interval_ms, "refresh every MS milliseconds")
      ->check(CLI::Range(uint64_t{50}, chord::ctl::kMaxWatchIntervalMs))
      ->capture_default_str();
  watch->add_option("--count", watch_options.count, "stop after N frames (0 = until Ctrl-C)")
      ->check(CLI::Range(uint64_t{0}, kMaxWatchFrames))
      ->capture_default_str();

  CLI::App* watch_key = app.add_subcommand(
      "watch-key",
      "print every change of KEY as it happens, one line per event: put VERSION VALUE, delete "
      "VERSION, expire VERSION (current VERSION ... first; resync VERSION ... when changes "
      "could not all be sent); follows the key when its owner changes or dies; Ctrl-C to stop");
  watch_key->add_option("KEY", key, "the key")->required();
  watch_key
      ->add_option("--from-version", watch_key_options.from_version,
                   "resume after version V (the last one printed) instead of starting with the "
                   "current state")
      ->option_text("V");
  watch_key
      ->add_option("--count", watch_key_options.count, "stop after N events (0 = until Ctrl-C)")
      ->check(CLI::Range(uint64_t{0}, chord::ctl::kMaxWatchKeyEvents))
      ->capture_default_str();
  watch_key
      ->add_option("--give-up-s", watch_key_options.give_up_s,
                   "exit 3 when no node has answered for this long (--timeout-ms bounds each "
                   "call to a node)")
      ->check(CLI::Range(uint64_t{1}, chord::ctl::kMaxWatchKeyGiveUpS))
      ->capture_default_str();
  watch_key->add_flag("--json", options.json,
                      "one JSON object per event: type, version, value (deleted for current "
                      "and resync)");

  CLI::App* load = app.add_subcommand(
      "load",
      "store every record of FILE (- for stdin): TSV key<TAB>value[<TAB>expiry] lines as dump "
      "writes them, or JSON lines {\"key\": ..., \"value\": ...[, \"expires_unix_ms\": N]}; a "
      "record with an expiry is put with the time it has left, or not at all once it has passed; "
      "exit 2 if lines were malformed (skipped), 3 if puts failed");
  load->add_option("FILE", load_options.path, "the input file, or - for stdin")->required();
  load->add_option("--parallel", load_options.parallel, "connections putting at once")
      ->check(CLI::Range(1, chord::ctl::kMaxLoadParallel))
      ->capture_default_str();

  CLI::App* dump = app.add_subcommand(
      "dump",
      "print every key the ring holds as TSV key<TAB>value, sorted by key (\\t \\n \\r \\\\ "
      "escaped; chordctl load reads it back); a key with a time to live has a third field, when "
      "it expires (Unix time in ms), and a key already past it is left out");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "chordctl: " << e.what() << "; run chordctl --help for usage\n";
    return chord::ctl::kExitUsage;
  }
  options.timeout_given = timeout_opt->count() > 0;
  chord::DataOptions data;
  if (!ToDataOptions(data_flags, &data)) return chord::ctl::kExitUsage;
  if (chord::Status s = chord::ChordClient::ConfigureTls(tls); !s.ok()) {
    std::cerr << "chordctl: " << s.message() << "\n";
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
    return chord::ctl::RunPut(options, key, value, data);
  }
  if (get->parsed()) return chord::ctl::RunGet(options, key, data);
  if (del->parsed()) return chord::ctl::RunDelete(options, key, data);
  if (lookup->parsed()) return chord::ctl::RunLookup(options, key);
  if (status->parsed()) return chord::ctl::RunStatus(options);
  if (ring->parsed()) return chord::ctl::RunRing(options, svg_path);
  if (app.got_subcommand("check")) return chord::ctl::RunCheck(options);
  if (watch->parsed()) return chord::ctl::RunWatch(options, watch_options);
  if (watch_key->parsed()) return chord::ctl::RunWatchKey(options, key, watch_key_options);
  if (load->parsed()) return chord::ctl::RunLoad(options, load_options);
  if (dump->parsed()) return chord::ctl::RunDump(options);
  std::cerr << "chordctl: no command given (put, get, del, lookup, status, ring, check, watch, "
               "watch-key, load or dump); run chordctl --help for usage\n";
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
