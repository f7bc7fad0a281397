// Tests for the placement lab's schemes (tools/placement): jump hash, modulo, the hash ring
// (vector and std::map forms), Ketama, rendezvous, Maglev, bounded loads, Redis slots and
// Kademlia, against values computed independently in Python (hashlib, integers with explicit
// 64-bit masks; scratch scripts outside the repository) and against each scheme's definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tools/placement/bounded_load_ring.h"
#include "tools/placement/crc16.h"
#include "tools/placement/hash_ring.h"
#include "tools/placement/jump_hash.h"
#include "tools/placement/kademlia.h"
#include "tools/placement/ketama.h"
#include "tools/placement/key_hash.h"
#include "tools/placement/maglev.h"
#include "tools/placement/map_ring.h"
#include "tools/placement/mix64.h"
#include "tools/placement/modulo_placement.h"
#include "tools/placement/node_names.h"
#include "tools/placement/redis_slots.h"
#include "tools/placement/rendezvous.h"
#include "tools/placement/scheme.h"

namespace chord::placement {
namespace {

// "user-1" ... "user-20000", hashed once for the whole file.
std::span<const KeyHash> UserKeys(size_t count) {
  static const std::vector<KeyHash>* const kKeys = new std::vector<KeyHash>(HashUserKeys(20000));
  return std::span<const KeyHash>(*kKeys).first(count);
}

std::vector<uint32_t> PlaceAll(Placement& placement, std::span<const KeyHash> keys) {
  std::vector<uint32_t> owners;
  owners.reserve(keys.size());
  for (const KeyHash& key : keys) owners.push_back(placement.Place(key));
  return owners;
}

std::vector<uint32_t> OwnersOfUsers1To(Placement& placement, size_t count) {
  return PlaceAll(placement, UserKeys(count));
}

std::vector<uint64_t> Counts(const std::vector<uint32_t>& owners, size_t nodes) {
  std::vector<uint64_t> counts(nodes, 0);
  for (const uint32_t owner : owners) {
    EXPECT_LT(owner, nodes);
    if (owner < nodes) ++counts[owner];
  }
  return counts;
}

double Sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// ---------------------------------------------------------------------------------------------
// Jump consistent hash.

struct JumpCase {
  uint64_t key;
  std::array<int32_t, 7> buckets;  // for kJumpBuckets
};
constexpr std::array<int32_t, 7> kJumpBuckets = {1, 2, 10, 12, 1000, 65536, 2147483647};

// From the paper's Figure 1 code run in Python (multiply masked to 64 bits, Python floats
// are IEEE doubles, int() truncates like the C++ cast).
constexpr JumpCase kJumpCases[] = {
    {0x0000000000000000ULL, {0, 0, 0, 0, 0, 0, 0}},
    {0x0000000000000001ULL, {0, 0, 6, 6, 549, 21134, 262355607}},
    {0x0000000000000002ULL, {0, 0, 6, 6, 338, 3927, 736532115}},
    {0x0000000000000003ULL, {0, 0, 8, 8, 961, 59579, 1315363102}},
    {0x000000000000002aULL, {0, 1, 2, 2, 571, 5747, 1603940301}},
    {0x00000000deadbeefULL, {0, 1, 5, 5, 285, 64244, 1452406526}},
    {0x8000000000000000ULL, {0, 1, 5, 5, 453, 53854, 1119800965}},
    {0xffffffffffffffffULL, {0, 1, 9, 10, 313, 18311, 699554662}},
    {0xfffffffffffffffeULL, {0, 1, 3, 10, 382, 10537, 1696996329}},
    {0x0123456789abcdefULL, {0, 0, 0, 11, 194, 33301, 1651575352}},
    {0xc6c289e49e9c05b2ULL, {0, 0, 2, 2, 61, 42636, 1911036415}},  // point of "user-1"
};

TEST(PlacementJumpTest, MatchesThePapersCode) {
  for (const JumpCase& c : kJumpCases) {
    for (size_t i = 0; i < kJumpBuckets.size(); ++i) {
      EXPECT_EQ(JumpConsistentHash(c.key, kJumpBuckets[i]), c.buckets[i])
          << "key " << c.key << " buckets " << kJumpBuckets[i];
    }
  }
}

TEST(PlacementJumpTest, NonPositiveBucketCountGivesMinusOne) {
  EXPECT_EQ(JumpConsistentHash(1, 0), -1);
  EXPECT_EQ(JumpConsistentHash(1, -1), -1);
  EXPECT_EQ(JumpConsistentHash(0xffffffffffffffffULL, std::numeric_limits<int32_t>::min()), -1);
}

TEST(PlacementJumpTest, GrowingBucketsMovesKeysOnlyToTheNewestBucket) {
  uint64_t moved_to_last = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    const uint64_t key = i * 0x9e3779b97f4a7c15ULL;  // spread over the whole 64-bit range
    int32_t previous = JumpConsistentHash(key, 1);
    ASSERT_EQ(previous, 0);
    for (int32_t n = 2; n <= 100; ++n) {
      const int32_t current = JumpConsistentHash(key, n);
      ASSERT_GE(current, 0);
      ASSERT_LT(current, n);
      if (current != previous) {
        ASSERT_EQ(current, n - 1) << "key " << key << " buckets " << n;
        if (n == 100) ++moved_to_last;
      }
      previous = current;
    }
  }
  // 99 -> 100 buckets should move about 1/100 of the keys (100 +- 10 of 10,000).
  EXPECT_GT(moved_to_last, 50u);
  EXPECT_LT(moved_to_last, 150u);
}

TEST(PlacementJumpTest, PlacementUsesTheKeyPoint) {
  JumpPlacement jump;
  jump.SetNodes(NodeNames(12));
  EXPECT_EQ(jump.Place(HashKey("user-1")), 2u);  // the 0xc6c289e49e9c05b2 row above
  EXPECT_EQ(jump.MemoryBytes(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Modulo.

TEST(PlacementModuloTest, OwnerIsTheWholeSha256ModN) {
  // int.from_bytes(sha256(key), "big") % N in Python.
  struct Case {
    const char* key;
    uint32_t mod3, mod4, mod7;
  };
  const Case cases[] = {
      {"user-1", 0, 3, 1},  {"user-2", 1, 3, 0},    {"user-3", 1, 1, 0},
      {"user-42", 0, 3, 3}, {"user-1000", 1, 3, 3}, {"hello", 0, 0, 2},
  };
  ModuloPlacement modulo;
  for (const Case& c : cases) {
    const KeyHash key = HashKey(c.key);
    modulo.SetNodes(NodeNames(3));
    EXPECT_EQ(modulo.Place(key), c.mod3) << c.key;
    modulo.SetNodes(NodeNames(4));
    EXPECT_EQ(modulo.Place(key), c.mod4) << c.key;
    modulo.SetNodes(NodeNames(7));
    EXPECT_EQ(modulo.Place(key), c.mod7) << c.key;
  }
}

// ---------------------------------------------------------------------------------------------
// Hash ring.

TEST(PlacementHashRingTest, RingPointIsSha256PrefixOfNameHashIndex) {
  // First 8 bytes, big-endian, of sha256("server-a#0") etc. in Python.
  EXPECT_EQ(RingPoint("server-a", 0), 0xd56fea434871e547ULL);
  EXPECT_EQ(RingPoint("server-a", 1), 0x08d503a2917565aeULL);
  EXPECT_EQ(RingPoint("server-b", 0), 0x689bd0bb660ea214ULL);
  EXPECT_EQ(RingPoint("server-c", 99), 0xbc45196afe0282a2ULL);
}

TEST(PlacementHashRingTest, OwnersOfTenUsersOnThreeServers) {
  // Python: points sorted, owner = first point >= sha256(key)[:8] (wrapping to the lowest).
  // V = 1 gives server-a 1, server-b 6, server-c 3 users, as the background article shows.
  HashRing ring1(1);
  ring1.SetNodes(NodeNames(3));
  EXPECT_EQ(OwnersOfUsers1To(ring1, 10), (std::vector<uint32_t>{0, 1, 2, 2, 1, 2, 1, 1, 1, 1}));
  HashRing ring2(2);
  ring2.SetNodes(NodeNames(3));
  EXPECT_EQ(OwnersOfUsers1To(ring2, 10), (std::vector<uint32_t>{0, 1, 2, 2, 1, 2, 2, 1, 1, 1}));
}

TEST(PlacementHashRingTest, ExactSharesAreTheArcs) {
  // Arc lengths / 2^64 in Python (each point owns the arc from the previous point).
  HashRing ring1(1);
  ring1.SetNodes(NodeNames(3));
  const std::vector<double> shares1 = ring1.ExactShares();
  ASSERT_EQ(shares1.size(), 3u);
  EXPECT_NEAR(shares1[0], 0.068634544935350, 1e-12);
  EXPECT_NEAR(shares1[1], 0.574888614964595, 1e-12);
  EXPECT_NEAR(shares1[2], 0.356476840100054, 1e-12);
  HashRing ring2(2);
  ring2.SetNodes(NodeNames(3));
  const std::vector<double> shares2 = ring2.ExactShares();
  ASSERT_EQ(shares2.size(), 3u);
  EXPECT_NEAR(shares2[0], 0.201679815588658, 1e-12);
  EXPECT_NEAR(shares2[1], 0.411008382230958, 1e-12);
  EXPECT_NEAR(shares2[2], 0.387311802180384, 1e-12);
}

TEST(PlacementHashRingTest, ExactSharesSumToOne) {
  for (const uint32_t vnodes : {1u, 2u, 100u}) {
    for (const uint32_t nodes : {1u, 2u, 3u, 17u, 64u}) {
      HashRing ring(vnodes);
      ring.SetNodes(NodeNames(nodes));
      const std::vector<double> shares = ring.ExactShares();
      ASSERT_EQ(shares.size(), nodes);
      EXPECT_NEAR(Sum(shares), 1.0, 1e-9) << "V=" << vnodes << " N=" << nodes;
      for (const double share : shares) EXPECT_GE(share, 0.0);
    }
  }
  HashRing single(1);
  single.SetNodes(NodeNames(1));
  EXPECT_EQ(single.ExactShares(), std::vector<double>{1.0});
  EXPECT_EQ(single.Place(HashKey("anything")), 0u);
}

TEST(PlacementHashRingTest, WalkHelpersAndMemory) {
  HashRing ring(50);
  ring.SetNodes(NodeNames(20));
  EXPECT_EQ(ring.PointCount(), 1000u);
  EXPECT_EQ(ring.vnodes(), 50u);
  EXPECT_EQ(ring.MemoryBytes(), 1000u * 8u);  // one 8-byte entry per point, no slack
  // Below every point and above every point both land on index 0 (the wrap).
  EXPECT_EQ(ring.FirstAtOrAfter(0), 0u);
  EXPECT_EQ(ring.FirstAtOrAfter(std::numeric_limits<uint64_t>::max()), 0u);
  for (const KeyHash& key : UserKeys(200)) {
    EXPECT_EQ(ring.Place(key), ring.NodeAt(ring.FirstAtOrAfter(key.point)));
  }
}

TEST(PlacementMapRingTest, SameOwnersAsHashRingAndBiggerNodes) {
  constexpr uint32_t kV = 50;
  constexpr uint32_t kN = 20;
  HashRing ring(kV);
  MapRing map(kV);
  ring.SetNodes(NodeNames(kN));
  map.SetNodes(NodeNames(kN));
  const std::span<const KeyHash> keys = UserKeys(20000);
  size_t differ = 0;
  for (const KeyHash& key : keys) differ += ring.Place(key) != map.Place(key) ? 1 : 0;
  EXPECT_EQ(differ, 0u);
  // A libstdc++ red-black node of pair<const uint64_t, uint32_t>: 32-byte header + 16 bytes.
  EXPECT_GE(map.MemoryBytes(), 48u * kV * kN);
  EXPECT_EQ(ring.MemoryBytes(), 8u * kV * kN);
  // Rebuilding does not leak the old nodes into the count.
  const size_t before = map.MemoryBytes();
  map.SetNodes(NodeNames(kN));
  EXPECT_EQ(map.MemoryBytes(), before);
}

// ---------------------------------------------------------------------------------------------
// Ketama.

TEST(PlacementKetamaTest, PointsOfOneServer) {
  // libketama re-implemented in Python: md5("server-a-<k>"), 4 little-endian words each.
  const std::vector<uint32_t> points = KetamaPoints("server-a");
  ASSERT_EQ(points.size(), 160u);
  const std::vector<uint32_t> first(points.begin(), points.begin() + 8);
  EXPECT_EQ(first, (std::vector<uint32_t>{0x156f3781u, 0xecc936a6u, 0xa4409a84u, 0x34cf0b0bu,
                                          0xe9657d6du, 0x3da685edu, 0x6d79e0e3u, 0xebb5dbc1u}));
  EXPECT_EQ(points.back(), 0xe43b1f1au);
}

TEST(PlacementKetamaTest, OwnersMatchLibketama) {
  // Python: all 5 x 160 points sorted, owner = first point >= md5(key)[0:4] little-endian,
  // wrapping to the first point.
  Ketama ketama;
  ketama.SetNodes(NodeNames(5));
  EXPECT_EQ(OwnersOfUsers1To(ketama, 20),
            (std::vector<uint32_t>{2, 2, 1, 3, 0, 3, 0, 2, 4, 3, 2, 1, 2, 4, 0, 2, 4, 2, 4, 3}));
  EXPECT_EQ(ketama.MemoryBytes(), 5u * 160u * 8u);
}

TEST(PlacementKetamaTest, ExactSharesSumToOne) {
  Ketama ketama;
  ketama.SetNodes(NodeNames(7));
  const std::vector<double> shares = ketama.ExactShares();
  ASSERT_EQ(shares.size(), 7u);
  EXPECT_NEAR(Sum(shares), 1.0, 1e-9);
  for (const double share : shares) {
    EXPECT_GT(share, 0.05);  // 160 points each: no node is far from 1/7
    EXPECT_LT(share, 0.25);
  }
}

// ---------------------------------------------------------------------------------------------
// Rendezvous.

TEST(PlacementRendezvousTest, Mix64KnownValues) {
  // The finalizer in Python with 64-bit masks.
  EXPECT_EQ(Mix64(0), 0u);
  EXPECT_EQ(Mix64(1), 0x5692161d100b05e5ULL);
  EXPECT_EQ(Mix64(0x0123456789abcdefULL), 0xb2c058e4ebb5112cULL);
}

TEST(PlacementRendezvousTest, OwnersComputedInPython) {
  // argmax over nodes of Mix64(sha256(key)[:8] ^ sha256(name)[:8]) in Python.
  Rendezvous rendezvous;
  rendezvous.SetNodes(NodeNames(5));
  EXPECT_EQ(OwnersOfUsers1To(rendezvous, 20),
            (std::vector<uint32_t>{4, 2, 0, 4, 3, 0, 2, 1, 0, 4, 0, 0, 4, 3, 3, 2, 3, 0, 1, 3}));
}

TEST(PlacementRendezvousTest, OwnerHasTheHighestScore) {
  const std::vector<std::string> names = NodeNames(13);
  std::vector<uint64_t> seeds;
  for (const std::string& name : names) seeds.push_back(LoadBigEndian64(Sha256(name).data()));
  Rendezvous rendezvous;
  rendezvous.SetNodes(names);
  for (const KeyHash& key : UserKeys(5000)) {
    uint32_t best = 0;
    for (uint32_t node = 1; node < seeds.size(); ++node) {
      if (Mix64(key.point ^ seeds[node]) > Mix64(key.point ^ seeds[best])) best = node;
    }
    ASSERT_EQ(rendezvous.Place(key), best);
  }
}

// ---------------------------------------------------------------------------------------------
// Monotonicity on growth: from `from` to `to` nodes, every key that moves lands on a new node.

struct Growth {
  uint64_t moved = 0;
  std::vector<uint64_t> moved_to;  // per new node
};

Growth Grow(Scheme scheme, const SchemeOptions& options, uint32_t from, uint32_t to,
            std::span<const KeyHash> keys) {
  const std::vector<std::string> names = NodeNames(to);
  const std::span<const std::string> all(names);
  std::unique_ptr<Placement> placement = MakePlacement(scheme, options);
  placement->SetNodes(all.first(from));
  const std::vector<uint32_t> before = PlaceAll(*placement, keys);
  placement->SetNodes(all);
  const std::vector<uint32_t> after = PlaceAll(*placement, keys);
  Growth g;
  g.moved_to.assign(to - from, 0);
  for (size_t k = 0; k < keys.size(); ++k) {
    EXPECT_LT(before[k], from);
    EXPECT_LT(after[k], to);
    if (before[k] == after[k]) continue;
    ++g.moved;
    EXPECT_GE(after[k], from) << SchemeName(scheme) << ": key " << k << " moved from node "
                              << before[k] << " to old node " << after[k];
    if (after[k] >= from) ++g.moved_to[after[k] - from];
  }
  return g;
}

void ExpectMonotoneGrowth(Scheme scheme, const SchemeOptions& options) {
  const std::span<const KeyHash> keys = UserKeys(10000);
  for (const auto& [from, to] : {std::pair{3u, 4u}, std::pair{10u, 11u}, std::pair{10u, 12u}}) {
    SCOPED_TRACE(std::string(SchemeName(scheme)) + " " + std::to_string(from) + " -> " +
                 std::to_string(to));
    const Growth g = Grow(scheme, options, from, to, keys);
    EXPECT_GT(g.moved, 0u);  // something must move for the new nodes to get keys
  }
}

SchemeOptions WithVnodes(uint32_t vnodes) {
  SchemeOptions options;
  options.vnodes = vnodes;
  return options;
}

TEST(PlacementGrowthTest, RingV1) { ExpectMonotoneGrowth(Scheme::kRing, WithVnodes(1)); }
TEST(PlacementGrowthTest, RingV100) { ExpectMonotoneGrowth(Scheme::kRing, WithVnodes(100)); }
TEST(PlacementGrowthTest, RingMap) { ExpectMonotoneGrowth(Scheme::kRingMap, WithVnodes(10)); }
TEST(PlacementGrowthTest, Jump) { ExpectMonotoneGrowth(Scheme::kJump, {}); }
TEST(PlacementGrowthTest, Rendezvous) { ExpectMonotoneGrowth(Scheme::kRendezvous, {}); }
TEST(PlacementGrowthTest, Ketama) { ExpectMonotoneGrowth(Scheme::kKetama, {}); }
TEST(PlacementGrowthTest, Redis) { ExpectMonotoneGrowth(Scheme::kRedis, {}); }
TEST(PlacementGrowthTest, Kademlia) { ExpectMonotoneGrowth(Scheme::kKademlia, {}); }

TEST(PlacementGrowthTest, RingMovesAboutTheNewNodesShare) {
  const std::span<const KeyHash> keys = UserKeys(20000);
  const double k = static_cast<double>(keys.size());
  for (const uint32_t from : {3u, 10u, 30u}) {
    SCOPED_TRACE("N=" + std::to_string(from));
    const Growth g = Grow(Scheme::kRing, WithVnodes(100), from, from + 1, keys);
    // The keys that move are exactly those in the new node's arcs.
    HashRing ring(100);
    ring.SetNodes(NodeNames(from + 1));
    const double share = ring.ExactShares()[from];
    const double sigma = std::sqrt(k * share * (1 - share));
    EXPECT_NEAR(static_cast<double>(g.moved), k * share, 5 * sigma);
    // With 100 points per node the new share is within about +-10% of 1 / (N + 1).
    const double fraction = static_cast<double>(g.moved) / k;
    EXPECT_GT(fraction, 0.7 / (from + 1));
    EXPECT_LT(fraction, 1.3 / (from + 1));
  }
}

TEST(PlacementGrowthTest, RendezvousTenToElevenMovesAboutOneEleventh) {
  const std::span<const KeyHash> keys = UserKeys(20000);
  const Growth g = Grow(Scheme::kRendezvous, {}, 10, 11, keys);
  // Binomial(20000, 1/11): mean 1818, sigma 41.
  EXPECT_NEAR(static_cast<double>(g.moved), 20000.0 / 11, 5 * 41.0);
}

// ---------------------------------------------------------------------------------------------
// Maglev.

TEST(PlacementMaglevTest, SmallTablesMatchThePapersPopulateLoop) {
  // The paper's populate loop in Python: offset = sha256(name)[0:8] BE % M,
  // skip = sha256(name)[8:16] BE % (M - 1) + 1, nodes take turns claiming their next free entry.
  Maglev m13(13);
  m13.SetNodes(NodeNames(3));
  EXPECT_EQ(m13.table(), (std::vector<uint32_t>{0, 0, 1, 0, 2, 1, 1, 2, 2, 2, 0, 1, 0}));
  Maglev m17(17);
  m17.SetNodes(NodeNames(5));
  EXPECT_EQ(m17.table(),
            (std::vector<uint32_t>{4, 1, 0, 1, 4, 3, 0, 2, 1, 4, 0, 2, 3, 0, 2, 3, 1}));
  Maglev m7(7);
  m7.SetNodes(NodeNames(7));  // M = N: every node gets exactly one entry
  EXPECT_EQ(m7.table(), (std::vector<uint32_t>{4, 2, 0, 5, 3, 1, 6}));
}

TEST(PlacementMaglevTest, KeyGoesToEntryOfPointModM) {
  Maglev maglev;
  maglev.SetNodes(NodeNames(10));
  // Python: table[sha256(key)[:8] BE % 65537] with the table of the populate loop.
  EXPECT_EQ(OwnersOfUsers1To(maglev, 10), (std::vector<uint32_t>{4, 4, 2, 0, 7, 6, 5, 4, 6, 1}));
  for (const KeyHash& key : UserKeys(1000)) {
    EXPECT_EQ(maglev.Place(key), maglev.table()[key.point % kMaglevDefaultTableSize]);
  }
  EXPECT_EQ(maglev.MemoryBytes(), kMaglevDefaultTableSize * sizeof(uint32_t));
}

TEST(PlacementMaglevTest, DefaultTableIsFullAndEven) {
  constexpr uint64_t kM = kMaglevDefaultTableSize;
  for (const uint32_t n : {10u, 100u, 1000u}) {
    SCOPED_TRACE("N=" + std::to_string(n));
    Maglev maglev;
    maglev.SetNodes(NodeNames(n));
    ASSERT_EQ(maglev.table().size(), kM);
    std::vector<uint64_t> entries(n, 0);
    for (const uint32_t node : maglev.table()) {
      ASSERT_LT(node, n);
      ++entries[node];
    }
    // The loop gives every node one entry per round until the table is full, so after
    // floor(M/N) rounds the first M mod N nodes in list order get one more.
    for (uint32_t i = 0; i < n; ++i) {
      EXPECT_EQ(entries[i], kM / n + (i < kM % n ? 1 : 0)) << "node " << i;
    }
    const std::vector<double> shares = maglev.ExactShares();
    ASSERT_EQ(shares.size(), n);
    EXPECT_NEAR(Sum(shares), 1.0, 1e-9);
    EXPECT_NEAR(shares[0], static_cast<double>(entries[0]) / kM, 1e-12);
  }
}

// ---------------------------------------------------------------------------------------------
// Bounded loads.

TEST(PlacementBoundedLoadTest, Capacity) {
  EXPECT_EQ(BoundedLoadCapacity(0.25, 1000, 4), 313u);  // 312.5 rounded up
  EXPECT_EQ(BoundedLoadCapacity(0.5, 1000, 3), 500u);   // exactly 500: not 501
  EXPECT_EQ(BoundedLoadCapacity(0.0, 1000, 4), 250u);
  EXPECT_EQ(BoundedLoadCapacity(0.1, 1000, 4), 275u);  // 1.1 is not exact in binary
  EXPECT_EQ(BoundedLoadCapacity(0.1, 10000, 10), 1100u);
  EXPECT_EQ(BoundedLoadCapacity(0.25, 10000, 10), 1250u);
  EXPECT_EQ(BoundedLoadCapacity(1.0, 10000, 10), 2000u);
  EXPECT_EQ(BoundedLoadCapacity(0.25, 10, 3), 5u);  // 4.17 rounded up
  EXPECT_EQ(BoundedLoadCapacity(0.0, 1, 4), 1u);
  EXPECT_EQ(BoundedLoadCapacity(0.25, 0, 4), 1u);  // at least one
}

// The definition, rebuilt from RingPoint: walk clockwise from the key past full nodes.
class ReferenceBoundedRing {
 public:
  ReferenceBoundedRing(const std::vector<std::string>& names, uint32_t vnodes, uint64_t capacity)
      : loads_(names.size(), 0), capacity_(capacity) {
    for (uint32_t node = 0; node < names.size(); ++node) {
      for (uint32_t i = 0; i < vnodes; ++i) points_.emplace_back(RingPoint(names[node], i), node);
    }
    std::sort(points_.begin(), points_.end());
  }

  uint32_t RingOwner(uint64_t point) const { return points_[First(point)].second; }

  uint32_t Place(uint64_t point) {
    size_t i = First(point);
    while (loads_[points_[i].second] >= capacity_) i = (i + 1) % points_.size();
    ++loads_[points_[i].second];
    return points_[i].second;
  }

  const std::vector<uint64_t>& loads() const { return loads_; }

 private:
  size_t First(uint64_t point) const {
    const auto it =
        std::lower_bound(points_.begin(), points_.end(), std::pair<uint64_t, uint32_t>{point, 0});
    return it == points_.end() ? 0 : static_cast<size_t>(it - points_.begin());
  }

  std::vector<std::pair<uint64_t, uint32_t>> points_;
  std::vector<uint64_t> loads_;
  uint64_t capacity_;
};

TEST(PlacementBoundedLoadTest, NeverExceedsCapacityAndWalksPastFullNodes) {
  constexpr uint32_t kN = 10;
  constexpr uint32_t kV = 100;
  const std::span<const KeyHash> keys = UserKeys(10000);
  const std::vector<std::string> names = NodeNames(kN);
  // ceil((1 + epsilon) * 10000 / 10) by hand.
  for (const auto& [epsilon, expected_capacity] :
       {std::pair{0.1, 1100u}, std::pair{0.25, 1250u}, std::pair{1.0, 2000u}}) {
    SCOPED_TRACE("epsilon=" + std::to_string(epsilon));
    BoundedLoadRing bounded(kV, epsilon, keys.size());
    bounded.SetNodes(names);
    const uint64_t capacity = bounded.Capacity();
    EXPECT_EQ(capacity, expected_capacity);
    HashRing ring(kV);
    ring.SetNodes(names);
    ReferenceBoundedRing reference(names, kV, capacity);
    uint64_t stayed = 0;
    uint64_t diverted = 0;
    for (size_t k = 0; k < keys.size(); ++k) {
      const uint32_t ring_owner = ring.Place(keys[k]);
      ASSERT_EQ(reference.RingOwner(keys[k].point), ring_owner);
      const bool owner_has_room = reference.loads()[ring_owner] < capacity;
      const uint32_t expected = reference.Place(keys[k].point);
      const uint32_t actual = bounded.Place(keys[k]);
      ASSERT_EQ(actual, expected) << "key " << k;
      if (k == 0) {
        EXPECT_EQ(actual, ring_owner);
      }
      if (owner_has_room) {
        ASSERT_EQ(actual, ring_owner) << "key " << k;
        ++stayed;
      } else {
        ASSERT_NE(actual, ring_owner) << "key " << k;
        ++diverted;
      }
      ASSERT_LE(bounded.loads()[actual], capacity);
    }
    EXPECT_EQ(bounded.loads(), reference.loads());
    const std::vector<uint64_t>& loads = bounded.loads();
    EXPECT_EQ(std::accumulate(loads.begin(), loads.end(), uint64_t{0}), keys.size());
    EXPECT_LE(*std::max_element(loads.begin(), loads.end()), capacity);
    EXPECT_EQ(stayed + diverted, keys.size());
    // The plain ring (Python) gives these 10,000 keys 829 ... 1130, 1164 per node: with
    // capacity 1100 at least 30 + 64 keys must walk on; with 1250 or 2000 none does.
    if (epsilon < 0.2) {
      EXPECT_GE(diverted, 94u);
    } else {
      EXPECT_EQ(diverted, 0u);
    }
  }
}

TEST(PlacementBoundedLoadTest, WithoutExpectedKeysTheBoundFollowsPlacedKeys) {
  BoundedLoadRing bounded(100, 0.25, 0);
  bounded.SetNodes(NodeNames(10));
  for (uint64_t placed = 0; placed < 2000; ++placed) {
    const uint64_t capacity = bounded.Capacity();
    ASSERT_EQ(capacity, BoundedLoadCapacity(0.25, placed + 1, 10));
    const uint32_t node = bounded.Place(UserKeys(2000)[placed]);
    ASSERT_LE(bounded.loads()[node], capacity);
  }
  // SetNodes clears the loads.
  bounded.SetNodes(NodeNames(10));
  EXPECT_EQ(bounded.loads(), std::vector<uint64_t>(10, 0));
  EXPECT_EQ(bounded.Capacity(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Redis slots.

std::vector<std::string> Names(std::initializer_list<const char*> names) {
  return std::vector<std::string>(names.begin(), names.end());
}

TEST(PlacementRedisSlotsTest, InitialSplitIsContiguousAndEven) {
  RedisSlots redis;
  redis.SetNodes(NodeNames(3));
  const std::vector<uint32_t>& owners = redis.owners();
  ASSERT_EQ(owners.size(), kRedisSlots);
  // floor(i * 16384 / 3) for i = 0..3 in Python: 0, 5461, 10922, 16384.
  for (uint32_t slot = 0; slot < kRedisSlots; ++slot) {
    const uint32_t expected = slot < 5461 ? 0 : slot < 10922 ? 1 : 2;
    ASSERT_EQ(owners[slot], expected) << "slot " << slot;
  }
  // user-1 is in slot 12542 (CRC16 in Python), the third range.
  EXPECT_EQ(redis.Place(HashKey("user-1")), 2u);
  EXPECT_EQ(redis.MemoryBytes(), 16384u * 2u);

  RedisSlots one;
  one.SetNodes(NodeNames(1));
  EXPECT_EQ(Counts(one.owners(), 1), std::vector<uint64_t>{16384});
  RedisSlots four;
  four.SetNodes(NodeNames(4));
  EXPECT_EQ(Counts(four.owners(), 4), std::vector<uint64_t>(4, 4096));
  EXPECT_EQ(four.owners()[4095], 0u);
  EXPECT_EQ(four.owners()[4096], 1u);
}

TEST(PlacementRedisSlotsTest, KeysFollowTheirSlot) {
  RedisSlots redis;
  redis.SetNodes(NodeNames(5));
  for (const KeyHash& key : UserKeys(500)) EXPECT_EQ(redis.Place(key), redis.owners()[key.slot]);
  EXPECT_EQ(redis.Place(HashKey("{user1000}.following")),
            redis.Place(HashKey("{user1000}.followers")));
}

// Slot -> owner name.
std::vector<std::string> OwnerNames(const RedisSlots& redis,
                                    const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const uint32_t owner : redis.owners()) out.push_back(names.at(owner));
  return out;
}

void ExpectFloorOrCeil(const std::vector<uint32_t>& owners, uint32_t n) {
  for (const uint64_t count : Counts(owners, n)) {
    EXPECT_GE(count, kRedisSlots / n);
    EXPECT_LE(count, (kRedisSlots + n - 1) / n);
  }
}

TEST(PlacementRedisSlotsTest, GrowthMovesSlotsOnlyToTheNewNode) {
  for (const auto& [from, to] : {std::pair{3u, 4u}, std::pair{4u, 5u}, std::pair{5u, 7u}}) {
    SCOPED_TRACE(std::to_string(from) + " -> " + std::to_string(to));
    const std::vector<std::string> names = NodeNames(to);
    RedisSlots redis;
    redis.SetNodes(std::span<const std::string>(names).first(from));
    const std::vector<uint32_t> before = redis.owners();
    redis.SetNodes(names);
    const std::vector<uint32_t>& after = redis.owners();
    uint64_t moved = 0;
    for (uint32_t slot = 0; slot < kRedisSlots; ++slot) {
      if (before[slot] == after[slot]) continue;
      ++moved;
      ASSERT_GE(after[slot], from) << "slot " << slot;
    }
    ExpectFloorOrCeil(after, to);
    // Only the new nodes' even shares moved: the least any rebalance can move.
    const std::vector<uint64_t> counts = Counts(after, to);
    EXPECT_EQ(moved, std::accumulate(counts.begin() + from, counts.end(), uint64_t{0}));
  }
  // 3 -> 4 exactly: 4096 each.
  RedisSlots redis;
  redis.SetNodes(NodeNames(3));
  redis.SetNodes(NodeNames(4));
  EXPECT_EQ(Counts(redis.owners(), 4), std::vector<uint64_t>(4, 4096));
}

TEST(PlacementRedisSlotsTest, RemovingAMiddleNodeMovesOnlyItsSlots) {
  for (const uint32_t n : {3u, 4u, 6u}) {
    SCOPED_TRACE("N=" + std::to_string(n));
    const std::vector<std::string> before_names = NodeNames(n);
    std::vector<std::string> after_names = before_names;
    after_names.erase(after_names.begin() + 1);  // server-b
    RedisSlots redis;
    redis.SetNodes(before_names);
    const std::vector<std::string> before = OwnerNames(redis, before_names);
    redis.SetNodes(after_names);
    const std::vector<std::string> after = OwnerNames(redis, after_names);
    for (uint32_t slot = 0; slot < kRedisSlots; ++slot) {
      ASSERT_NE(after[slot], "server-b") << "slot " << slot;
      if (before[slot] != "server-b") {
        ASSERT_EQ(after[slot], before[slot]) << "slot " << slot;
      }
    }
    ExpectFloorOrCeil(redis.owners(), n - 1);
  }
}

TEST(PlacementRedisSlotsTest, RenumbersByNameWhenTheListIsReordered) {
  RedisSlots redis;
  redis.SetNodes(Names({"server-a", "server-b", "server-c"}));
  redis.SetNodes(Names({"server-c", "server-a", "server-b"}));
  // Same owners by name: slot 0 is server-a's, slot 16383 server-c's.
  EXPECT_EQ(redis.owners()[0], 1u);
  EXPECT_EQ(redis.owners()[16383], 0u);
  EXPECT_EQ(redis.owners()[5461], 2u);
}

// ---------------------------------------------------------------------------------------------
// Kademlia.

Sha1Digest DigestWithByte(size_t index, uint8_t value) {
  Sha1Digest d{};
  d[index] = value;
  return d;
}

TEST(PlacementKademliaTest, XorCloserBasicCases) {
  const Sha1Digest zero{};
  const Sha1Digest low = DigestWithByte(19, 0x01);  // distance 1 from zero
  const Sha1Digest high = DigestWithByte(0, 0x80);  // distance 2^159 from zero
  EXPECT_TRUE(XorCloser(low, high, zero));
  EXPECT_FALSE(XorCloser(high, low, zero));
  EXPECT_TRUE(XorCloser(zero, low, zero));  // distance 0 beats everything
  EXPECT_FALSE(XorCloser(low, low, zero));  // not strictly closer than itself
  // XOR, not numeric difference: from key 0xff.., 0xf0.. (distance 0x0f..) is closer than
  // 0x00.. (distance 0xff..) though both lie below the key.
  const Sha1Digest key = DigestWithByte(0, 0xff);
  const Sha1Digest f0 = DigestWithByte(0, 0xf0);
  EXPECT_TRUE(XorCloser(f0, zero, key));
  EXPECT_FALSE(XorCloser(zero, f0, key));
  // 0x7f.. is numerically next to 0x80.. but far in XOR distance.
  const Sha1Digest k80 = DigestWithByte(0, 0x80);
  EXPECT_TRUE(XorCloser(DigestWithByte(0, 0xc0), DigestWithByte(0, 0x7f), k80));
}

// Brute force: the node whose SHA-1 id has the smallest XOR distance to the key's SHA-1.
uint32_t ClosestByXor(const std::vector<Sha1Digest>& ids, const Sha1Digest& key) {
  auto distance = [&](const Sha1Digest& id) {
    Sha1Digest d{};
    for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(id[i] ^ key[i]);
    return d;
  };
  uint32_t best = 0;
  for (uint32_t node = 1; node < ids.size(); ++node) {
    if (distance(ids[node]) < distance(ids[best])) best = node;  // array compare: big-endian
  }
  return best;
}

TEST(PlacementKademliaTest, OwnerIsTheXorClosestId) {
  for (const uint32_t n : {1u, 2u, 7u, 100u}) {
    SCOPED_TRACE("N=" + std::to_string(n));
    const std::vector<std::string> names = NodeNames(n);
    std::vector<Sha1Digest> ids;
    for (const std::string& name : names) ids.push_back(Sha1(name));
    Kademlia kademlia;
    kademlia.SetNodes(names);
    for (const KeyHash& key : UserKeys(5000)) {
      ASSERT_EQ(kademlia.Place(key), ClosestByXor(ids, key.sha1));
    }
  }
}

TEST(PlacementKademliaTest, OwnersComputedInPython) {
  // argmin over nodes of int(sha1(name)) ^ int(sha1(key)) in Python.
  Kademlia kademlia;
  kademlia.SetNodes(NodeNames(7));
  EXPECT_EQ(OwnersOfUsers1To(kademlia, 20),
            (std::vector<uint32_t>{1, 1, 2, 1, 1, 5, 2, 5, 2, 5, 1, 5, 6, 1, 5, 5, 2, 2, 1, 6}));
}

// The std::map ring's exact arcs are the sorted vector's: the two differ only in the vector's
// node-index bits at the bottom of each point (at most 2^5 of 2^64 per point here).
TEST(PlacementMapRingTest, ExactSharesAreTheVectorRingsArcs) {
  const std::vector<std::string> names = NodeNames(20);
  HashRing vector_ring(50);
  MapRing map_ring(50);
  vector_ring.SetNodes(names);
  map_ring.SetNodes(names);
  const std::vector<double> a = vector_ring.ExactShares();
  const std::vector<double> b = map_ring.ExactShares();
  ASSERT_EQ(a.size(), 20u);
  ASSERT_EQ(b.size(), 20u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << names[i];
  // Independently: the arcs of one node on a 1-point ring of 2 nodes are the two gaps.
  MapRing two(1);
  two.SetNodes(NodeNames(2));
  const double pa = std::ldexp(static_cast<double>(RingPoint("server-a", 0)), -64);
  const double pb = std::ldexp(static_cast<double>(RingPoint("server-b", 0)), -64);
  const std::vector<double> shares = two.ExactShares();
  // server-a owns (pb, pa] going clockwise, wrapping when pa < pb.
  const double a_share = pa > pb ? pa - pb : 1.0 - (pb - pa);
  EXPECT_NEAR(shares[0], a_share, 1e-12);
  EXPECT_NEAR(shares[0] + shares[1], 1.0, 1e-12);
}

// Clearing the loads makes bounded loads place the same keys exactly as a fresh structure.
TEST(PlacementBoundedLoadTest, ClearLoadsStartsOver) {
  const std::vector<KeyHash> keys = HashUserKeys(3000);
  BoundedLoadRing reused(1, 0.1, keys.size());
  BoundedLoadRing fresh(1, 0.1, keys.size());
  reused.SetNodes(NodeNames(7));
  fresh.SetNodes(NodeNames(7));
  for (const KeyHash& k : keys) (void)reused.Place(k);
  reused.ClearLoads();
  for (const KeyHash& k : keys) ASSERT_EQ(reused.Place(k), fresh.Place(k));
  EXPECT_EQ(reused.loads(), fresh.loads());
}

// A NaN or negative epsilon (which the CLI refuses) is treated as 0 rather than cast.
TEST(PlacementBoundedLoadTest, CapacityOfABadEpsilonIsTheEvenShare) {
  EXPECT_EQ(BoundedLoadCapacity(std::nan(""), 1000, 4), 250u);
  EXPECT_EQ(BoundedLoadCapacity(-1.0, 1000, 4), 250u);
}

}  // namespace
}  // namespace chord::placement
