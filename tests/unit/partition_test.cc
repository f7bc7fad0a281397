// Faults a LAN produces beyond crashes, on the simulated network: a partition (with delayed
// messages) that splits the ring must heal into one ring by itself, with every acknowledged
// write readable at its newest version afterwards; and a write request that reaches a paused
// owner only after a newer write was acknowledged must never win over it. Expected owners and
// rings are computed here from the sorted ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "node/core/chord_node.h"
#include "node/core/membership/member_book.h"
#include "protocol/id.h"
#include "protocol/messages.h"
#include "tests/unit/sim_test_options.h"
#include "tools/sim/ideal_ring.h"
#include "tools/sim/sim_network.h"

namespace chord {
namespace {

using sim::SimNetwork;
using test_support::Net;

std::string Addr(int i) { return "10.0.2." + std::to_string(i) + ":4000"; }

NodeConfig Config() {
  NodeConfig c;
  c.successors = 4;
  c.replicas = 3;
  c.stabilize_ms = 200;
  c.rpc_timeout_ms = 300;
  c.anti_entropy_ms = 1000;
  return c;
}

// Starts `n` nodes joining one after the other and waits for the ideal ring.
std::vector<std::string> StartRing(SimNetwork& net, int n) {
  std::vector<std::string> addrs;
  for (int i = 1; i <= n; ++i) {
    addrs.push_back(Addr(i));
    net.AddNode(addrs.back(), Config(), i == 1 ? "" : Addr(1));
    net.RunFor(300);
  }
  EXPECT_TRUE(net.RunUntil([&] { return sim::IsIdealRing(net, Config().successors); }, 30'000));
  return addrs;
}

// The first address clockwise from SHA-1(key), from the sorted ids of `addrs`.
std::string OwnerOf(const std::string& key, const std::vector<std::string>& addrs) {
  std::vector<std::pair<Id, std::string>> ring;
  for (const auto& a : addrs) ring.emplace_back(Id::Sha1(a), a);
  std::sort(ring.begin(), ring.end());
  const Id k = Id::Sha1(key);
  for (const auto& [id, a] : ring) {
    if (!(id < k)) return a;
  }
  return ring.front().second;
}

// One client call, run until answered.
std::optional<wire::DataResponse> Call(SimNetwork& net, const std::string& addr,
                                       wire::Envelope req) {
  std::optional<wire::DataResponse> out;
  bool done = false;
  net.ClientCall(addr, std::move(req), 20'000, [&](const wire::Envelope* r) {
    done = true;
    if (r != nullptr && r->has_data_resp()) out = r->data_resp();
  });
  net.RunUntil([&] { return done; }, 30'000);
  return out;
}

TEST(LateWriteTest, AWriteQueuedAtAPausedOwnerNeverBeatsANewerAcknowledgedWrite) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SimNetwork net(Net(seed));
    const auto addrs = StartRing(net, 5);
    const std::string key = "register";
    const std::string owner = OwnerOf(key, addrs);
    std::vector<std::string> others;
    for (const auto& a : addrs) {
      if (a != owner) others.push_back(a);
    }
    auto v0 = Call(net, others[0], msg::Put(key, "v0"));
    ASSERT_TRUE(v0 && v0->code() == wire::OK) << "seed " << seed;

    // The owner stops (SIGSTOP): requests for it wait in its queue. A, then B, through other
    // nodes: both acknowledged (by the node after the owner, once it has found it silent).
    net.Pause(owner);
    const uint64_t paused_at = net.now_ms();
    auto a = Call(net, others[0], msg::Put(key, "A"));
    auto b = Call(net, others[1], msg::Put(key, "B"));
    ASSERT_TRUE(a && a->code() == wire::OK) << "seed " << seed << ": " << (a ? a->error() : "");
    ASSERT_TRUE(b && b->code() == wire::OK) << "seed " << seed << ": " << (b ? b->error() : "");
    EXPECT_LT(a->version(), b->version()) << "seed " << seed;

    // 8 s after it stopped the owner runs again and reads what waited for it, A among it.
    net.RunFor(8'000 - std::min<uint64_t>(8'000, net.now_ms() - paused_at));
    net.Resume(owner);
    net.RunFor(10'000);
    EXPECT_GT(net.node(owner)->counters().requests_expired, 0u) << "seed " << seed;
    for (const auto& via : addrs) {
      auto got = Call(net, via, msg::Get(key));
      ASSERT_TRUE(got) << "seed " << seed;
      EXPECT_EQ(got->value(), "B") << "seed " << seed << " via " << via;
      EXPECT_EQ(got->version(), b->version()) << "seed " << seed << " via " << via;
    }
  }
}

// What the writers of the partition test were told.
struct Acks {
  std::map<std::string, std::string> unique;                          // key -> value
  std::map<std::string, std::pair<uint64_t, std::string>> registers;  // newest acked
};

// Every `period_ms` a write through a random live node: a new unique key, or one of ten
// registers. Only acknowledged writes are recorded.
void Write(SimNetwork& net, const std::vector<std::string>& addrs, int n, Acks* acks) {
  const std::string via = addrs[net.rng()() % addrs.size()];
  const bool reg = net.rng()() % 3 == 0;
  const std::string key =
      reg ? "reg-" + std::to_string(net.rng()() % 10) : "key-" + std::to_string(n);
  const std::string value = "w" + std::to_string(n);
  net.ClientCall(via, msg::Put(key, value), 10'000,
                 [acks, key, value, reg](const wire::Envelope* r) {
                   if (r == nullptr || !r->has_data_resp() || r->data_resp().code() != wire::OK)
                     return;
                   const uint64_t v = r->data_resp().version();
                   if (!reg) {
                     acks->unique[key] = value;
                   } else if (acks->registers[key].first < v) {
                     acks->registers[key] = {v, value};
                   }
                 });
}

TEST(PartitionTest, ASplitRingHealsIntoOneAndKeepsEveryAcknowledgedWrite) {
  uint64_t worst_heal_ms = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SimNetwork net(Net(seed));
    const auto addrs = StartRing(net, 8);
    Acks acks;
    int n = 0;
    // Writes every 50 ms: 2 s before, 15 s during and 2 s after a partition of the nodes
    // whose ids lie in the first 40% of the ring from the others; while it lasts every
    // message is also delayed by up to 150 ms.
    auto side = [](const std::string& a) { return Id::Sha1(a).ToUnitFraction() < 0.4; };
    uint64_t healed_at = 0;
    uint64_t ideal_at = 0;  // first moment after the heal that the ring was one ideal ring
    for (int step = 0; step < 380; ++step) {
      if (step == 40) {
        net.SetPartition(
            [side](const std::string& a, const std::string& b) { return side(a) != side(b); });
        net.SetDelay([](const std::string& a, const std::string& b) {
          return (Id::Sha1(a + b).bytes()[0] * 150u) / 255u;
        });
      }
      if (step == 340) {
        // Each side has dropped the other: two rings, no pointer across the cut.
        for (const ChordNode* x : net.LiveNodes()) {
          for (const NodeRef& s : x->successors()) {
            EXPECT_EQ(side(x->self().addr), side(s.addr)) << "seed " << seed << ": not split";
          }
        }
        net.SetPartition(nullptr);
        net.SetDelay(nullptr);
        healed_at = net.now_ms();
      }
      Write(net, addrs, n++, &acks);
      net.RunFor(50);
      if (healed_at != 0 && ideal_at == 0 && sim::IsIdealRing(net, Config().successors)) {
        ideal_at = net.now_ms();
      }
    }
    std::string why;
    ASSERT_TRUE(
        net.RunUntil([&] { return sim::IsIdealRing(net, Config().successors, &why); }, 60'000))
        << "seed " << seed << ": still not one ring: " << why;
    if (ideal_at == 0) ideal_at = net.now_ms();
    worst_heal_ms = std::max(worst_heal_ms, ideal_at - healed_at);
    net.RunFor(15'000);  // anti-entropy and the clean-up walk put every record in place
    ASSERT_GT(acks.unique.size(), 100u) << "seed " << seed;
    for (const auto& [key, value] : acks.unique) {
      auto got = Call(net, addrs[net.rng()() % addrs.size()], msg::Get(key));
      ASSERT_TRUE(got) << "seed " << seed << " " << key;
      EXPECT_EQ(got->value(), value) << "seed " << seed << " " << key << ": " << got->error();
    }
    for (const auto& [key, acked] : acks.registers) {
      auto got = Call(net, addrs[net.rng()() % addrs.size()], msg::Get(key));
      ASSERT_TRUE(got && got->code() == wire::OK) << "seed " << seed << " " << key;
      // The newest acknowledged value, or a write that came later but was never answered.
      EXPECT_GE(got->version(), acked.first) << "seed " << seed << " " << key;
      if (got->version() == acked.first) {
        EXPECT_EQ(got->value(), acked.second) << "seed " << seed << " " << key;
      }
    }
  }
  std::printf("[ info ] worst time from heal to one ideal ring: %llu ms (stabilize 200 ms)\n",
              static_cast<unsigned long long>(worst_heal_ms));
}

// The member book bounds what a node remembers (MemberBook::kMaxMembers). A long partition
// with churn on both sides (processes started on new addresses, joining, and crashing a little
// later) fills every survivor's book with short-lived members of its own side. Those must not
// push out the long-standing members across the cut: once the partition heals, they are the
// only way the two rings find each other.
TEST(PartitionTest, RingsMergeAfterAPartitionWithChurnOnBothSides) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SimNetwork net(Net(seed));
    const auto originals = StartRing(net, 6);
    // Long-standing members: the ring runs as it is for a while before the cut.
    net.RunFor(MemberBook::kEstablishedMs + 10'000);
    // Side A: the first three originals and the fresh nodes of 10.0.3.x; side B the rest.
    auto side_a = [&originals](const std::string& a) {
      return a.rfind("10.0.3.", 0) == 0 || a == originals[0] || a == originals[1] ||
             a == originals[2];
    };
    net.SetPartition(
        [side_a](const std::string& a, const std::string& b) { return side_a(a) != side_a(b); });
    // On each side, more short-lived members than a book holds: each joins through an
    // original of its side, stays long enough to be named in its neighbours' lists, and
    // crashes.
    const int fresh = static_cast<int>(MemberBook::kMaxMembers) + 8;
    for (int i = 1; i <= fresh; ++i) {
      const std::string a = "10.0.3." + std::to_string(i) + ":4000";
      const std::string b = "10.0.4." + std::to_string(i) + ":4000";
      net.AddNode(a, Config(), originals[static_cast<size_t>(i) % 3]);
      net.AddNode(b, Config(), originals[3 + static_cast<size_t>(i) % 3]);
      net.RunFor(2'000);
      net.Crash(a);
      net.Crash(b);
    }
    net.RunFor(5'000);
    for (const ChordNode* x : net.LiveNodes()) {
      for (const NodeRef& s : x->successors()) {
        ASSERT_EQ(side_a(x->self().addr), side_a(s.addr)) << "seed " << seed << ": not split";
      }
    }
    net.SetPartition(nullptr);
    std::string why;
    EXPECT_TRUE(
        net.RunUntil([&] { return sim::IsIdealRing(net, Config().successors, &why); }, 60'000))
        << "seed " << seed << ": still two rings after the heal: " << why;
  }
}

}  // namespace
}  // namespace chord
