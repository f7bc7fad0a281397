#include "tools/placement/cli/commands.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "tools/placement/crc16.h"
#include "tools/placement/jump_hash.h"
#include "tools/placement/key_hash.h"
#include "tools/placement/node_names.h"

namespace chord::placement::cli {
namespace {

using nlohmann::json;

std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Format(const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return buf;
}

std::string Label(Scheme scheme, const SchemeOptions& options) {
  return Variant{scheme, options}.Label();
}

// The scheme's identity in every JSON object: name, and the parameters it uses.
json SchemeJson(Scheme scheme, const SchemeOptions& options) {
  json j = {{"algo", std::string(SchemeName(scheme))}, {"label", Label(scheme, options)}};
  if (UsesVnodes(scheme)) j["vnodes"] = options.vnodes;
  if (scheme == Scheme::kBounded) j["epsilon"] = options.epsilon;
  if (scheme == Scheme::kMaglev) j["table_size"] = options.maglev_table_size;
  return j;
}

json StatsJson(const BalanceReport& r) {
  json j = {{"method", r.method},
            {"max_over_mean", r.stats.max_over_mean},
            {"min_over_mean", r.stats.min_over_mean},
            {"p99_over_mean", r.stats.p99_over_mean},
            {"ci99_low", r.stats.ci99_low},
            {"ci99_high", r.stats.ci99_high},
            {"stddev_over_mean", r.stats.stddev_over_mean}};
  if (r.method == "keys") j["keys"] = r.keys;
  if (r.capacity > 0) {
    j["capacity"] = r.capacity;
    j["max_load"] = r.max_load;
  }
  return j;
}

std::string Percent(double fraction) { return Format("%.1f%%", 100.0 * fraction); }

std::string Bytes(size_t bytes) {
  if (bytes >= (size_t{1} << 20)) return Format("%.1f MiB", bytes / 1048576.0);
  if (bytes >= 1024) return Format("%.1f KiB", bytes / 1024.0);
  return Format("%zu B", bytes);
}

// Keys and strings come from the command line and need not be UTF-8: invalid bytes print as
// U+FFFD rather than failing.
// Why a scheme cannot hold `nodes` nodes, or empty when it can.
std::string SkipReason(const Variant& v, uint32_t nodes) {
  if (v.scheme == Scheme::kMaglev && nodes > v.options.maglev_table_size) {
    return "its table has " + std::to_string(v.options.maglev_table_size) +
           " entries, fewer than the nodes";
  }
  if (v.scheme == Scheme::kRedis && nodes > kRedisSlots) return "it has 16384 slots";
  return "";
}

struct Skipped {
  std::string label;
  std::string reason;
};

json SkippedJson(const std::vector<Skipped>& skipped) {
  json list = json::array();
  for (const Skipped& s : skipped) list.push_back({{"label", s.label}, {"reason", s.reason}});
  return list;
}

std::string SkippedText(const std::vector<Skipped>& skipped, uint32_t nodes) {
  std::string t;
  for (const Skipped& s : skipped) {
    t += "  (" + s.label + " not run on " + std::to_string(nodes) + " nodes: " + s.reason + ")\n";
  }
  return t;
}

void PrintJson(const json& j) {
  std::cout << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
}

std::string KeysPhrase(uint64_t keys) {
  return std::to_string(keys) + " keys (user-1 .. user-" + std::to_string(keys) + ")";
}

// Rows "name  before  after" for two memberships that share their first nodes.
std::string CountsTable(const std::vector<std::string>& before_nodes,
                        const std::vector<uint64_t>& before,
                        const std::vector<std::string>& after_nodes,
                        const std::vector<uint64_t>& after) {
  std::string t = "  node              before    after\n";
  std::unordered_map<std::string, size_t> before_index;
  std::unordered_map<std::string, size_t> after_index;
  for (size_t i = 0; i < before_nodes.size(); ++i) before_index.emplace(before_nodes[i], i);
  for (size_t i = 0; i < after_nodes.size(); ++i) after_index.emplace(after_nodes[i], i);
  std::vector<std::string> names = before_nodes;
  for (const std::string& name : after_nodes) {
    if (before_index.count(name) == 0) names.push_back(name);
  }
  constexpr size_t kMaxRows = 40;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i == kMaxRows) {
      t += Format("  ... %zu more nodes (--json lists all)\n", names.size() - kMaxRows);
      break;
    }
    auto count = [&](const std::unordered_map<std::string, size_t>& index,
                     const std::vector<uint64_t>& counts) {
      const auto it = index.find(names[i]);
      return it == index.end() ? std::string("-") : std::to_string(counts[it->second]);
    };
    t += Format("  %-16s %7s  %7s\n", names[i].c_str(), count(before_index, before).c_str(),
                count(after_index, after).c_str());
  }
  return t;
}

}  // namespace

int RunMoveCommand(const CommonFlags& flags, Scheme scheme, uint32_t from, uint32_t to,
                   uint64_t keys) {
  const std::vector<KeyHash> hashed = HashUserKeys(keys);
  const MoveReport r = RunMove(scheme, flags.options, from, to, hashed);
  if (flags.json) {
    json j = SchemeJson(scheme, flags.options);
    j.update({{"experiment", "move"},
              {"from", from},
              {"to", to},
              {"keys", r.keys},
              {"moved", r.moved},
              {"moved_fraction", r.moved_fraction},
              {"ideal_fraction", r.ideal_fraction},
              {"moved_between_old", r.moved_between_old},
              {"nodes", r.nodes},
              {"before", r.before},
              {"after", r.after}});
    if (scheme == Scheme::kBounded) j["capacity"] = r.capacity;
    PrintJson(j);
    return kExitOk;
  }
  const std::vector<std::string> before_nodes(r.nodes.begin(), r.nodes.begin() + from);
  const std::vector<std::string> after_nodes(r.nodes.begin(), r.nodes.begin() + to);
  std::string t = Format("move: %s, %u -> %u nodes, %s\n", Label(scheme, flags.options).c_str(),
                         from, to, KeysPhrase(keys).c_str());
  t += CountsTable(before_nodes, r.before, after_nodes, r.after);
  t += Format("moved %" PRIu64 " of %" PRIu64
              " keys (%s); a perfectly even scheme moves %s; "
              "%" PRIu64 " moved between nodes present before and after\n",
              r.moved, r.keys, Percent(r.moved_fraction).c_str(), Percent(r.ideal_fraction).c_str(),
              r.moved_between_old);
  if (scheme == Scheme::kBounded) {
    t += Format("capacity ceil((1+%g) * %" PRIu64 " / %u) = %" PRIu64 " keys per node\n",
                flags.options.epsilon, r.keys, to, r.capacity);
  }
  std::cout << t;
  return kExitOk;
}

int RunRemoveCommand(const CommonFlags& flags, Scheme scheme, uint32_t nodes, uint32_t index,
                     uint64_t keys) {
  const std::vector<KeyHash> hashed = HashUserKeys(keys);
  const RemoveReport r = RunRemove(scheme, flags.options, nodes, index, hashed);
  if (flags.json) {
    json j = SchemeJson(scheme, flags.options);
    j.update({{"experiment", "remove"},
              {"nodes", nodes},
              {"index", index},
              {"removed", r.removed},
              {"keys", r.keys},
              {"moved", r.moved},
              {"moved_fraction", r.moved_fraction},
              {"ideal_fraction", r.ideal_fraction},
              {"moved_between_old", r.moved_between_old},
              {"before_nodes", r.before_nodes},
              {"before", r.before},
              {"after_nodes", r.after_nodes},
              {"after", r.after}});
    PrintJson(j);
    return kExitOk;
  }
  std::string t = Format("remove: %s, node %u (%s) of %u taken out of the list, %s\n",
                         Label(scheme, flags.options).c_str(), index, r.removed.c_str(), nodes,
                         KeysPhrase(keys).c_str());
  t += CountsTable(r.before_nodes, r.before, r.after_nodes, r.after);
  t += Format("moved %" PRIu64 " of %" PRIu64
              " keys (%s); only the removed node's %s had to; "
              "%" PRIu64 " keys of surviving nodes moved anyway\n",
              r.moved, r.keys, Percent(r.moved_fraction).c_str(), Percent(r.ideal_fraction).c_str(),
              r.moved_between_old);
  if (scheme == Scheme::kJump) {
    t += "(jump numbers buckets: servers[jump(key, n)] over the shortened list re-indexes every "
         "server after the removed one)\n";
  }
  std::cout << t;
  return kExitOk;
}

int RunBalanceCommand(const CommonFlags& flags, Scheme scheme, uint32_t nodes, uint64_t keys) {
  const std::vector<KeyHash> hashed =
      HasExactShares(scheme) ? std::vector<KeyHash>{} : HashUserKeys(keys);
  const BalanceReport r = RunBalance(scheme, flags.options, nodes, hashed);
  if (flags.json) {
    json j = SchemeJson(scheme, flags.options);
    j.update({{"experiment", "balance"}, {"nodes", nodes}});
    j.update(StatsJson(r));
    PrintJson(j);
    return kExitOk;
  }
  std::string how = r.method == "arcs"    ? "exact arc lengths"
                    : r.method == "table" ? "exact table entries"
                                          : KeysPhrase(r.keys) + " counted";
  std::string t = Format("balance: %s on %u nodes (%s)\n", Label(scheme, flags.options).c_str(),
                         nodes, how.c_str());
  t += Format("  share / mean: max %.3f  p99 %.3f  99%% interval %.3f - %.3f  min %.3f\n",
              r.stats.max_over_mean, r.stats.p99_over_mean, r.stats.ci99_low, r.stats.ci99_high,
              r.stats.min_over_mean);
  t += Format("  spread (standard deviation / mean) %s\n",
              Percent(r.stats.stddev_over_mean).c_str());
  if (r.capacity > 0) {
    t += Format("  fullest node %" PRIu64 " keys, capacity %" PRIu64 "\n", r.max_load, r.capacity);
  }
  std::cout << t;
  return kExitOk;
}

int RunSpeedCommand(const CommonFlags& flags, uint32_t nodes, double seconds) {
  const std::vector<KeyHash> keys = HashUserKeys(65536);
  struct Row {
    Variant variant;
    double ns;
  };
  std::vector<Row> rows;
  double jump_ns = 0;
  std::vector<Skipped> skipped;
  for (Variant v : CompareVariants(flags.options)) {
    if (const std::string why = SkipReason(v, nodes); !why.empty()) {
      skipped.push_back({v.Label(), why});
      continue;
    }
    v.options.expected_keys = keys.size();  // bounded: each pass places these keys
    auto placement = MakePlacement(v.scheme, v.options);
    placement->SetNodes(NodeNames(nodes));
    const double ns = MeasureLookupNs(*placement, keys, seconds);
    if (v.scheme == Scheme::kJump) jump_ns = ns;
    rows.push_back({v, ns});
  }
  const std::vector<KeyHashCost> hashes = MeasureKeyHashes(seconds);
  if (flags.json) {
    json schemes = json::array();
    for (const Row& row : rows) {
      json j = SchemeJson(row.variant.scheme, row.variant.options);
      j["ns_per_lookup"] = row.ns;
      j["ratio_to_jump"] = jump_ns > 0 ? row.ns / jump_ns : 0;
      schemes.push_back(j);
    }
    json key_hashes = json::array();
    for (const KeyHashCost& h : hashes) {
      key_hashes.push_back({{"hash", h.hash}, {"used_by", h.used_by}, {"ns", h.ns}});
    }
    PrintJson({{"experiment", "speed"},
               {"nodes", nodes},
               {"lookup_keys", keys.size()},
               {"schemes", schemes},
               {"skipped", SkippedJson(skipped)},
               {"key_hashes", key_hashes}});
    return kExitOk;
  }
  std::string t = Format(
      "lookup speed on %u nodes: ns per lookup of a key hashed beforehand, "
      "65536 keys cycled, best of 3 runs\n",
      nodes);
  t += "  scheme                       ns/lookup   / jump\n";
  for (const Row& row : rows) {
    t += Format("  %-26s %11.1f  %7.2f\n", row.variant.Label().c_str(), row.ns,
                jump_ns > 0 ? row.ns / jump_ns : 0);
  }
  t += SkippedText(skipped, nodes);
  t += "key hashes (ns per key, paid once per lookup on top):\n";
  for (const KeyHashCost& h : hashes) {
    t += Format("  %-10s %8.1f   %s\n", h.hash.c_str(), h.ns, h.used_by.c_str());
  }
  std::cout << t;
  return kExitOk;
}

int RunMemoryCommand(const CommonFlags& flags, uint32_t nodes) {
  struct Row {
    Variant variant;
    size_t bytes;
  };
  std::vector<Row> rows;
  std::vector<Skipped> skipped;
  for (const Variant& v : CompareVariants(flags.options)) {
    if (const std::string why = SkipReason(v, nodes); !why.empty()) {
      skipped.push_back({v.Label(), why});
      continue;
    }
    auto placement = MakePlacement(v.scheme, v.options);
    placement->SetNodes(NodeNames(nodes));
    rows.push_back({v, placement->MemoryBytes()});
  }
  if (flags.json) {
    json schemes = json::array();
    for (const Row& row : rows) {
      json j = SchemeJson(row.variant.scheme, row.variant.options);
      j["bytes"] = row.bytes;
      schemes.push_back(j);
    }
    PrintJson({{"experiment", "memory"},
               {"nodes", nodes},
               {"schemes", schemes},
               {"skipped", SkippedJson(skipped)}});
    return kExitOk;
  }
  std::string t = Format("memory of the lookup structure for %u nodes\n", nodes);
  t += "  scheme                            bytes        size\n";
  for (const Row& row : rows) {
    t += Format("  %-26s %13zu  %10s\n", row.variant.Label().c_str(), row.bytes,
                Bytes(row.bytes).c_str());
  }
  t += SkippedText(skipped, nodes);
  t += "(ring-map counts the heap bytes its std::map nodes requested; malloc adds its own "
       "overhead per node on top)\n";
  std::cout << t;
  return kExitOk;
}

int RunCompareCommand(const CommonFlags& flags, const CompareOptions& options) {
  const std::vector<CompareRow> rows = RunCompare(options);
  if (flags.json) {
    json schemes = json::array();
    for (const CompareRow& row : rows) {
      json j = SchemeJson(row.variant.scheme, row.variant.options);
      j.update({{"moved", row.move.moved},
                {"moved_fraction", row.move.moved_fraction},
                {"ideal_fraction", row.move.ideal_fraction},
                {"moved_between_old", row.move.moved_between_old},
                {"balance", StatsJson(row.balance)},
                {"memory_bytes", row.memory_bytes},
                {"ns_per_lookup", row.ns_per_lookup}});
      schemes.push_back(j);
    }
    PrintJson({{"experiment", "compare"},
               {"from", options.from},
               {"to", options.to},
               {"keys", options.keys},
               {"balance_keys", options.balance_keys},
               {"schemes", schemes}});
    return kExitOk;
  }
  std::string t = Format("compare: %u -> %u nodes, %s; balance and memory at %u nodes\n",
                         options.from, options.to, KeysPhrase(options.keys).c_str(), options.to);
  t += "  scheme                    moved   (even)  old->old  max/mean  99% interval"
       "         memory  ns/lookup\n";
  for (const CompareRow& row : rows) {
    t += Format("  %-22s %7s %8s %9" PRIu64 " %9.2f   %.2f - %.2f %14s %10.1f\n",
                row.variant.Label().c_str(), Percent(row.move.moved_fraction).c_str(),
                Percent(row.move.ideal_fraction).c_str(), row.move.moved_between_old,
                row.balance.stats.max_over_mean, row.balance.stats.ci99_low,
                row.balance.stats.ci99_high, Bytes(row.memory_bytes).c_str(), row.ns_per_lookup);
  }
  t += Format(
      "(even): what a perfectly even scheme moves, the new nodes' share. Balance from "
      "exact shares for ring, ring-map, ketama and maglev; from %" PRIu64
      " counted keys for the others. ns/lookup excludes hashing the key.\n",
      options.balance_keys);
  std::cout << t;
  return kExitOk;
}

int RunJumpCommand(const CommonFlags& flags, uint64_t key, int32_t buckets) {
  const int32_t bucket = JumpConsistentHash(key, buckets);
  if (flags.json) {
    PrintJson({{"key", key}, {"buckets", buckets}, {"bucket", bucket}});
  } else {
    std::cout << bucket << "\n";
  }
  return kExitOk;
}

int RunCrc16Command(const CommonFlags& flags, const std::string& text) {
  const uint16_t crc = Crc16Xmodem(text);
  if (flags.json) {
    PrintJson({{"input", text}, {"crc16", crc}, {"hex", Format("0x%04X", crc)}});
  } else {
    std::cout << crc << "\n";
  }
  return kExitOk;
}

int RunSlotCommand(const CommonFlags& flags, const std::string& key) {
  const uint16_t slot = RedisKeySlot(key);
  if (flags.json) {
    PrintJson({{"key", key}, {"hash_tag", std::string(RedisHashTag(key))}, {"slot", slot}});
  } else {
    std::cout << slot << "\n";
  }
  return kExitOk;
}

}  // namespace chord::placement::cli
