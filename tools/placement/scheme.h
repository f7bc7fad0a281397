// The lab's catalogue of placement schemes: their names on the command line, what each
// stands for, and a factory. Any thread (each made Placement belongs to one).
#ifndef CHORD_TOOLS_PLACEMENT_SCHEME_H_
#define CHORD_TOOLS_PLACEMENT_SCHEME_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tools/placement/maglev.h"
#include "tools/placement/placement.h"

namespace chord::placement {

enum class Scheme {
  kModulo,
  kRing,     // HashRing, --vnodes points per node (1 = the plain ring)
  kRingMap,  // the same ring in a std::map
  kKetama,
  kJump,
  kRendezvous,
  kMaglev,
  kBounded,  // bounded loads on a HashRing
  kRedis,
  kKademlia,
};

struct SchemeOptions {
  uint32_t vnodes = 100;       // ring, ring-map, bounded
  double epsilon = 0.25;       // bounded
  uint64_t expected_keys = 0;  // bounded: K of the capacity bound (0: keys placed so far)
  uint32_t maglev_table_size = kMaglevDefaultTableSize;
};

// Every scheme, in the order tables list them.
[[nodiscard]] std::span<const Scheme> AllSchemes();
[[nodiscard]] std::string_view SchemeName(Scheme scheme);
[[nodiscard]] std::optional<Scheme> ParseScheme(std::string_view name);
// "modulo, ring, ring-map, ..." for error messages and --help.
[[nodiscard]] std::string SchemeNameList();
// Whether growth moves keys only to new nodes (by definition, not measurement).
[[nodiscard]] bool IsMonotone(Scheme scheme);
// Whether the structure gives each node's exact share of the key space (ring arcs, Ketama
// arcs, Maglev's table), so balance needs no counted keys.
[[nodiscard]] bool HasExactShares(Scheme scheme);
// Whether the scheme uses SchemeOptions::vnodes.
[[nodiscard]] bool UsesVnodes(Scheme scheme);

[[nodiscard]] std::unique_ptr<Placement> MakePlacement(Scheme scheme, const SchemeOptions& options);

}  // namespace chord::placement

#endif  // CHORD_TOOLS_PLACEMENT_SCHEME_H_
