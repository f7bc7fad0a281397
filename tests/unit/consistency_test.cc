// Consistency levels and hinted hand-off: the counts each level needs (pure functions), the
// bounds and durability of the HintStore on a MemoryStore, and, on the simulated network, a
// quorum write with a paused replica that succeeds through a hint, an ALL write that fails
// with the same replica paused, quorum reads, and the hint delivered once the replica is back.
#include "node/core/replication/consistency.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "node/core/chord_node.h"
#include "node/core/node_counters.h"
#include "node/core/replication/hint_store.h"
#include "node/storage/memory_store.h"
#include "protocol/id.h"
#include "tests/unit/sim_test_options.h"
#include "tools/sim/sim_network.h"

namespace chord {
namespace {

using sim::SimNetwork;
using test_support::DataCall;
using test_support::Net;

TEST(ConsistencyLevelsTest, WritesNeedTheCountTheirLevelNames) {
  EXPECT_EQ(WritesNeeded(wire::CONSISTENCY_ONE, 0, 3, 3).count, 1u);
  EXPECT_EQ(WritesNeeded(wire::CONSISTENCY_QUORUM, 0, 3, 3).count, 2u);
  EXPECT_EQ(WritesNeeded(wire::CONSISTENCY_ALL, 0, 3, 3).count, 3u);
  EXPECT_EQ(WritesNeeded(wire::CONSISTENCY_DEFAULT, 0, 3, 3).count, 2u);
  EXPECT_EQ(WritesNeeded(wire::CONSISTENCY_QUORUM, 0, 5, 5).count, 3u);
  EXPECT_EQ(WritesNeeded(wire::CONSISTENCY_QUORUM, 0, 4, 4).count, 3u);
  // Only ALL refuses to count hinted copies.
  EXPECT_TRUE(WritesNeeded(wire::CONSISTENCY_QUORUM, 0, 3, 3).hints_count);
  EXPECT_FALSE(WritesNeeded(wire::CONSISTENCY_ALL, 0, 3, 3).hints_count);
  // An explicit count overrides the level; more than R is refused with a sentence.
  EXPECT_EQ(WritesNeeded(wire::CONSISTENCY_ONE, 3, 3, 3).count, 3u);
  EXPECT_TRUE(WritesNeeded(wire::CONSISTENCY_ONE, 3, 3, 3).problem.empty());
  EXPECT_FALSE(WritesNeeded(wire::CONSISTENCY_DEFAULT, 4, 3, 3).problem.empty());
  EXPECT_FALSE(WritesNeeded(static_cast<wire::Consistency>(9), 0, 3, 3).problem.empty());
  // The default follows a ring smaller than R; an explicit level does not.
  EXPECT_EQ(WritesNeeded(wire::CONSISTENCY_DEFAULT, 0, 3, 1).count, 1u);
  EXPECT_EQ(WritesNeeded(wire::CONSISTENCY_DEFAULT, 0, 3, 2).count, 2u);
  EXPECT_EQ(WritesNeeded(wire::CONSISTENCY_QUORUM, 0, 3, 1).count, 2u);
  EXPECT_EQ(WritesNeeded(wire::CONSISTENCY_ALL, 0, 3, 2).count, 3u);
}

TEST(ConsistencyLevelsTest, ReadsDefaultToOneAndCountLikeWrites) {
  EXPECT_EQ(ReadsNeeded(wire::CONSISTENCY_DEFAULT, 0, 3).count, 1u);
  EXPECT_EQ(ReadsNeeded(wire::CONSISTENCY_ONE, 0, 3).count, 1u);
  EXPECT_EQ(ReadsNeeded(wire::CONSISTENCY_QUORUM, 0, 3).count, 2u);
  EXPECT_EQ(ReadsNeeded(wire::CONSISTENCY_ALL, 0, 3).count, 3u);
  EXPECT_EQ(ReadsNeeded(wire::CONSISTENCY_DEFAULT, 2, 3).count, 2u);
  EXPECT_FALSE(ReadsNeeded(wire::CONSISTENCY_DEFAULT, 4, 3).problem.empty());
}

wire::Record Rec(const std::string& key, uint64_t version, size_t value_bytes = 10) {
  wire::Record r;
  r.set_key(key);
  r.set_value(std::string(value_bytes, 'v'));
  r.set_version(version);
  r.set_writer(Id::Sha1("writer").ToBytes());
  return r;
}

TEST(HintStoreTest, KeepsTheNewestHintPerMemberAndKeyApartFromTheRecords) {
  MemoryStore store;
  NodeCounters counters;
  HintStore hints(&store, &counters, "10.0.0.9:4000");
  const NodeRef a = NodeRef::ForAddress("10.0.0.1:4000");
  const NodeRef b = NodeRef::ForAddress("10.0.0.2:4000");
  ASSERT_EQ(*hints.Add(a, Rec("k", 5)), HintStore::AddResult::kStored);
  ASSERT_EQ(*hints.Add(a, Rec("k", 4)), HintStore::AddResult::kAlreadyNewer);
  ASSERT_EQ(*hints.Add(a, Rec("k", 7)), HintStore::AddResult::kReplaced);
  ASSERT_EQ(*hints.Add(b, Rec("k", 7)), HintStore::AddResult::kStored);
  EXPECT_EQ(hints.count(), 2u);
  EXPECT_EQ(counters.hints_pending, 2u);
  EXPECT_EQ(counters.hint_bytes, hints.bytes());
  EXPECT_EQ(store.Count(), 0u);  // not records this node holds
  auto page = hints.Page(a, 1 << 20, 100);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].version(), 7u);
  // Delivered at version 7 while a newer hint arrived: the newer one stays.
  ASSERT_EQ(*hints.Add(a, Rec("k", 9)), HintStore::AddResult::kReplaced);
  EXPECT_EQ(*hints.EraseDelivered(a, *page), 0u);
  EXPECT_EQ(*hints.EraseDelivered(b, {Rec("k", 7)}), 1u);
  EXPECT_EQ(hints.count(), 1u);
  EXPECT_EQ(hints.Targets().size(), 1u);
  EXPECT_EQ(hints.Targets()[0], a);
}

TEST(HintStoreTest, RefusesBeyondItsBoundsAndSurvivesARestart) {
  MemoryStore store;
  NodeCounters counters;
  const NodeRef a = NodeRef::ForAddress("10.0.0.1:4000");
  {
    HintStore hints(&store, &counters, "10.0.0.9:4000", HintLimits{3, 1 << 20});
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(*hints.Add(a, Rec("k" + std::to_string(i), 1)), HintStore::AddResult::kStored);
    }
    EXPECT_EQ(*hints.Add(a, Rec("k3", 1)), HintStore::AddResult::kFull);
    // Replacing a held hint is not growth in count.
    EXPECT_EQ(*hints.Add(a, Rec("k0", 2)), HintStore::AddResult::kReplaced);
    HintStore small(&store, &counters, "10.0.0.8:4000", HintLimits{100, 100});
    EXPECT_EQ(*small.Add(a, Rec("big", 1, 200)), HintStore::AddResult::kFull);
  }
  // Another life on the same store: the hints are back (counted as loaded); another holder's
  // space is apart.
  NodeCounters after;
  HintStore again(&store, &after, "10.0.0.9:4000");
  ASSERT_TRUE(again.Load().ok());
  EXPECT_EQ(again.count(), 3u);
  EXPECT_EQ(after.hints_loaded, 3u);
  auto page = again.Page(a, 1 << 20, 100);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 3u);
  EXPECT_EQ((*page)[0].key(), "k0");
  EXPECT_EQ((*page)[0].version(), 2u);
  HintStore other(&store, &after, "10.0.0.7:4000");
  ASSERT_TRUE(other.Load().ok());
  EXPECT_EQ(other.count(), 0u);
  EXPECT_EQ(after.hints_loaded, 3u);
  // Each hint ends once: delivered, dropped as too old, or dropped when its stored value is
  // gone; loaded = delivered + dropped + pending.
  EXPECT_EQ(*again.EraseDelivered(a, {(*page)[0]}), 1u);
  EXPECT_EQ(*again.EraseDelivered(a, {(*page)[1]}, /*too_old=*/true), 1u);
  ASSERT_TRUE(store.EraseMeta("hint/10.0.0.9:4000/10.0.0.1:4000\n" + (*page)[2].key()).ok());
  page = again.Page(a, 1 << 20, 100);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->empty());
  EXPECT_EQ(after.hints_delivered, 1u);
  EXPECT_EQ(after.hints_dropped, 2u);
  EXPECT_EQ(after.hints_pending, 0u);
}

// --- on the simulated network --------------------------------------------------------------

std::string Addr(int i) { return "10.0.2." + std::to_string(i) + ":4000"; }

NodeConfig Config() {
  NodeConfig c;
  c.successors = 4;
  c.replicas = 3;
  c.stabilize_ms = 200;
  c.rpc_timeout_ms = 300;
  c.anti_entropy_ms = 600000;  // only hints and reads may repair here
  return c;
}

std::optional<wire::DataResponse> Put(SimNetwork& net, const std::string& via,
                                      const std::string& key, const std::string& value,
                                      wire::Consistency level) {
  wire::Envelope e;
  e.mutable_put()->set_key(key);
  e.mutable_put()->set_value(value);
  e.mutable_put()->set_consistency(level);
  return DataCall(net, via, std::move(e));
}

std::optional<wire::DataResponse> Get(SimNetwork& net, const std::string& via,
                                      const std::string& key, wire::Consistency level) {
  wire::Envelope e;
  e.mutable_get()->set_key(key);
  e.mutable_get()->set_consistency(level);
  return DataCall(net, via, std::move(e));
}

const ChordNode* NodeAt(SimNetwork& net, const std::string& addr) {
  for (const ChordNode* n : net.LiveNodes()) {
    if (n->self().addr == addr) return n;
  }
  return nullptr;
}

class ConsistencySimTest : public ::testing::TestWithParam<size_t> {};

// The paused replica is the owner's successor (1) or the one after it (2).
INSTANTIATE_TEST_SUITE_P(PausedReplica, ConsistencySimTest, ::testing::Values(1, 2));

TEST_P(ConsistencySimTest, QuorumWriteTakesAHintForAPausedReplicaAndAllFails) {
  SimNetwork net(Net(11));
  std::vector<std::string> addrs;
  for (int i = 1; i <= 5; ++i) {
    addrs.push_back(Addr(i));
    net.AddNode(Addr(i), Config(), i == 1 ? "" : Addr(1));
    net.RunFor(300);
  }
  net.RunFor(5000);
  // Ring order from sorted ids, computed here: owner, two replicas, the next (hint holder).
  std::vector<std::pair<Id, std::string>> ring;
  for (const auto& a : addrs) ring.emplace_back(Id::Sha1(a), a);
  std::sort(ring.begin(), ring.end());
  const std::string key = "hinted-key";
  size_t at = 0;
  while (at < ring.size() && ring[at].first < Id::Sha1(key)) ++at;
  auto nth = [&](size_t i) { return ring[(at + i) % ring.size()].second; };
  const std::string owner = nth(0);
  const std::string paused = nth(GetParam());
  const std::string holder = nth(3);
  // Nobody notices the pause: the successor lists keep the paused replica.
  for (const auto& a : addrs) net.SetMaintenance(a, false);
  net.Pause(paused);

  auto put = Put(net, owner, key, "v1", wire::CONSISTENCY_QUORUM);
  ASSERT_TRUE(put);
  EXPECT_EQ(put->code(), wire::OK) << put->error();
  EXPECT_EQ(put->required(), 2u);
  EXPECT_GE(put->acks(), 2u);
  EXPECT_EQ(NodeAt(net, holder)->counters().hints_pending, 1u);
  EXPECT_EQ(NodeAt(net, holder)->counters().hints_stored, 1u);
  wire::Record rec;
  EXPECT_TRUE(net.store(holder)->Get(Id::Sha1(key), key, &rec).IsNotFound());

  auto all = Put(net, owner, key, "v2", wire::CONSISTENCY_ALL);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->code(), wire::UNAVAILABLE);
  EXPECT_EQ(all->acks(), 2u);
  EXPECT_EQ(all->required(), 3u);
  EXPECT_NE(all->error().find("only 2 of 3 replicas stored the write"), std::string::npos)
      << all->error();
  EXPECT_GE(NodeAt(net, owner)->counters().writes_failed, 1u);

  auto quorum_read = Get(net, owner, key, wire::CONSISTENCY_QUORUM);
  ASSERT_TRUE(quorum_read);
  EXPECT_EQ(quorum_read->code(), wire::OK) << quorum_read->error();
  EXPECT_EQ(quorum_read->value(), "v2");  // the failed write stays where it was stored
  EXPECT_EQ(quorum_read->acks(), 2u);
  auto all_read = Get(net, owner, key, wire::CONSISTENCY_ALL);
  ASSERT_TRUE(all_read);
  EXPECT_EQ(all_read->code(), wire::UNAVAILABLE);

  // Back: the hint (v2, the newest) reaches the paused replica and is dropped.
  net.Resume(paused);
  for (const auto& a : addrs) net.SetMaintenance(a, true);
  EXPECT_TRUE(net.RunUntil(
      [&] {
        wire::Record r;
        return NodeAt(net, holder)->counters().hints_pending == 0 &&
               net.store(paused)->Get(Id::Sha1(key), key, &r).ok() && r.value() == "v2";
      },
      30000));
  EXPECT_GE(NodeAt(net, holder)->counters().hints_delivered, 1u);
}

// Starts `n` nodes with `config`, each joining through the first, and returns their addresses
// clockwise from the owner of `key`, from the sorted SHA-1 ids: owner, replicas, the next.
std::vector<std::string> StartClockwiseFrom(SimNetwork& net, const NodeConfig& config, int n,
                                            const std::string& key) {
  std::vector<std::pair<Id, std::string>> ring;
  for (int i = 1; i <= n; ++i) {
    net.AddNode(Addr(i), config, i == 1 ? "" : Addr(1));
    ring.emplace_back(Id::Sha1(Addr(i)), Addr(i));
    net.RunFor(300);
  }
  net.RunFor(5000);
  std::sort(ring.begin(), ring.end());
  size_t at = 0;
  while (at < ring.size() && ring[at].first < Id::Sha1(key)) ++at;
  std::vector<std::string> order;
  for (size_t i = 0; i < ring.size(); ++i) order.push_back(ring[(at + i) % ring.size()].second);
  return order;
}

// A hint older than half the tombstone grace, less the allowed clock skew (the holder's clock
// may be behind), is dropped, not delivered: a delete of its key may have been purged
// meanwhile, and the old copy would bring the key back.
TEST(HintDelivererTest, AHintOlderThanHalfTheTombstoneGraceIsDroppedNotDelivered) {
  SimNetwork net(Net(12));
  NodeConfig config = Config();
  config.tombstone_grace_ms = 6000;
  config.max_clock_skew_ms = 2000;  // so hints may be delivered for 1 s
  const std::string key = "stale-hint";
  const auto order = StartClockwiseFrom(net, config, 5, key);
  const std::string owner = order[0];
  const std::string paused = order[1];
  const std::string holder = order[3];
  for (const auto& a : order) net.SetMaintenance(a, false);
  net.Pause(paused);
  auto put = Put(net, owner, key, "v1", wire::CONSISTENCY_QUORUM);
  ASSERT_TRUE(put);
  ASSERT_EQ(put->code(), wire::OK) << put->error();
  ASSERT_EQ(NodeAt(net, holder)->counters().hints_pending, 1u);
  // Longer than half the grace less the skew, shorter than half the grace, before the member
  // is back.
  net.RunFor(2000);
  net.Resume(paused);
  for (const auto& a : order) net.SetMaintenance(a, true);
  EXPECT_TRUE(
      net.RunUntil([&] { return NodeAt(net, holder)->counters().hints_pending == 0; }, 30000));
  EXPECT_EQ(NodeAt(net, holder)->counters().hints_delivered, 0u);
  wire::Record rec;
  EXPECT_TRUE(net.store(paused)->Get(Id::Sha1(key), key, &rec).IsNotFound());
}

// Where a hint could never be delivered (half the tombstone grace is within the allowed clock
// skew, a grace of 0 included), hints must not count toward a write's consistency level: a
// quorum write that only its owner stored, with both replicas paused, fails instead of being
// acknowledged on copies that will be dropped unsent. With the default grace the same write
// counts its two hints.
TEST(HintDelivererTest, HintsThatCouldNeverBeDeliveredDoNotCountTowardAWrite) {
  for (const uint64_t grace : {uint64_t{0}, uint64_t{4000}, NodeConfig{}.tombstone_grace_ms}) {
    SimNetwork net(Net(13));
    NodeConfig config = Config();
    config.tombstone_grace_ms = grace;
    config.max_clock_skew_ms = 2000;
    const std::string key = "hinted-twice";
    const auto order = StartClockwiseFrom(net, config, 6, key);
    for (const auto& a : order) net.SetMaintenance(a, false);
    net.Pause(order[1]);
    net.Pause(order[2]);
    auto put = Put(net, order[0], key, "v1", wire::CONSISTENCY_QUORUM);
    ASSERT_TRUE(put) << "grace " << grace;
    if (grace == NodeConfig{}.tombstone_grace_ms) {
      EXPECT_EQ(put->code(), wire::OK) << "grace " << grace << ": " << put->error();
    } else {
      EXPECT_EQ(put->code(), wire::UNAVAILABLE) << "grace " << grace;
      EXPECT_NE(put->error().find("which do not count here"), std::string::npos)
          << "grace " << grace << ": " << put->error();
    }
  }
}

}  // namespace
}  // namespace chord
