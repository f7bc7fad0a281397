// chord-placement: the placement lab (DESIGN.md section 5). Every consistent-hashing scheme of
// tools/placement measured on the same keys: what moves on growth or removal, balance, lookup
// speed, memory, and a side-by-side table; plus the jump, CRC16 and Redis slot functions.
// Parses and checks the flags with CLI11, then hands over to commands.h.
// Exit codes: 0 ok, 2 usage.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "tools/placement/cli/commands.h"
#include "tools/placement/crc16.h"

namespace {

namespace pl = chord::placement;
using pl::CompareOptions;
using pl::Scheme;
using pl::SchemeOptions;
using pl::cli::kExitUsage;

constexpr uint32_t kMaxNodes = 100000;
constexpr uint32_t kMaxVnodes = 100000;
// nodes x vnodes: 80 MB as the sorted vector, 480 MB (plus malloc's overhead) as a std::map.
constexpr uint64_t kMaxPoints = 10'000'000;
// 72 bytes of hashes per key: 720 MB at the limit.
constexpr uint64_t kMaxKeys = 10'000'000;

// Integers must be written as digits: CLI11 alone would read "1e3" or "1.5" and then report
// a range error.
const CLI::Validator kWholeNumber(
    [](std::string& text) -> std::string {
      if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
        return "\"" + text + "\" is not a whole number; write it with digits only";
      }
      return "";
    },
    "", "whole number");

// Doubles must be finite: NaN passes every range check.
const CLI::Validator kFiniteNumber(
    [](std::string& text) -> std::string {
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
        return "\"" + text + "\" is not a finite number; write it like 0.25";
      }
      return "";
    },
    "", "finite number");

int Usage(const std::string& sentence) {
  std::cerr << "chord-placement: " << sentence << "\n";
  return kExitUsage;
}

// The checks CLI11 cannot express: the scheme's name and the limits that depend on it.
std::optional<int> CheckScheme(const std::string& name, Scheme* scheme) {
  const std::optional<Scheme> parsed = pl::ParseScheme(name);
  if (!parsed) {
    return Usage("unknown --algo \"" + name + "\"; use one of: " + pl::SchemeNameList() + ".");
  }
  *scheme = *parsed;
  return std::nullopt;
}

std::optional<int> CheckMembership(Scheme scheme, uint32_t nodes, const SchemeOptions& options) {
  if (pl::UsesVnodes(scheme) && static_cast<uint64_t>(nodes) * options.vnodes > kMaxPoints) {
    return Usage("nodes x --vnodes is " + std::to_string(uint64_t{nodes} * options.vnodes) +
                 " ring points, more than the " + std::to_string(kMaxPoints) +
                 " this tool builds; use fewer nodes or vnodes.");
  }
  if (scheme == Scheme::kRedis && nodes > pl::kRedisSlots) {
    return Usage("redis has 16384 slots, so at most 16384 nodes; use fewer nodes.");
  }
  if (scheme == Scheme::kMaglev && nodes > options.maglev_table_size) {
    return Usage("maglev's table has " + std::to_string(options.maglev_table_size) +
                 " entries, fewer than the nodes; use fewer nodes.");
  }
  return std::nullopt;
}

std::optional<int> CheckPoints(uint32_t nodes, const SchemeOptions& options) {
  return CheckMembership(Scheme::kRing, nodes, options);
}

// --vnodes and --epsilon given to a scheme that has no use for them are refused rather than
// silently ignored.
std::optional<int> CheckFlagsApply(const CLI::App& sub, Scheme scheme) {
  const std::string name(pl::SchemeName(scheme));
  if (sub.get_option("--vnodes")->count() > 0 && !pl::UsesVnodes(scheme)) {
    return Usage("--vnodes applies to ring, ring-map and bounded, not " + name +
                 "; drop the flag.");
  }
  if (sub.get_option("--epsilon")->count() > 0 && scheme != Scheme::kBounded) {
    return Usage("--epsilon applies to bounded only, not " + name + "; drop the flag.");
  }
  return std::nullopt;
}

bool ParseUint64(const std::string& text, uint64_t* value) {
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const char* first = text.data() + (hex ? 2 : 0);
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, *value, hex ? 16 : 10);
  return ec == std::errc() && end == last && first != last;
}

int Main(int argc, char** argv) {
  pl::cli::CommonFlags flags;
  std::string algo;
  uint32_t from = 3;
  uint32_t to = 4;
  uint32_t nodes = 10;
  uint32_t index = 0;
  uint64_t keys = 1000;
  uint64_t balance_keys = 1'000'000;
  double seconds = 0.3;
  std::string jump_key;
  int32_t buckets = 1;
  std::string text;
  CompareOptions compare;

  CLI::App app{"chord-placement: every consistent-hashing scheme measured on the same keys",
               "chord-placement"};
  app.footer("Schemes (--algo): " + pl::SchemeNameList() +
             ".\nKeys are user-1 .. user-K; nodes are server-a, server-b, ... in list order.\n"
             "Exit codes: 0 ok, 2 usage.\nExamples:\n"
             "  chord-placement move --algo modulo --from 3 --to 4 --keys 1000\n"
             "  chord-placement balance --algo ring --nodes 1000 --vnodes 1000\n"
             "  chord-placement compare --from 10 --to 12 --keys 100000");
  app.require_subcommand(1, 1);

  auto add_json = [&](CLI::App* sub) {
    sub->add_flag("--json", flags.json, "print one JSON object instead of a table");
  };
  auto add_algo = [&](CLI::App* sub) {
    sub->add_option("--algo", algo, "the scheme: " + pl::SchemeNameList())->required();
  };
  auto add_vnodes = [&](CLI::App* sub) {
    sub->add_option("--vnodes", flags.options.vnodes,
                    "points per node of ring, ring-map and bounded")
        ->check(kWholeNumber)
        ->check(CLI::Range(uint32_t{1}, kMaxVnodes))
        ->capture_default_str();
  };
  auto add_epsilon = [&](CLI::App* sub) {
    sub->add_option("--epsilon", flags.options.epsilon,
                    "bounded: each node holds at most ceil((1+E) * keys / nodes)")
        ->check(kFiniteNumber)
        ->check(CLI::Range(0.0, 1000.0))
        ->capture_default_str();
  };
  auto add_keys = [&](CLI::App* sub, uint64_t* target, const char* what) {
    sub->add_option("--keys", *target, what)
        ->check(kWholeNumber)
        ->check(CLI::Range(uint64_t{1}, kMaxKeys))
        ->capture_default_str();
  };
  const auto node_range = CLI::Range(uint32_t{1}, kMaxNodes);

  CLI::App* move = app.add_subcommand("move", "grow (or shrink) the node list; count moved keys");
  add_algo(move);
  move->add_option("--from", from, "nodes before")
      ->check(kWholeNumber)
      ->check(node_range)
      ->capture_default_str();
  move->add_option("--to", to, "nodes after (more: nodes appended; fewer: last ones dropped)")
      ->check(kWholeNumber)
      ->check(node_range)
      ->capture_default_str();
  add_keys(move, &keys, "keys user-1 .. user-K");
  add_vnodes(move);
  add_epsilon(move);
  add_json(move);

  CLI::App* remove =
      app.add_subcommand("remove", "take one node out of the middle of the list; count moves");
  add_algo(remove);
  remove->add_option("--nodes", nodes, "nodes before")
      ->check(kWholeNumber)
      ->check(CLI::Range(uint32_t{2}, kMaxNodes))
      ->capture_default_str();
  remove->add_option("--index", index, "0-based position of the node removed")
      ->check(kWholeNumber)
      ->capture_default_str();
  add_keys(remove, &keys, "keys user-1 .. user-K");
  add_vnodes(remove);
  add_epsilon(remove);
  add_json(remove);

  CLI::App* balance = app.add_subcommand(
      "balance", "how evenly the key space spreads (ring schemes exactly, others by counting)");
  add_algo(balance);
  balance->add_option("--nodes", nodes, "nodes")
      ->check(kWholeNumber)
      ->check(node_range)
      ->capture_default_str();
  add_keys(balance, &balance_keys, "keys counted where shares are not exact");
  add_vnodes(balance);
  add_epsilon(balance);
  add_json(balance);

  CLI::App* speed = app.add_subcommand("speed", "nanoseconds per lookup of every scheme");
  speed->add_option("--nodes", nodes, "nodes")
      ->check(kWholeNumber)
      ->check(node_range)
      ->capture_default_str();
  speed->add_option("--seconds", seconds, "measuring time per scheme")
      ->check(kFiniteNumber)
      ->check(CLI::Range(0.01, 60.0))
      ->capture_default_str();
  add_vnodes(speed);
  add_epsilon(speed);
  add_json(speed);

  CLI::App* memory = app.add_subcommand("memory", "bytes of every scheme's lookup structure");
  memory->add_option("--nodes", nodes, "nodes")
      ->check(kWholeNumber)
      ->check(node_range)
      ->capture_default_str();
  add_vnodes(memory);
  add_epsilon(memory);
  add_json(memory);

  CLI::App* cmp = app.add_subcommand(
      "compare", "every scheme side by side: moved vs least, balance, memory, speed");
  cmp->add_option("--from", compare.from, "nodes before")
      ->check(kWholeNumber)
      ->check(node_range)
      ->capture_default_str();
  cmp->add_option("--to", compare.to, "nodes after")
      ->check(kWholeNumber)
      ->check(node_range)
      ->capture_default_str();
  add_keys(cmp, &compare.keys, "keys moved (user-1 .. user-K)");
  cmp->add_option("--balance-keys", compare.balance_keys,
                  "keys counted for balance where shares are not exact")
      ->check(kWholeNumber)
      ->check(CLI::Range(uint64_t{1}, kMaxKeys))
      ->capture_default_str();
  cmp->add_option("--seconds", compare.speed_seconds, "measuring time per scheme")
      ->check(kFiniteNumber)
      ->check(CLI::Range(0.01, 60.0))
      ->capture_default_str();
  add_vnodes(cmp);
  add_epsilon(cmp);
  add_json(cmp);

  CLI::App* jump = app.add_subcommand("jump", "print JumpConsistentHash(KEY, BUCKETS)");
  jump->add_option("KEY", jump_key, "64-bit unsigned key, decimal or 0x hex")->required();
  jump->add_option("BUCKETS", buckets, "number of buckets, 1 to 2147483647")
      ->required()
      ->check(kWholeNumber)
      ->check(CLI::Range(int32_t{1}, int32_t{2147483647}));
  add_json(jump);

  CLI::App* crc = app.add_subcommand("crc16", "print CRC16-XMODEM of STRING (decimal)");
  crc->add_option("STRING", text, "the bytes to checksum")->required();
  add_json(crc);

  CLI::App* slot = app.add_subcommand("slot", "print the Redis Cluster slot of KEY");
  slot->add_option("KEY", text, "the key ({hash tag} honoured)")->required();
  add_json(slot);

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->get_name() == argv[1];
    if (!known) {
      return Usage(std::string("unknown command \"") + argv[1] +
                   "\"; use move, remove, balance, speed, memory, compare, jump, crc16 or slot.");
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    return Usage(std::string(e.what()) + "; run chord-placement --help for usage.");
  }

  Scheme scheme = Scheme::kModulo;
  for (CLI::App* sub : {move, remove, balance}) {
    if (!sub->parsed()) continue;
    if (auto rc = CheckScheme(algo, &scheme)) return *rc;
    if (auto rc = CheckFlagsApply(*sub, scheme)) return *rc;
  }
  if (move->parsed()) {
    if (auto rc = CheckMembership(scheme, std::max(from, to), flags.options)) return *rc;
    return pl::cli::RunMoveCommand(flags, scheme, from, to, keys);
  }
  if (remove->parsed()) {
    if (index >= nodes) {
      return Usage("--index " + std::to_string(index) + " is not a node of " +
                   std::to_string(nodes) + "; use 0 to " + std::to_string(nodes - 1) + ".");
    }
    if (auto rc = CheckMembership(scheme, nodes, flags.options)) return *rc;
    return pl::cli::RunRemoveCommand(flags, scheme, nodes, index, keys);
  }
  if (balance->parsed()) {
    if (auto rc = CheckMembership(scheme, nodes, flags.options)) return *rc;
    return pl::cli::RunBalanceCommand(flags, scheme, nodes, balance_keys);
  }
  if (speed->parsed()) {
    if (auto rc = CheckPoints(nodes, flags.options)) return *rc;
    return pl::cli::RunSpeedCommand(flags, nodes, seconds);
  }
  if (memory->parsed()) {
    if (auto rc = CheckPoints(nodes, flags.options)) return *rc;
    return pl::cli::RunMemoryCommand(flags, nodes);
  }
  if (cmp->parsed()) {
    compare.base = flags.options;
    if (auto rc = CheckPoints(std::max(compare.from, compare.to), flags.options)) return *rc;
    if (std::max(compare.from, compare.to) > pl::kRedisSlots) {
      return Usage("compare includes redis, which has 16384 slots; use at most 16384 nodes.");
    }
    return pl::cli::RunCompareCommand(flags, compare);
  }
  if (jump->parsed()) {
    uint64_t key = 0;
    if (!ParseUint64(jump_key, &key)) {
      return Usage("KEY \"" + jump_key +
                   "\" is not an unsigned 64-bit integer; give it in decimal or as 0x hex.");
    }
    return pl::cli::RunJumpCommand(flags, key, buckets);
  }
  if (crc->parsed()) return pl::cli::RunCrc16Command(flags, text);
  if (slot->parsed()) return pl::cli::RunSlotCommand(flags, text);
  return Usage("no command given; run chord-placement --help for usage.");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::bad_alloc&) {
    return Usage(
        "this machine ran out of memory for the structures asked for; use fewer nodes, "
        "vnodes or keys.");
  }
}
