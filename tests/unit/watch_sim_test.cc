// Watching a key on the simulated network: a new owner that lacks a change its crashed
// predecessor published must not let a watcher skip that change (issue 14, item 5).
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "node/core/chord_node.h"
#include "protocol/id.h"
#include "tests/unit/sim_test_options.h"
#include "tools/sim/sim_network.h"

namespace chord {
namespace {

using sim::SimNetwork;
using test_support::CallAndWait;
using test_support::Net;

std::string Addr(int i) { return "10.0.3." + std::to_string(i) + ":4000"; }

NodeConfig Config() {
  NodeConfig c;
  c.successors = 4;
  c.replicas = 3;
  c.stabilize_ms = 200;
  c.rpc_timeout_ms = 300;
  c.anti_entropy_ms = 600000;  // nothing repairs the missed change behind the test's back
  return c;
}

uint64_t Put(SimNetwork& net, const std::string& via, const std::string& key,
             const std::string& value) {
  wire::Envelope e;
  e.mutable_put()->set_key(key);
  e.mutable_put()->set_value(value);
  e.mutable_put()->set_consistency(wire::CONSISTENCY_QUORUM);
  auto r = CallAndWait(net, via, std::move(e));
  if (!r || !r->has_data_resp() || r->data_resp().code() != wire::OK) return 0;
  return r->data_resp().version();
}

std::optional<wire::WatchResponse> Watch(SimNetwork& net, const std::string& at,
                                         const std::string& key, uint64_t after, bool start) {
  wire::Envelope e;
  e.mutable_watch()->set_key(key);
  e.mutable_watch()->set_after_version(after);
  e.mutable_watch()->set_wait_ms(500);
  e.mutable_watch()->set_start(start);
  auto r = CallAndWait(net, at, std::move(e));
  if (!r || !r->has_watch_resp()) return std::nullopt;
  return r->watch_resp();
}

// Four nodes joined through the first and settled; their (id, address) sorted by id.
std::vector<std::pair<Id, std::string>> StartRing(SimNetwork& net) {
  std::vector<std::pair<Id, std::string>> ring;
  for (int i = 1; i <= 4; ++i) {
    net.AddNode(Addr(i), Config(), i == 1 ? "" : Addr(1));
    ring.emplace_back(Id::Sha1(Addr(i)), Addr(i));
    net.RunFor(300);
  }
  net.RunFor(5000);
  std::sort(ring.begin(), ring.end());
  return ring;
}

// The address `i` places clockwise from `key`'s owner in `ring` (sorted by id).
std::string Clockwise(const std::vector<std::pair<Id, std::string>>& ring, const std::string& key,
                      size_t i) {
  size_t at = 0;
  while (at < ring.size() && ring[at].first < Id::Sha1(key)) ++at;
  return ring[(at + i) % ring.size()].second;
}

TEST(WatchSimTest, ANewOwnerMissingAPublishedChangeMakesWatchersResyncNotSkipIt) {
  SimNetwork net(Net(21));
  const std::string key = "watched";
  // Owner, its two replicas and the next node, from the sorted ids.
  const std::vector<std::pair<Id, std::string>> ring = StartRing(net);
  auto nth = [&](size_t i) { return Clockwise(ring, key, i); };
  const std::string owner = nth(0);
  const std::string next_owner = nth(1);
  const std::string last = nth(3);

  ASSERT_NE(Put(net, owner, key, "v0"), 0u);
  auto start = Watch(net, owner, key, 0, /*start=*/true);
  ASSERT_TRUE(start && start->code() == wire::OK && start->events_size() == 1);
  const uint64_t v1 = Put(net, owner, key, "v1");  // replicated as a watched write
  ASSERT_NE(v1, 0u);

  // The next owner misses v2 (cut off from the owner, unnoticed); the owner and the other
  // replica make a quorum (the node after them is cut off too, so no hint is kept either).
  for (const auto& [id, a] : ring) net.SetMaintenance(a, false);
  net.SetPartition([&](const std::string& from, const std::string& to) {
    return from == owner && (to == next_owner || to == last);
  });
  const uint64_t v2 = Put(net, owner, key, "v2");
  ASSERT_NE(v2, 0u);
  auto seen = Watch(net, owner, key, v1, false);
  ASSERT_TRUE(seen && seen->events_size() == 1);
  EXPECT_EQ(seen->events(0).version(), v2);  // published: some watcher may have it, or not

  // The owner crashes; the node that missed v2 takes the range over.
  net.Crash(owner);
  net.SetPartition(nullptr);
  for (const auto& [id, a] : ring) {
    if (a != owner) net.SetMaintenance(a, true);
  }
  ASSERT_TRUE(net.RunUntil(
      [&] {
        const ChordNode* n = net.node(next_owner);
        return n != nullptr && n->Owns(Id::Sha1(key)) && !n->ring().awaiting_transfer;
      },
      30000))
      << [&] {
           const ChordNode* n = net.node(next_owner);
           if (n == nullptr) return std::string("gone");
           return std::string("joined ") + std::to_string(n->joined()) + " owns " +
                  std::to_string(n->Owns(Id::Sha1(key))) + " awaiting " +
                  std::to_string(n->ring().awaiting_transfer) + " pred " +
                  (n->predecessor() ? n->predecessor()->addr : std::string("none"));
         }();
  const uint64_t v3 = Put(net, next_owner, key, "v3");
  ASSERT_NE(v3, 0u);

  // A watcher that had not seen v2 must not be sent v3 as if it followed v1.
  for (uint64_t after : {v1, v2}) {
    auto w = Watch(net, next_owner, key, after, false);
    ASSERT_TRUE(w) << after;
    ASSERT_EQ(w->code(), wire::OK) << w->error();
    ASSERT_EQ(w->events_size(), 1);
    EXPECT_EQ(w->events(0).type(), wire::WatchEvent::RESYNC) << "after " << after;
    EXPECT_EQ(w->events(0).version(), v3);
    EXPECT_EQ(w->events(0).value(), "v3");
  }
}

TEST(WatchSimTest, AWriteOutrankedByAReplicasNewerRecordIsNeverShown) {
  // The owner lacks a newer record one of its replicas holds (decided by another owner while
  // this one was cut off): its write comes back outranked, the replica's record is stored
  // here, and the coordinator stamps the write again above it. The first stamp never was the
  // key's state: a watcher must not be shown it (nor the same value twice).
  SimNetwork net(Net(23));
  const std::string key = "watched";
  const std::vector<std::pair<Id, std::string>> ring = StartRing(net);
  const std::string owner = Clockwise(ring, key, 0);
  const std::string replica = Clockwise(ring, key, 1);

  const uint64_t v1 = Put(net, owner, key, "v1");
  ASSERT_NE(v1, 0u);
  auto start = Watch(net, owner, key, 0, /*start=*/true);
  ASSERT_TRUE(start && start->code() == wire::OK && start->events_size() == 1);
  wire::Record newer;
  newer.set_key(key);
  newer.set_value("decided elsewhere");
  newer.set_version((net.NowClock().wall_ms + 1000) << 16);  // ahead, within the skew
  newer.set_writer(Id::Sha1(replica).ToBytes());
  ASSERT_TRUE(net.store(replica)->Put(Id::Sha1(key), newer).ok());

  const uint64_t mine = Put(net, owner, key, "mine");
  ASSERT_GT(mine, newer.version());
  auto w = Watch(net, owner, key, v1, false);
  ASSERT_TRUE(w);
  ASSERT_EQ(w->code(), wire::OK) << w->error();
  ASSERT_GT(w->events_size(), 0);
  for (const wire::WatchEvent& e : w->events()) {
    EXPECT_FALSE(e.version() > v1 && e.version() < newer.version())
        << "shown the outranked stamp " << e.version() << " (" << e.value() << ")";
  }
}

}  // namespace
}  // namespace chord
