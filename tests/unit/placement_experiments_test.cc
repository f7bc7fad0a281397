// Tests for the placement lab's experiments and catalogue (tools/placement experiments.h,
// share_stats.h, scheme.h): moved-key counts on growth and removal (including the background
// article's published figures), balance reports, share statistics and scheme names.
// Other expected values were computed in Python (hashlib, integers with 64-bit masks) in a
// scratch script outside the repository, or by hand where noted.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tools/placement/bounded_load_ring.h"
#include "tools/placement/experiments.h"
#include "tools/placement/key_hash.h"
#include "tools/placement/node_names.h"
#include "tools/placement/scheme.h"
#include "tools/placement/share_stats.h"

namespace chord::placement {
namespace {

// "user-1" ... "user-60000", hashed once for the whole file.
std::span<const KeyHash> UserKeys(size_t count) {
  static const std::vector<KeyHash>* const kKeys = new std::vector<KeyHash>(HashUserKeys(60000));
  return std::span<const KeyHash>(*kKeys).first(count);
}

SchemeOptions WithVnodes(uint32_t vnodes) {
  SchemeOptions options;
  options.vnodes = vnodes;
  return options;
}

// ---------------------------------------------------------------------------------------------
// RunMove.

TEST(PlacementRunMoveTest, ModuloThreeToFourMatchesTheArticle) {
  // The background article (SHA-256, server-a.., user-1..user-1000): 756 of 1000 users move;
  // 339/347/314 before and 255/242/259/244 after (also reproduced in Python).
  const MoveReport r = RunMove(Scheme::kModulo, {}, 3, 4, UserKeys(1000));
  EXPECT_EQ(r.keys, 1000u);
  EXPECT_EQ(r.moved, 756u);
  EXPECT_DOUBLE_EQ(r.moved_fraction, 0.756);
  EXPECT_DOUBLE_EQ(r.ideal_fraction, 0.25);
  EXPECT_EQ(r.before, (std::vector<uint64_t>{339, 347, 314}));
  EXPECT_EQ(r.after, (std::vector<uint64_t>{255, 242, 259, 244}));
  EXPECT_EQ(r.nodes, NodeNames(4));
  // Modulo is not monotone: most moved keys go between the old servers.
  EXPECT_EQ(r.moved - r.moved_between_old, r.after[3]);  // server-d's keys all moved
  EXPECT_GT(r.moved_between_old, 400u);
  EXPECT_EQ(r.capacity, 0u);
}

TEST(PlacementRunMoveTest, RingV100ThreeToFourMatchesTheArticle) {
  // The article's ring with 100 virtual nodes: 237 move, all to server-d.
  const MoveReport r = RunMove(Scheme::kRing, WithVnodes(100), 3, 4, UserKeys(1000));
  EXPECT_EQ(r.moved, 237u);
  EXPECT_EQ(r.moved_between_old, 0u);
  EXPECT_EQ(r.before, (std::vector<uint64_t>{367, 317, 316}));
  EXPECT_EQ(r.after, (std::vector<uint64_t>{280, 215, 268, 237}));
  EXPECT_EQ(r.after[3], r.moved);
  // Shrinking back moves the same keys.
  const MoveReport back = RunMove(Scheme::kRing, WithVnodes(100), 4, 3, UserKeys(1000));
  EXPECT_EQ(back.moved, 237u);
  EXPECT_EQ(back.moved_between_old, 0u);
  EXPECT_EQ(back.before, (std::vector<uint64_t>{280, 215, 268, 237}));
  EXPECT_EQ(back.after, (std::vector<uint64_t>{367, 317, 316}));
  EXPECT_DOUBLE_EQ(back.ideal_fraction, 0.25);
}

TEST(PlacementRunMoveTest, JumpTenToTwelveMovesOneSixthToTheNewBuckets) {
  const MoveReport r = RunMove(Scheme::kJump, {}, 10, 12, UserKeys(60000));
  // Python (the paper's code on sha256(key)[:8]): 10002 move, 4949 to bucket 10, 5053 to 11.
  EXPECT_EQ(r.moved, 10002u);
  EXPECT_EQ(r.after[10], 4949u);
  EXPECT_EQ(r.after[11], 5053u);
  EXPECT_EQ(r.moved_between_old, 0u);
  EXPECT_EQ(r.after[10] + r.after[11], r.moved);
  // Binomial(60000, 1/6): sigma = sqrt(60000 * 1/6 * 5/6) / 60000 = 0.00152.
  EXPECT_NEAR(r.moved_fraction, 1.0 / 6, 5 * 0.00152);
  EXPECT_DOUBLE_EQ(r.ideal_fraction, 2.0 / 12);
}

TEST(PlacementRunMoveTest, ModuloTenToTwelveMovesFiveSixths) {
  // A key stays iff h mod 10 == h mod 12, i.e. h mod 60 < 10: 1/6 stay. Python on these keys:
  // 50114 of 60000 move.
  const MoveReport r = RunMove(Scheme::kModulo, {}, 10, 12, UserKeys(60000));
  EXPECT_EQ(r.moved, 50114u);
  EXPECT_NEAR(r.moved_fraction, 5.0 / 6, 5 * 0.00152);
}

TEST(PlacementRunMoveTest, BoundedReportsItsCapacity) {
  SchemeOptions options;
  options.epsilon = 0.25;
  const MoveReport r = RunMove(Scheme::kBounded, options, 3, 4, UserKeys(1000));
  EXPECT_EQ(r.capacity, 313u);  // ceil(1.25 * 1000 / 4)
  for (const uint64_t load : r.after) EXPECT_LE(load, 313u);
  for (const uint64_t load : r.before) EXPECT_LE(load, 417u);  // ceil(1.25 * 1000 / 3)
}

// ---------------------------------------------------------------------------------------------
// RunRemove.

TEST(PlacementRunRemoveTest, JumpReindexesTheNodesAfterTheRemovedOne) {
  // nodes[jump(key, 10)] vs nodes_without_d[jump(key, 9)] in Python, 10,000 keys: 6970 move,
  // 1027 of them from server-d. Roughly: buckets 0-2 stay (3/10), 4-9 shift to another name.
  const RemoveReport r = RunRemove(Scheme::kJump, {}, 10, 3, UserKeys(10000));
  EXPECT_EQ(r.removed, "server-d");
  EXPECT_EQ(r.moved, 6970u);
  EXPECT_EQ(r.before[3], 1027u);
  EXPECT_EQ(r.moved_between_old, 6970u - 1027u);
  EXPECT_DOUBLE_EQ(r.ideal_fraction, 0.1027);
  EXPECT_GT(r.moved_fraction, 0.5);
  EXPECT_EQ(r.after_nodes.size(), 9u);
  EXPECT_EQ(r.after_nodes[3], "server-e");
  EXPECT_EQ(r.after.size(), 9u);
}

TEST(PlacementRunRemoveTest, RingAndRendezvousMoveOnlyTheRemovedNodesKeys) {
  // Python: ring V=100 moves 897 keys, all of server-d's; rendezvous 1024, all of server-d's.
  const RemoveReport ring = RunRemove(Scheme::kRing, WithVnodes(100), 10, 3, UserKeys(10000));
  EXPECT_EQ(ring.moved, 897u);
  EXPECT_EQ(ring.moved, ring.before[3]);
  EXPECT_EQ(ring.moved_between_old, 0u);
  EXPECT_DOUBLE_EQ(ring.moved_fraction, ring.ideal_fraction);
  const RemoveReport rendezvous = RunRemove(Scheme::kRendezvous, {}, 10, 3, UserKeys(10000));
  EXPECT_EQ(rendezvous.moved, 1024u);
  EXPECT_EQ(rendezvous.moved, rendezvous.before[3]);
  EXPECT_EQ(rendezvous.moved_between_old, 0u);
  // Every moved key went somewhere else: the removed name holds nothing after.
  uint64_t total = 0;
  for (const uint64_t count : rendezvous.after) total += count;
  EXPECT_EQ(total, 10000u);
}

// ---------------------------------------------------------------------------------------------
// RunBalance.

TEST(PlacementRunBalanceTest, VirtualNodesShrinkTheSpread) {
  // Exact arcs in Python, N = 100: stddev/mean 0.85920 with V = 1, 0.10032 with V = 100 (the
  // 1/sqrt(V) trend).
  const BalanceReport v1 = RunBalance(Scheme::kRing, WithVnodes(1), 100, {});
  const BalanceReport v100 = RunBalance(Scheme::kRing, WithVnodes(100), 100, {});
  EXPECT_EQ(v1.method, "arcs");
  EXPECT_EQ(v1.keys, 0u);
  EXPECT_NEAR(v1.stats.stddev_over_mean, 0.8591986198732187, 1e-6);
  EXPECT_NEAR(v100.stats.stddev_over_mean, 0.10032016639628463, 1e-6);
  EXPECT_NEAR(v1.stats.max_over_mean, 3.806814462987129, 1e-6);
  EXPECT_NEAR(v100.stats.max_over_mean, 1.1907925495048175, 1e-6);
  EXPECT_GT(v1.stats.stddev_over_mean, 0.5);
  EXPECT_LT(v1.stats.stddev_over_mean, 1.5);
  EXPECT_GT(v100.stats.stddev_over_mean, 0.05);
  EXPECT_LT(v100.stats.stddev_over_mean, 0.2);
}

TEST(PlacementRunBalanceTest, MethodPerScheme) {
  const std::span<const KeyHash> keys = UserKeys(2000);
  for (const Scheme scheme : AllSchemes()) {
    SCOPED_TRACE(std::string(SchemeName(scheme)));
    const BalanceReport r = RunBalance(scheme, WithVnodes(10), 10, keys);
    if (scheme == Scheme::kRing || scheme == Scheme::kRingMap || scheme == Scheme::kKetama) {
      EXPECT_EQ(r.method, "arcs");
      EXPECT_EQ(r.keys, 0u);
    } else if (scheme == Scheme::kMaglev) {
      EXPECT_EQ(r.method, "table");
      EXPECT_EQ(r.keys, 0u);
      // 65537 entries over 10 nodes: 6554 or 6553 each.
      EXPECT_NEAR(r.stats.max_over_mean, 6554 / 6553.7, 1e-9);
      EXPECT_NEAR(r.stats.min_over_mean, 6553 / 6553.7, 1e-9);
    } else {
      EXPECT_EQ(r.method, "keys");
      EXPECT_EQ(r.keys, 2000u);
    }
    EXPECT_GE(r.stats.max_over_mean, 1.0);
    EXPECT_LE(r.stats.min_over_mean, 1.0);
  }
}

TEST(PlacementRunBalanceTest, BoundedStaysUnderItsCapacity) {
  for (const double epsilon : {0.1, 0.25, 1.0}) {
    SCOPED_TRACE("epsilon=" + std::to_string(epsilon));
    SchemeOptions options;
    options.epsilon = epsilon;
    const BalanceReport r = RunBalance(Scheme::kBounded, options, 10, UserKeys(10000));
    EXPECT_EQ(r.method, "keys");
    EXPECT_EQ(r.capacity, BoundedLoadCapacity(epsilon, 10000, 10));
    EXPECT_GE(r.max_load, 1000u);  // someone holds at least the mean
    EXPECT_LE(r.max_load, r.capacity);
    EXPECT_LE(r.stats.max_over_mean, 1 + epsilon + 1e-9);
  }
}

// ---------------------------------------------------------------------------------------------
// SummarizeShares (expected values by hand; percentiles interpolate between closest ranks,
// rank = q * (n - 1) over the sorted share/mean ratios).

TEST(PlacementShareStatsTest, EqualShares) {
  const std::vector<double> shares = {1, 1, 1, 1};
  const ShareStats s = SummarizeShares(shares);
  EXPECT_DOUBLE_EQ(s.max_over_mean, 1);
  EXPECT_DOUBLE_EQ(s.min_over_mean, 1);
  EXPECT_DOUBLE_EQ(s.p99_over_mean, 1);
  EXPECT_DOUBLE_EQ(s.ci99_low, 1);
  EXPECT_DOUBLE_EQ(s.ci99_high, 1);
  EXPECT_DOUBLE_EQ(s.stddev_over_mean, 0);
}

TEST(PlacementShareStatsTest, TwoShares) {
  // Mean 1, ratios {0, 2}: p99 at rank 0.99 -> 1.98, 0.5% -> 0.01, 99.5% -> 1.99, stddev 1.
  const std::vector<double> shares = {0, 2};
  const ShareStats s = SummarizeShares(shares);
  EXPECT_DOUBLE_EQ(s.max_over_mean, 2);
  EXPECT_DOUBLE_EQ(s.min_over_mean, 0);
  EXPECT_NEAR(s.p99_over_mean, 1.98, 1e-12);
  EXPECT_NEAR(s.ci99_low, 0.01, 1e-12);
  EXPECT_NEAR(s.ci99_high, 1.99, 1e-12);
  EXPECT_NEAR(s.stddev_over_mean, 1, 1e-12);
}

TEST(PlacementShareStatsTest, UnsortedSharesAreRatiosToTheMean) {
  // {1, 2, 3, 4, 10}: mean 4, ratios .25 .5 .75 1 2.5. p99 rank 3.96 -> 1 + 1.5 * .96 = 2.44;
  // 0.5% rank .02 -> .255; 99.5% rank 3.98 -> 2.47; stddev sqrt(3.125 / 5) = 0.790569415.
  const std::vector<double> shares = {4, 10, 1, 3, 2};
  const ShareStats s = SummarizeShares(shares);
  EXPECT_DOUBLE_EQ(s.max_over_mean, 2.5);
  EXPECT_DOUBLE_EQ(s.min_over_mean, 0.25);
  EXPECT_NEAR(s.p99_over_mean, 2.44, 1e-12);
  EXPECT_NEAR(s.ci99_low, 0.255, 1e-12);
  EXPECT_NEAR(s.ci99_high, 2.47, 1e-12);
  EXPECT_NEAR(s.stddev_over_mean, std::sqrt(0.625), 1e-12);
  // Scale does not matter: fractions of the key space give the same figures.
  const std::vector<double> fractions = {0.2, 0.5, 0.05, 0.15, 0.1};
  const ShareStats f = SummarizeShares(fractions);
  EXPECT_NEAR(f.p99_over_mean, 2.44, 1e-12);
  EXPECT_NEAR(f.stddev_over_mean, std::sqrt(0.625), 1e-12);
}

TEST(PlacementShareStatsTest, SingleShare) {
  const std::vector<double> shares = {5};
  const ShareStats s = SummarizeShares(shares);
  EXPECT_DOUBLE_EQ(s.max_over_mean, 1);
  EXPECT_DOUBLE_EQ(s.min_over_mean, 1);
  EXPECT_DOUBLE_EQ(s.p99_over_mean, 1);
  EXPECT_DOUBLE_EQ(s.stddev_over_mean, 0);
}

// ---------------------------------------------------------------------------------------------
// The scheme catalogue.

TEST(PlacementSchemeTest, NamesRoundTrip) {
  const std::span<const Scheme> all = AllSchemes();
  EXPECT_EQ(all.size(), 10u);
  std::set<std::string> names;
  for (const Scheme scheme : all) {
    const std::string_view name = SchemeName(scheme);
    EXPECT_NE(name, "?");
    names.emplace(name);
    const std::optional<Scheme> parsed = ParseScheme(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(*parsed, scheme) << name;
  }
  EXPECT_EQ(names.size(), all.size());
  EXPECT_FALSE(ParseScheme("nope").has_value());
  EXPECT_FALSE(ParseScheme("").has_value());
  EXPECT_FALSE(ParseScheme("ring ").has_value());
  EXPECT_EQ(SchemeNameList(),
            "modulo, ring, ring-map, ketama, jump, rendezvous, maglev, bounded, redis, kademlia");
  EXPECT_TRUE(ParseScheme("ring-map") == Scheme::kRingMap);
}

TEST(PlacementSchemeTest, MonotoneAndVnodeFlags) {
  const std::set<Scheme> monotone = {Scheme::kRing,    Scheme::kRingMap,    Scheme::kKetama,
                                     Scheme::kJump,    Scheme::kRendezvous, Scheme::kRedis,
                                     Scheme::kKademlia};
  const std::set<Scheme> vnodes = {Scheme::kRing, Scheme::kRingMap, Scheme::kBounded};
  for (const Scheme scheme : AllSchemes()) {
    EXPECT_EQ(IsMonotone(scheme), monotone.count(scheme) == 1) << SchemeName(scheme);
    EXPECT_EQ(UsesVnodes(scheme), vnodes.count(scheme) == 1) << SchemeName(scheme);
  }
}

TEST(PlacementSchemeTest, FactoryMakesWorkingPlacements) {
  const std::vector<std::string> names = NodeNames(5);
  for (const Scheme scheme : AllSchemes()) {
    SCOPED_TRACE(std::string(SchemeName(scheme)));
    std::unique_ptr<Placement> placement = MakePlacement(scheme, WithVnodes(10));
    ASSERT_NE(placement, nullptr);
    placement->SetNodes(names);
    std::vector<uint64_t> counts(names.size(), 0);
    for (const KeyHash& key : UserKeys(500)) {
      const uint32_t node = placement->Place(key);
      ASSERT_LT(node, names.size());
      ++counts[node];
    }
    for (const uint64_t count : counts) EXPECT_GT(count, 0u);
    const std::vector<double> shares = placement->ExactShares();
    if (!shares.empty()) {
      double sum = 0;
      for (const double share : shares) sum += share;
      EXPECT_NEAR(sum, 1.0, 1e-9);
    }
  }
}

TEST(PlacementSchemeTest, VariantLabelsAndCompareVariants) {
  SchemeOptions base;  // vnodes 100, epsilon 0.25
  EXPECT_EQ((Variant{Scheme::kRing, base}.Label()), "ring V=100");
  EXPECT_EQ((Variant{Scheme::kBounded, base}.Label()), "bounded e=0.25 V=100");
  EXPECT_EQ((Variant{Scheme::kJump, base}.Label()), "jump");
  const std::vector<Variant> variants = CompareVariants(base);
  // Every scheme; the ring and bounded loads each with 1 point and with V points per node.
  std::vector<std::string> labels;
  for (const Variant& variant : variants) labels.push_back(variant.Label());
  EXPECT_EQ(labels, (std::vector<std::string>{"modulo", "ring V=1", "ring V=100", "ring-map V=100",
                                              "ketama", "jump", "rendezvous", "maglev",
                                              "bounded e=0.25 V=1", "bounded e=0.25 V=100", "redis",
                                              "kademlia"}));
  EXPECT_EQ(CompareVariants(WithVnodes(1)).size(), 10u);
}

TEST(PlacementCompareTest, SmallRunReproducesTheMoveFigures) {
  CompareOptions options;
  options.keys = 1000;
  options.balance_keys = 1000;
  options.speed_seconds = 0.003;
  const std::vector<CompareRow> rows = RunCompare(options);
  ASSERT_EQ(rows.size(), CompareVariants(options.base).size());
  for (const CompareRow& row : rows) {
    SCOPED_TRACE(row.variant.Label());
    EXPECT_GT(row.ns_per_lookup, 0.0);
    if (row.variant.scheme == Scheme::kModulo) {
      EXPECT_EQ(row.move.moved, 756u);
    }
    if (row.variant.scheme == Scheme::kRing && row.variant.options.vnodes == 100) {
      EXPECT_EQ(row.move.moved, 237u);
      EXPECT_EQ(row.memory_bytes, 4u * 100u * 8u);
    }
    if (IsMonotone(row.variant.scheme)) {
      EXPECT_EQ(row.move.moved_between_old, 0u);
    }
  }
}

TEST(PlacementMeasureTest, LookupAndHashCostsArePositive) {
  auto placement = MakePlacement(Scheme::kJump, {});
  placement->SetNodes(NodeNames(4));
  EXPECT_GT(MeasureLookupNs(*placement, UserKeys(256), 0.003), 0.0);
  EXPECT_EQ(MeasureLookupNs(*placement, {}, 0.003), 0.0);
  const std::vector<KeyHashCost> costs = MeasureKeyHashes(0.004);
  ASSERT_EQ(costs.size(), 4u);
  EXPECT_EQ(costs[0].hash, "sha256");
  EXPECT_EQ(costs[1].hash, "md5");
  EXPECT_EQ(costs[2].hash, "sha1");
  EXPECT_EQ(costs[3].hash, "crc16-slot");
  for (const KeyHashCost& cost : costs) EXPECT_GT(cost.ns, 0.0);
}

}  // namespace
}  // namespace chord::placement
