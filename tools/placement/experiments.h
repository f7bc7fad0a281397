// The lab's experiments: what moves when nodes are added or one is removed, how evenly keys
// spread, how fast a lookup is and how much memory the structure takes, each for one scheme,
// and all of them side by side. Results are plain structs; the CLI prints them. Keys are the
// caller's (normally HashUserKeys(K)). Reads the steady clock only to time lookups.
// Any thread; no shared state.
#ifndef CHORD_TOOLS_PLACEMENT_EXPERIMENTS_H_
#define CHORD_TOOLS_PLACEMENT_EXPERIMENTS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tools/placement/key_hash.h"
#include "tools/placement/scheme.h"
#include "tools/placement/share_stats.h"

namespace chord::placement {

struct MoveReport {
  uint64_t keys = 0;
  uint64_t moved = 0;
  double moved_fraction = 0;
  double ideal_fraction = 0;       // what a perfectly even scheme moves: the added or dropped
                                   // nodes' share, |to - from| / max(from, to)
  uint64_t moved_between_old = 0;  // moved from one node present before and after to another
  std::vector<std::string> nodes;  // names of the larger membership; before/after index it
  std::vector<uint64_t> before;    // keys per node, `from` entries
  std::vector<uint64_t> after;     // keys per node, `to` entries
  uint64_t capacity = 0;           // bounded loads: the per-node bound after the change
};

// Grows (appending nodes) or shrinks (dropping the last nodes) from `from` to `to` nodes.
[[nodiscard]] MoveReport RunMove(Scheme scheme, const SchemeOptions& options, uint32_t from,
                                 uint32_t to, std::span<const KeyHash> keys);

struct RemoveReport {
  std::string removed;  // name of the node taken out
  uint64_t keys = 0;
  uint64_t moved = 0;
  double moved_fraction = 0;
  double ideal_fraction = 0;       // the removed node's keys / all keys: what had to move
  uint64_t moved_between_old = 0;  // keys not on the removed node that moved anyway
  std::vector<std::string> before_nodes;
  std::vector<uint64_t> before;
  std::vector<std::string> after_nodes;
  std::vector<uint64_t> after;
};

// Removes node `index` (0-based, from the middle of the list: later nodes shift down one).
[[nodiscard]] RemoveReport RunRemove(Scheme scheme, const SchemeOptions& options, uint32_t nodes,
                                     uint32_t index, std::span<const KeyHash> keys);

struct BalanceReport {
  std::string method;  // "arcs" (exact ring arcs), "table" (Maglev entries) or "keys" (counted)
  uint64_t keys = 0;   // keys counted; 0 for exact methods
  ShareStats stats;
  uint64_t capacity = 0;  // bounded loads: the bound
  uint64_t max_load = 0;  // bounded loads: the fullest node
};

[[nodiscard]] BalanceReport RunBalance(Scheme scheme, const SchemeOptions& options, uint32_t nodes,
                                       std::span<const KeyHash> keys);

// Mean nanoseconds per Place() over `keys` (cycled), the best of three runs of about
// `seconds` / 3 each (the clock is read every 256 lookups). Bounded loads starts every pass
// over the keys with empty loads, so each pass places the same K keys under the same bound.
[[nodiscard]] double MeasureLookupNs(Placement& placement, std::span<const KeyHash> keys,
                                     double seconds);

struct KeyHashCost {
  std::string hash;  // "sha256", "sha1", "md5", "crc16-slot"
  std::string used_by;
  double ns = 0;
};
// What hashing one key costs with each hash the schemes use (keys "user-<i>").
[[nodiscard]] std::vector<KeyHashCost> MeasureKeyHashes(double seconds);

// One configuration of the side-by-side table.
struct Variant {
  Scheme scheme;
  SchemeOptions options;
  [[nodiscard]] std::string Label() const;  // "ring V=100", "bounded e=0.25 V=100", "jump"
};
// The configurations `compare` lists: every scheme; the ring and bounded loads each with 1
// point and with V points per node.
[[nodiscard]] std::vector<Variant> CompareVariants(const SchemeOptions& base);

struct CompareRow {
  Variant variant;
  MoveReport move;
  BalanceReport balance;     // at `to` nodes
  size_t memory_bytes = 0;   // at `to` nodes
  double ns_per_lookup = 0;  // at `to` nodes
};

struct CompareOptions {
  uint32_t from = 3;
  uint32_t to = 4;
  uint64_t keys = 1000;            // moved keys
  uint64_t balance_keys = 100000;  // keys counted for balance where shares are not exact
  double speed_seconds = 0.15;     // per scheme
  SchemeOptions base;
};

[[nodiscard]] std::vector<CompareRow> RunCompare(const CompareOptions& options);

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_EXPERIMENTS_H_
