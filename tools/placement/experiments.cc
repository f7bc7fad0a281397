#include "tools/placement/experiments.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tools/placement/bounded_load_ring.h"
#include "tools/placement/crc16.h"
#include "tools/placement/node_names.h"

namespace chord::placement {
namespace {

// Bounded loads needs K for its bound; every other scheme ignores it.
SchemeOptions WithKeys(SchemeOptions options, uint64_t keys) {
  if (options.expected_keys == 0) options.expected_keys = keys;
  return options;
}

std::vector<uint32_t> PlaceAll(Placement& placement, std::span<const KeyHash> keys) {
  std::vector<uint32_t> owners;
  owners.reserve(keys.size());
  for (const KeyHash& key : keys) owners.push_back(placement.Place(key));
  return owners;
}

std::vector<uint64_t> Counts(const std::vector<uint32_t>& owners, size_t nodes) {
  std::vector<uint64_t> counts(nodes, 0);
  for (const uint32_t owner : owners) ++counts[owner];
  return counts;
}

double Fraction(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

MoveReport RunMove(Scheme scheme, const SchemeOptions& options, uint32_t from, uint32_t to,
                   std::span<const KeyHash> keys) {
  MoveReport r;
  r.keys = keys.size();
  r.nodes = NodeNames(std::max(from, to));
  const std::span<const std::string> all(r.nodes);
  auto placement = MakePlacement(scheme, WithKeys(options, keys.size()));
  placement->SetNodes(all.first(from));
  const std::vector<uint32_t> before = PlaceAll(*placement, keys);
  placement->SetNodes(all.first(to));
  const std::vector<uint32_t> after = PlaceAll(*placement, keys);
  // Node i is the same name in both lists, so indices compare directly.
  const uint32_t common = std::min(from, to);
  for (size_t k = 0; k < keys.size(); ++k) {
    if (before[k] == after[k]) continue;
    ++r.moved;
    if (before[k] < common && after[k] < common) ++r.moved_between_old;
  }
  r.moved_fraction = Fraction(r.moved, r.keys);
  r.ideal_fraction = Fraction(std::max(from, to) - common, std::max(from, to));
  r.before = Counts(before, from);
  r.after = Counts(after, to);
  if (scheme == Scheme::kBounded) {
    r.capacity = BoundedLoadCapacity(options.epsilon, keys.size(), to);
  }
  return r;
}

RemoveReport RunRemove(Scheme scheme, const SchemeOptions& options, uint32_t nodes, uint32_t index,
                       std::span<const KeyHash> keys) {
  RemoveReport r;
  r.keys = keys.size();
  r.before_nodes = NodeNames(nodes);
  r.removed = r.before_nodes[index];
  r.after_nodes = r.before_nodes;
  r.after_nodes.erase(r.after_nodes.begin() + index);
  auto placement = MakePlacement(scheme, WithKeys(options, keys.size()));
  placement->SetNodes(r.before_nodes);
  const std::vector<uint32_t> before = PlaceAll(*placement, keys);
  placement->SetNodes(r.after_nodes);
  const std::vector<uint32_t> after = PlaceAll(*placement, keys);
  uint64_t on_removed = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    const bool was_on_removed = before[k] == index;
    on_removed += was_on_removed ? 1 : 0;
    // Compare names: the nodes after the removed one moved down one index.
    if (r.before_nodes[before[k]] == r.after_nodes[after[k]]) continue;
    ++r.moved;
    if (!was_on_removed) ++r.moved_between_old;
  }
  r.moved_fraction = Fraction(r.moved, r.keys);
  r.ideal_fraction = Fraction(on_removed, r.keys);
  r.before = Counts(before, nodes);
  r.after = Counts(after, nodes - 1);
  return r;
}

BalanceReport RunBalance(Scheme scheme, const SchemeOptions& options, uint32_t nodes,
                         std::span<const KeyHash> keys) {
  BalanceReport r;
  auto placement = MakePlacement(scheme, WithKeys(options, keys.size()));
  placement->SetNodes(NodeNames(nodes));
  std::vector<double> shares;
  if (HasExactShares(scheme)) {
    shares = placement->ExactShares();
    r.method = scheme == Scheme::kMaglev ? "table" : "arcs";
  } else {
    r.method = "keys";
    r.keys = keys.size();
    const std::vector<uint64_t> counts = Counts(PlaceAll(*placement, keys), nodes);
    shares.assign(counts.begin(), counts.end());
    if (scheme == Scheme::kBounded) {
      r.capacity = BoundedLoadCapacity(options.epsilon, keys.size(), nodes);
      r.max_load = *std::max_element(counts.begin(), counts.end());
    }
  }
  r.stats = SummarizeShares(shares);
  return r;
}

double MeasureLookupNs(Placement& placement, std::span<const KeyHash> keys, double seconds) {
  using Clock = std::chrono::steady_clock;
  constexpr size_t kBetweenClockReads = 256;
  if (keys.empty()) return 0;
  double best = 0;
  uint64_t sink = 0;
  for (int run = 0; run < 3; ++run) {
    const auto start = Clock::now();
    const auto budget = std::chrono::duration<double>(seconds / 3);
    uint64_t lookups = 0;
    size_t next = 0;
    do {
      for (size_t i = 0; i < kBetweenClockReads; ++i) {
        if (next == 0) placement.ClearLoads();  // bounded loads: each pass places K keys anew
        sink += placement.Place(keys[next]);
        next = next + 1 == keys.size() ? 0 : next + 1;
      }
      lookups += kBetweenClockReads;
    } while (Clock::now() - start < budget);
    const double ns =
        std::chrono::duration<double, std::nano>(Clock::now() - start).count() / lookups;
    best = run == 0 ? ns : std::min(best, ns);
  }
  // Keep the lookups from being optimized away.
  if (sink == 1) std::fputs("", stderr);
  return best;
}

std::vector<KeyHashCost> MeasureKeyHashes(double seconds) {
  using Clock = std::chrono::steady_clock;
  constexpr uint64_t kKeys = 4096;
  std::vector<std::string> keys;
  for (uint64_t i = 1; i <= kKeys; ++i) keys.push_back(UserKey(i));
  uint64_t sink = 0;
  auto measure = [&](auto hash) {
    const auto start = Clock::now();
    const auto budget = std::chrono::duration<double>(seconds / 4);
    uint64_t hashed = 0;
    do {
      for (const std::string& key : keys) sink += hash(key);
      hashed += keys.size();
    } while (Clock::now() - start < budget);
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / hashed;
  };
  std::vector<KeyHashCost> costs;
  costs.push_back({"sha256", "modulo, ring, jump, rendezvous, maglev, bounded",
                   measure([](const std::string& k) { return Sha256(k)[0]; })});
  costs.push_back({"md5", "ketama", measure([](const std::string& k) { return Md5(k)[0]; })});
  costs.push_back({"sha1", "kademlia", measure([](const std::string& k) { return Sha1(k)[0]; })});
  costs.push_back(
      {"crc16-slot", "redis", measure([](const std::string& k) { return RedisKeySlot(k); })});
  if (sink == 1) std::fputs("", stderr);
  return costs;
}

std::string Variant::Label() const {
  std::string label(SchemeName(scheme));
  char buf[64];
  if (scheme == Scheme::kBounded) {
    std::snprintf(buf, sizeof(buf), " e=%g", options.epsilon);
    label += buf;
  }
  if (UsesVnodes(scheme)) label += " V=" + std::to_string(options.vnodes);
  return label;
}

std::vector<Variant> CompareVariants(const SchemeOptions& base) {
  std::vector<Variant> variants;
  for (const Scheme scheme : AllSchemes()) {
    if ((scheme == Scheme::kRing || scheme == Scheme::kBounded) && base.vnodes != 1) {
      SchemeOptions one = base;
      one.vnodes = 1;
      variants.push_back({scheme, one});
    }
    variants.push_back({scheme, base});
  }
  return variants;
}

std::vector<CompareRow> RunCompare(const CompareOptions& options) {
  // The three key sets are prefixes of user-1, user-2, ...: hash the longest once.
  constexpr uint64_t kSpeedKeys = 65536;
  const std::vector<KeyHash> all =
      HashUserKeys(std::max({options.keys, options.balance_keys, kSpeedKeys}));
  const std::span<const KeyHash> keys(all.data(), options.keys);
  const std::span<const KeyHash> balance_keys(all.data(), options.balance_keys);
  const std::span<const KeyHash> speed_keys(all.data(), kSpeedKeys);
  std::vector<CompareRow> rows;
  for (const Variant& variant : CompareVariants(options.base)) {
    CompareRow row{variant, {}, {}, 0, 0};
    row.move = RunMove(variant.scheme, variant.options, options.from, options.to, keys);
    row.balance = RunBalance(variant.scheme, variant.options, options.to, balance_keys);
    auto placement = MakePlacement(variant.scheme, WithKeys(variant.options, speed_keys.size()));
    placement->SetNodes(NodeNames(options.to));
    row.memory_bytes = placement->MemoryBytes();
    row.ns_per_lookup = MeasureLookupNs(*placement, speed_keys, options.speed_seconds);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace chord::placement
