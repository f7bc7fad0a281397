#include "tools/placement/scheme.h"

#include <array>

#include "tools/placement/bounded_load_ring.h"
#include "tools/placement/hash_ring.h"
#include "tools/placement/jump_hash.h"
#include "tools/placement/kademlia.h"
#include "tools/placement/ketama.h"
#include "tools/placement/map_ring.h"
#include "tools/placement/modulo_placement.h"
#include "tools/placement/redis_slots.h"
#include "tools/placement/rendezvous.h"

namespace chord::placement {
namespace {

struct Entry {
  Scheme scheme;
  std::string_view name;
};

constexpr std::array<Entry, 10> kEntries = {{
    {Scheme::kModulo, "modulo"},
    {Scheme::kRing, "ring"},
    {Scheme::kRingMap, "ring-map"},
    {Scheme::kKetama, "ketama"},
    {Scheme::kJump, "jump"},
    {Scheme::kRendezvous, "rendezvous"},
    {Scheme::kMaglev, "maglev"},
    {Scheme::kBounded, "bounded"},
    {Scheme::kRedis, "redis"},
    {Scheme::kKademlia, "kademlia"},
}};

constexpr std::array<Scheme, 10> kAll = {
    Scheme::kModulo,     Scheme::kRing,   Scheme::kRingMap, Scheme::kKetama, Scheme::kJump,
    Scheme::kRendezvous, Scheme::kMaglev, Scheme::kBounded, Scheme::kRedis,  Scheme::kKademlia};

}  // namespace

std::span<const Scheme> AllSchemes() { return kAll; }

std::string_view SchemeName(Scheme scheme) {
  for (const Entry& e : kEntries) {
    if (e.scheme == scheme) return e.name;
  }
  return "?";
}

std::optional<Scheme> ParseScheme(std::string_view name) {
  for (const Entry& e : kEntries) {
    if (e.name == name) return e.scheme;
  }
  return std::nullopt;
}

std::string SchemeNameList() {
  std::string list;
  for (const Entry& e : kEntries) {
    if (!list.empty()) list += ", ";
    list += e.name;
  }
  return list;
}

bool IsMonotone(Scheme scheme) {
  switch (scheme) {
    case Scheme::kRing:
    case Scheme::kRingMap:
    case Scheme::kKetama:
    case Scheme::kJump:
    case Scheme::kRendezvous:
    case Scheme::kRedis:
    case Scheme::kKademlia:
      return true;
    case Scheme::kModulo:
    case Scheme::kMaglev:
    case Scheme::kBounded:
      return false;
  }
  return false;
}

bool HasExactShares(Scheme scheme) {
  return scheme == Scheme::kRing || scheme == Scheme::kRingMap || scheme == Scheme::kKetama ||
         scheme == Scheme::kMaglev;
}

bool UsesVnodes(Scheme scheme) {
  return scheme == Scheme::kRing || scheme == Scheme::kRingMap || scheme == Scheme::kBounded;
}

std::unique_ptr<Placement> MakePlacement(Scheme scheme, const SchemeOptions& options) {
  switch (scheme) {
    case Scheme::kModulo:
      return std::make_unique<ModuloPlacement>();
    case Scheme::kRing:
      return std::make_unique<HashRing>(options.vnodes);
    case Scheme::kRingMap:
      return std::make_unique<MapRing>(options.vnodes);
    case Scheme::kKetama:
      return std::make_unique<Ketama>();
    case Scheme::kJump:
      return std::make_unique<JumpPlacement>();
    case Scheme::kRendezvous:
      return std::make_unique<Rendezvous>();
    case Scheme::kMaglev:
      return std::make_unique<Maglev>(options.maglev_table_size);
    case Scheme::kBounded:
      return std::make_unique<BoundedLoadRing>(options.vnodes, options.epsilon,
                                               options.expected_keys);
    case Scheme::kRedis:
      return std::make_unique<RedisSlots>();
    case Scheme::kKademlia:
      return std::make_unique<Kademlia>();
  }
  return nullptr;
}

}  // namespace chord::placement
