// ChordNode driven by the simulated network (virtual time, seeded latency): ring formation,
// convergence to the ideal state, fingers, lookups, key hand-over on join and leave, crash
// recovery and determinism. Expected states are computed here from the sorted node ids.
#include "node/core/chord_node.h"

#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "node/core/lookup.h"
#include "node/core/request_budget.h"
#include "protocol/messages.h"
#include "tests/unit/sim_test_options.h"
#include "tools/sim/sim_network.h"

namespace chord {
namespace {

using test_support::Net;

using sim::SimNetwork;
using sim::SimOptions;

std::string Addr(int i) { return "10.0.0." + std::to_string(i) + ":4000"; }

NodeConfig FastConfig(int successors = 4) {
  NodeConfig c;
  c.successors = successors;
  c.replicas = 1;  // these tests pin single-copy placement; replication_test.cc covers R > 1
  c.stabilize_ms = 200;
  c.rpc_timeout_ms = 300;
  return c;
}

// Sorted ids of the given addresses, computed independently of the nodes' own state.
std::vector<Id> SortedIds(const std::vector<std::string>& addrs) {
  std::vector<Id> ids;
  for (const auto& a : addrs) ids.push_back(Id::Sha1(a));
  std::sort(ids.begin(), ids.end());
  return ids;
}

// The first id clockwise at or after `key` among sorted `ids`.
Id SuccessorOf(const Id& key, const std::vector<Id>& ids) {
  auto it = std::lower_bound(ids.begin(), ids.end(), key);
  return it == ids.end() ? ids.front() : *it;
}

// Every live node's successor list is exactly the next min(S, N-1) nodes clockwise and its
// predecessor the previous node: Zave's ideal state.
bool IsIdeal(const SimNetwork& net, int s, std::string* why = nullptr) {
  auto nodes = net.LiveNodes();
  const size_t n = nodes.size();
  for (size_t i = 0; i < n; ++i) {
    const ChordNode* x = nodes[i];
    if (!x->joined()) {
      if (why) *why = x->self().addr + " not joined";
      return false;
    }
    const size_t want = std::min<size_t>(s, n - 1);
    if (x->successors().size() != want) {
      if (why)
        *why = x->self().addr + " has " + std::to_string(x->successors().size()) +
               " successors, want " + std::to_string(want);
      return false;
    }
    for (size_t k = 0; k < want; ++k) {
      if (!(x->successors()[k].id == nodes[(i + 1 + k) % n]->self().id)) {
        if (why) *why = x->self().addr + " successor " + std::to_string(k) + " wrong";
        return false;
      }
    }
    if (n > 1) {
      if (!x->predecessor() || !(x->predecessor()->id == nodes[(i + n - 1) % n]->self().id)) {
        if (why) *why = x->self().addr + " predecessor wrong";
        return false;
      }
    }
  }
  return true;
}

// Nodes 1..n join one after another through node 1, `gap_ms` of virtual time apart; their
// addresses. The caller waits for the ring to converge.
std::vector<std::string> JoinOneByOne(SimNetwork& net, int n, uint64_t gap_ms = 50) {
  std::vector<std::string> addrs;
  for (int i = 1; i <= n; ++i) {
    addrs.push_back(Addr(i));
    net.AddNode(Addr(i), FastConfig(), i == 1 ? "" : Addr(1));
    net.RunFor(gap_ms);
  }
  return addrs;
}

// Nodes 1..n with `config` (successor lists of 3) joined through node 1, 50 ms apart, run until the
// ring is ideal; its nodes in ring order, or none when it did not get there.
std::vector<const ChordNode*> IdealRing(SimNetwork& net, int n,
                                        const NodeConfig& config = FastConfig(3)) {
  for (int i = 1; i <= n; ++i) {
    net.AddNode(Addr(i), config, i == 1 ? "" : Addr(1));
    net.RunFor(50);
  }
  if (!net.RunUntil([&] { return IsIdeal(net, 3); }, 60000)) return {};
  return net.LiveNodes();
}

wire::Envelope PutReq(const std::string& k, const std::string& v) {
  wire::Envelope e;
  e.mutable_put()->set_key(k);
  e.mutable_put()->set_value(v);
  return e;
}

wire::Envelope GetReq(const std::string& k) {
  wire::Envelope e;
  e.mutable_get()->set_key(k);
  return e;
}

// Issues one client call and runs the network until it is answered.
std::optional<wire::Envelope> Call(SimNetwork& net, const std::string& addr, wire::Envelope req) {
  std::optional<wire::Envelope> out;
  bool done = false;
  net.ClientCall(addr, std::move(req), 20000, [&](const wire::Envelope* r) {
    done = true;
    if (r) out = *r;
  });
  net.RunUntil([&] { return done; }, 30000);
  return out;
}

// Which node holds each key: key -> addr of the node whose store has it.
std::map<std::string, std::vector<std::string>> Holders(SimNetwork& net) {
  std::map<std::string, std::vector<std::string>> out;
  for (const ChordNode* n : net.LiveNodes()) {
    Status s = net.store(n->self().addr)
                   ->Scan(Id::Max(), Id::Max(), [&](const Id&, const wire::Record& r) {
                     out[r.key()].push_back(n->self().addr);
                     return true;
                   });
    EXPECT_TRUE(s.ok());
  }
  return out;
}

TEST(ChordNodeTest, SingleNodeIsARingOfOne) {
  SimNetwork net(Net(1));
  const ChordNode* a = net.AddNode(Addr(1), FastConfig());
  net.RunFor(1000);
  EXPECT_TRUE(a->joined());
  EXPECT_TRUE(a->successors().empty());
  EXPECT_EQ(a->successor().id, a->self().id);
  auto put = Call(net, Addr(1), PutReq("k", "v"));
  ASSERT_TRUE(put && put->has_data_resp());
  EXPECT_EQ(put->data_resp().code(), wire::OK);
  auto get = Call(net, Addr(1), GetReq("k"));
  ASSERT_TRUE(get && get->has_data_resp());
  EXPECT_EQ(get->data_resp().value(), "v");
  auto missing = Call(net, Addr(1), GetReq("nope"));
  ASSERT_TRUE(missing && missing->has_data_resp());
  EXPECT_EQ(missing->data_resp().code(), wire::NOT_FOUND);
}

TEST(ChordNodeTest, ThreeNodesJoinInAnyOrderAndConverge) {
  std::vector<int> order = {1, 2, 3};
  int runs = 0;
  do {
    for (int via = 0; via < 2; ++via) {  // join through the first node, or the latest one
      SimNetwork net(Net(100 + runs));
      net.AddNode(Addr(order[0]), FastConfig(2));
      net.RunFor(300);
      net.AddNode(Addr(order[1]), FastConfig(2), Addr(order[0]));
      net.RunFor(300);
      net.AddNode(Addr(order[2]), FastConfig(2), Addr(order[via == 0 ? 0 : 1]));
      std::string why;
      EXPECT_TRUE(net.RunUntil([&] { return IsIdeal(net, 2); }, 10000))
          << "order " << order[0] << order[1] << order[2] << " via " << via << ": "
          << (IsIdeal(net, 2, &why), why);
      ++runs;
    }
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(runs, 12);
}

TEST(ChordNodeTest, SimultaneousJoinsConverge) {
  SimNetwork net(Net(7));
  net.AddNode(Addr(1), FastConfig(3));
  net.RunFor(100);
  for (int i = 2; i <= 12; ++i) net.AddNode(Addr(i), FastConfig(3), Addr(1));  // all at once
  std::string why;
  EXPECT_TRUE(net.RunUntil([&] { return IsIdeal(net, 3); }, 60000)) << (IsIdeal(net, 3, &why), why);
}

TEST(ChordNodeTest, FingersAreCorrectOnAKnownRing) {
  SimNetwork net(Net(3));
  const std::vector<std::string> addrs = JoinOneByOne(net, 16);
  ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 4); }, 60000));
  net.RunFor(30000);  // let fix_fingers cycle through the table several times
  const auto ids = SortedIds(addrs);
  int checked = 0;
  for (const ChordNode* n : net.LiveNodes()) {
    for (int i = 0; i < Id::kBits; ++i) {
      const Id start = n->self().id + Id::PowerOfTwo(i);
      const Id want = SuccessorOf(start, ids);
      if (want == n->self().id) {
        EXPECT_FALSE(n->finger(i).has_value()) << n->self().addr << " finger " << i;
      } else {
        ASSERT_TRUE(n->finger(i).has_value()) << n->self().addr << " finger " << i;
        EXPECT_EQ(n->finger(i)->id, want) << n->self().addr << " finger " << i;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 16 * Id::kBits);
}

TEST(ChordNodeTest, LookupsFindTheSuccessorOfTheKey) {
  SimNetwork net(Net(4));
  const std::vector<std::string> addrs = JoinOneByOne(net, 32, 20);
  ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 4); }, 60000));
  net.RunFor(20000);
  const auto ids = SortedIds(addrs);
  int total_hops = 0;
  for (int k = 0; k < 200; ++k) {
    const std::string key = "key-" + std::to_string(k);
    wire::Envelope req;
    req.mutable_lookup()->set_key(key);
    auto r = Call(net, addrs[k % addrs.size()], req);
    ASSERT_TRUE(r && r->has_lookup_resp());
    ASSERT_EQ(r->lookup_resp().code(), wire::OK);
    EXPECT_EQ(*Id::FromBytes(r->lookup_resp().owner().id()), SuccessorOf(Id::Sha1(key), ids));
    total_hops += r->lookup_resp().hops();
  }
  // With correct fingers a lookup takes O(log N) hops: far fewer than walking the ring.
  EXPECT_LT(total_hops / 200.0, 6.0);
}

TEST(ChordNodeTest, JoinMovesExactlyTheNewRange) {
  SimNetwork net(Net(5));
  std::vector<std::string> addrs = JoinOneByOne(net, 8);
  ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 4); }, 60000));
  for (int k = 0; k < 300; ++k) {
    auto r =
        Call(net, Addr(1 + k % 8), PutReq("user-" + std::to_string(k), "v" + std::to_string(k)));
    ASSERT_TRUE(r && r->data_resp().code() == wire::OK) << k;
  }
  auto before = Holders(net);
  ASSERT_EQ(before.size(), 300u);

  const std::string joiner = Addr(9);
  net.AddNode(joiner, FastConfig(), Addr(3));
  addrs.push_back(joiner);
  EXPECT_FALSE(IsIdeal(net, 4));
  ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 4); }, 60000));
  net.RunFor(2000);
  auto after = Holders(net);
  const auto ids = SortedIds(addrs);
  const Id j = Id::Sha1(joiner);
  int moved = 0;
  for (const auto& [key, holders] : after) {
    ASSERT_EQ(holders.size(), 1u) << key;
    ASSERT_EQ(before[key].size(), 1u);
    if (SuccessorOf(Id::Sha1(key), ids) == j) {
      EXPECT_EQ(holders[0], joiner) << key;
      ++moved;
    } else {
      EXPECT_EQ(holders[0], before[key][0]) << key << " moved but is not in the new range";
    }
  }
  EXPECT_EQ(after.size(), 300u);
  auto counts = net.node(joiner)->KeyCounts();
  ASSERT_TRUE(counts.ok()) << counts.status().message();
  EXPECT_EQ(counts->primary, static_cast<uint64_t>(moved));
}

TEST(ChordNodeTest, GracefulLeaveHandsEveryKeyToTheSuccessor) {
  SimNetwork net(Net(6));
  JoinOneByOne(net, 6);
  ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 4); }, 60000));
  for (int k = 0; k < 200; ++k) {
    auto r = Call(net, Addr(1), PutReq("k" + std::to_string(k), "v" + std::to_string(k)));
    ASSERT_TRUE(r && r->data_resp().code() == wire::OK);
  }
  const std::string leaver = Addr(4);
  const uint64_t leaver_keys = net.store(leaver)->Count();
  const std::string succ = net.node(leaver)->successor().addr;
  const uint64_t succ_keys = net.store(succ)->Count();
  net.Leave(leaver);
  ASSERT_TRUE(net.RunUntil([&] { return net.node(leaver) == nullptr; }, 20000));
  EXPECT_EQ(net.store(succ)->Count(), succ_keys + leaver_keys);
  ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 4); }, 60000));
  for (int k = 0; k < 200; ++k) {
    auto r = Call(net, Addr(2), GetReq("k" + std::to_string(k)));
    ASSERT_TRUE(r && r->has_data_resp());
    EXPECT_EQ(r->data_resp().value(), "v" + std::to_string(k));
  }
}

// Two neighbours leave at the same moment: the first hands its keys to a node that is itself
// leaving, which must refuse them so that they go further along the ring instead of leaving
// with it. No key may be lost, over many seeds.
TEST(ChordNodeTest, AdjacentSimultaneousLeavesLoseNoKey) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SimNetwork net(Net(1000 + seed));
    for (int i = 1; i <= 8; ++i) {
      net.AddNode(Addr(i), FastConfig(3), i == 1 ? "" : Addr(1));
      net.RunFor(50);
    }
    ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 3); }, 60000)) << "seed " << seed;
    std::map<std::string, std::string> acked;
    for (int k = 0; k < 100; ++k) {
      const std::string key = "k" + std::to_string(k), value = "v" + std::to_string(seed);
      auto r = Call(net, Addr(1), PutReq(key, value));
      if (r && r->data_resp().code() == wire::OK) acked[key] = value;
    }
    ASSERT_EQ(acked.size(), 100u) << "seed " << seed;
    auto nodes = net.LiveNodes();
    const size_t i = seed % nodes.size();
    const std::string a = nodes[i]->self().addr, b = nodes[(i + 1) % nodes.size()]->self().addr;
    net.Leave(a);
    net.Leave(b);
    ASSERT_TRUE(net.RunUntil([&] { return !net.node(a) && !net.node(b); }, 60000))
        << "seed " << seed;
    ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 3); }, 60000)) << "seed " << seed;
    const std::string via = net.LiveNodes().front()->self().addr;
    for (const auto& [key, value] : acked) {
      auto r = Call(net, via, GetReq(key));
      ASSERT_TRUE(r && r->has_data_resp()) << "seed " << seed << " " << key;
      EXPECT_EQ(r->data_resp().code(), wire::OK) << "seed " << seed << " " << key << " lost";
      EXPECT_EQ(r->data_resp().value(), value) << "seed " << seed << " " << key;
    }
  }
}

TEST(ChordNodeTest, RingHealsAfterCrashes) {
  SimNetwork net(Net(8));
  for (int i = 1; i <= 10; ++i) {
    net.AddNode(Addr(i), FastConfig(3), i == 1 ? "" : Addr(1));
    net.RunFor(50);
  }
  ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 3); }, 60000));
  // Two adjacent nodes crash at once; each survivor still has a live successor (r = 3).
  auto nodes = net.LiveNodes();
  const std::string a = nodes[3]->self().addr, b = nodes[4]->self().addr;
  net.Crash(a);
  net.Crash(b);
  EXPECT_FALSE(IsIdeal(net, 3));  // survivors still point at the dead nodes
  const uint64_t crashed_at = net.now_ms();
  std::string why;
  EXPECT_TRUE(net.RunUntil([&] { return IsIdeal(net, 3); }, 60000)) << (IsIdeal(net, 3, &why), why);
  EXPECT_EQ(net.LiveNodes().size(), 8u);
  EXPECT_GT(net.now_ms(), crashed_at);  // healing took failure detection and stabilization
}

TEST(ChordNodeTest, APredecessorRestartedButNotJoinedIsNotKept) {
  // A node crashes and comes straight back on its address, but cannot join (its join address
  // is gone). It answers requests, yet it is no member: its successor must not keep it as
  // predecessor because something answered, or the range before it would have no owner.
  SimNetwork net(Net(8));
  const auto nodes = IdealRing(net, 5);
  ASSERT_EQ(nodes.size(), 5u);
  const std::string w = nodes[1]->self().addr;
  const std::string p = nodes[2]->self().addr;
  const std::string s = nodes[3]->self().addr;
  ASSERT_TRUE(nodes[3]->predecessor() && nodes[3]->predecessor()->addr == p);
  net.Crash(p);
  net.AddNode(p, FastConfig(3), "10.0.9.9:4000");  // nobody there
  net.RunFor(10000);
  ASSERT_FALSE(net.node(p)->joined());
  const ChordNode* after = net.node(s);
  ASSERT_TRUE(after->predecessor());
  EXPECT_EQ(after->predecessor()->addr, w);
  ASSERT_FALSE(net.node(w)->successors().empty());
  EXPECT_EQ(net.node(w)->successors().front().addr, s);
}

TEST(ChordNodeTest, AMergeHintWhileThePredecessorIsUnknownDoesNotStretchTheRange) {
  // A node whose predecessor died keeps its range's start (the dead predecessor) until the
  // node before that notifies it. A merge hint in that window (any member may send one, and
  // the merger's own probes name remembered members) must not make a member far round the
  // ring its predecessor: its range would then cover keys that others own.
  SimNetwork net(Net(8));
  const auto nodes = IdealRing(net, 8);
  ASSERT_EQ(nodes.size(), 8u);
  const std::string w = nodes[1]->self().addr;
  const std::string x = nodes[2]->self().addr;
  const std::string s = nodes[3]->self().addr;
  const NodeRef far = nodes[0]->self();  // neither next to S nor in its successor list
  // W cannot reach S, so S stays without a predecessor once X is gone.
  net.SetPartition([w, s](const std::string& from, const std::string& to) {
    return (from == w && to == s) || (from == s && to == w);
  });
  net.Crash(x);
  ASSERT_TRUE(net.RunUntil([&] { return !net.node(s)->predecessor(); }, 10000));
  wire::Envelope hint;
  far.ToWire(hint.mutable_merge_hint()->mutable_candidate());
  hint.mutable_merge_hint()->set_hops_left(4);
  bool answered = false;
  net.ClientCall(s, std::move(hint), 5000,
                 [&](const wire::Envelope* r) { answered = r != nullptr; });
  net.RunFor(3000);
  ASSERT_TRUE(answered);
  const auto& pred = net.node(s)->predecessor();
  EXPECT_FALSE(pred && pred->addr == far.addr) << "took " << far.addr << " as its predecessor";
  // Once W reaches it, W is its predecessor.
  net.SetPartition(nullptr);
  EXPECT_TRUE(net.RunUntil(
      [&] {
        const auto& p = net.node(s)->predecessor();
        return p && p->addr == w;
      },
      20000));
}

TEST(ChordNodeTest, ANodeThatLeftAndCameBackIsAdoptedLaterByAnyNeighbour) {
  // A node that leaves is remembered by its neighbours (its predecessor Z and successor B) so
  // that its own late notifies are ignored. Back on its address, it notifies B (asking for
  // its keys), and B forgets that it left; Z does not hear from it then. When B later
  // crashes, Z becomes its successor and hears its notifies (no keys asked for now): Z must
  // take it as predecessor, not ignore it for good.
  SimNetwork net(Net(8));
  const auto nodes = IdealRing(net, 3);
  ASSERT_EQ(nodes.size(), 3u);
  const std::string z = nodes[0]->self().addr;
  const std::string a = nodes[1]->self().addr;
  const std::string b = nodes[2]->self().addr;
  net.Leave(a);
  ASSERT_TRUE(net.RunUntil([&] { return net.node(a) == nullptr; }, 30000));
  net.RunFor(1000);
  net.AddNode(a, FastConfig(3), z);
  ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 3); }, 60000));
  net.Crash(b);
  std::string why;
  EXPECT_TRUE(net.RunUntil([&] { return IsIdeal(net, 3); }, 60000)) << (IsIdeal(net, 3, &why), why);
  const auto& pred = net.node(z)->predecessor();
  ASSERT_TRUE(pred);
  EXPECT_EQ(pred->addr, a);
}

TEST(ChordNodeTest, ClientLookupsUnderWayAtOneNodeAreBounded) {
  // Each client Lookup holds an operation that asks other members until it ends: a client
  // sending many while they are slow (here: the node is cut from the others, so each waits
  // out its timeouts) must not make the node hold them without bound.
  SimNetwork net(Net(8));
  ASSERT_EQ(IdealRing(net, 3).size(), 3u);
  const std::string x = Addr(1);
  const std::vector<Id> ids = SortedIds({Addr(1), Addr(2), Addr(3)});
  net.SetPartition(
      [x](const std::string& from, const std::string& to) { return (from == x) != (to == x); });
  const size_t sent = LookupService::kMaxClientLookups + 500;
  size_t answered = 0, refused = 0;
  for (size_t i = 0, n = 0; n < sent && i < 100 * sent; ++i) {
    const std::string key = "key-" + std::to_string(i);
    if (SuccessorOf(Id::Sha1(key), ids) == Id::Sha1(x)) continue;  // owned by x itself
    ++n;
    wire::Envelope e;
    e.mutable_lookup()->set_key(key);
    net.ClientCall(x, std::move(e), 60000, [&](const wire::Envelope* r) {
      if (r == nullptr || !r->has_lookup_resp()) return;
      ++answered;
      if (r->lookup_resp().code() == wire::UNAVAILABLE &&
          r->lookup_resp().error().find("lookups for clients") != std::string::npos) {
        ++refused;
      }
    });
  }
  ASSERT_TRUE(net.RunUntil([&] { return answered == sent; }, 60000)) << answered;
  EXPECT_GE(refused, 1u);
  EXPECT_LE(refused, sent - 1);
}

// A client call's callback that counts data answers in *answered, and in *shed those that
// refused the request because the node holds its limit of requests under way.
SimNetwork::ClientCallback CountShed(size_t* answered, size_t* shed) {
  return [answered, shed](const wire::Envelope* r) {
    if (r == nullptr || !r->has_data_resp()) return;
    ++*answered;
    if (r->data_resp().code() == wire::UNAVAILABLE &&
        r->data_resp().error().find("of requests under way") != std::string::npos) {
      ++*shed;
    }
  };
}

TEST(ChordNodeTest, FieldsTheNodeDoesNotKnowCountInWhatARequestHolds) {
  // A parsed request keeps the fields this build does not know, and one passed on to its
  // key's owner carries them: a client's gets padded with 1 MiB of such a field each, waiting
  // for owners the node cannot reach, must be charged for it and refused once the node holds
  // its limit of requests, not held by the hundred at 512 bytes each.
  SimNetwork net(Net(9));
  ASSERT_EQ(IdealRing(net, 3).size(), 3u);
  const std::string x = Addr(1);
  const std::vector<Id> ids = SortedIds({Addr(1), Addr(2), Addr(3)});
  net.SetPartition(
      [x](const std::string& from, const std::string& to) { return (from == x) != (to == x); });
  const std::string padding(1 << 20, 'p');
  const size_t sent = 64;  // 64 MiB against the 16 MiB a node's coordinated requests may hold
  size_t answered = 0, shed = 0;
  for (size_t i = 0, n = 0; n < sent && i < 100 * sent; ++i) {
    const std::string key = "key-" + std::to_string(i);
    if (SuccessorOf(Id::Sha1(key), ids) == Id::Sha1(x)) continue;  // owned by x itself
    ++n;
    wire::Envelope e = msg::Get(key);
    e.GetReflection()->MutableUnknownFields(&e)->AddLengthDelimited(1000, padding);
    ASSERT_GT(e.ByteSizeLong(), padding.size());
    net.ClientCall(x, std::move(e), 60000, CountShed(&answered, &shed));
  }
  ASSERT_TRUE(net.RunUntil([&] { return answered == sent; }, 60000)) << answered;
  const size_t limit = RequestBudget::HalfLimit(FastConfig(3).max_request_bytes_in_flight);
  EXPECT_GE(shed, sent - (limit >> 20) - 1);
  EXPECT_LE(shed, sent - 1);
}

TEST(ChordNodeTest, AnOwnerChargesTheWritesItWaitsOnForTheirValuesAndUnknownFields) {
  // Direct writes to their key's owner that wait for replicas it cannot reach are held by the
  // owner: each must be charged all it carries, its value (which the owner hands to the record
  // it stores) and fields this build does not know, and new ones refused once the owner holds
  // its limit. A third of the writes carry 512 KiB of value, a third 512 KiB of unknown fields,
  // and a third are conditional (if absent: the replicas are read first) with 512 KiB of
  // unknown fields.
  SimNetwork net(Net(11));
  NodeConfig config = FastConfig(3);
  config.replicas = 3;
  ASSERT_EQ(IdealRing(net, 3, config).size(), 3u);
  const std::string x = Addr(1);
  const std::vector<Id> ids = SortedIds({Addr(1), Addr(2), Addr(3)});
  net.SetPartition(
      [x](const std::string& from, const std::string& to) { return (from == x) != (to == x); });
  const std::string half(512 << 10, 'p');
  const size_t sent = 96;  // 48 MiB against the 16 MiB a node's owned requests may hold
  size_t answered = 0, shed = 0;
  for (size_t i = 0, n = 0; n < sent && i < 100 * sent; ++i) {
    const std::string key = "key-" + std::to_string(i);
    if (SuccessorOf(Id::Sha1(key), ids) != Id::Sha1(x)) continue;  // owned by another node
    wire::Envelope e = msg::AsDirect(PutReq(key, n % 3 == 0 ? half : "v"));
    if (n % 3 != 0) e.GetReflection()->MutableUnknownFields(&e)->AddLengthDelimited(1000, half);
    if (n % 3 == 2) e.mutable_put()->set_if_absent(true);
    ++n;
    net.ClientCall(x, std::move(e), 60000, CountShed(&answered, &shed));
  }
  ASSERT_TRUE(net.RunUntil([&] { return answered == sent; }, 60000)) << answered;
  const size_t limit = RequestBudget::HalfLimit(config.max_request_bytes_in_flight);
  EXPECT_GE(shed, sent - (limit >> 19) - 1);
  EXPECT_LE(shed, sent - 1);
}

TEST(ChordNodeTest, SameSeedSameRun) {
  auto run = [](uint64_t seed) {
    SimNetwork net(Net(seed));
    for (int i = 1; i <= 10; ++i) net.AddNode(Addr(i), FastConfig(3), i == 1 ? "" : Addr(1));
    net.RunFor(20000);
    std::string fingerprint = std::to_string(net.events_processed());
    for (const ChordNode* n : net.LiveNodes()) {
      for (const auto& s : n->successors()) fingerprint += s.id.ShortHex(4);
      fingerprint += n->predecessor() ? n->predecessor()->id.ShortHex(4) : "-";
    }
    return fingerprint;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(ChordNodeTest, OversizedKeysAndValuesAreRejectedWithAReason) {
  SimNetwork net(Net(9));
  net.AddNode(Addr(1), FastConfig());
  net.RunFor(100);
  auto r = Call(net, Addr(1), PutReq(std::string(1025, 'k'), "v"));
  ASSERT_TRUE(r && r->has_data_resp());
  EXPECT_EQ(r->data_resp().code(), wire::INVALID);
  EXPECT_NE(r->data_resp().error().find("1025"), std::string::npos);
  r = Call(net, Addr(1), PutReq("k", std::string((1 << 20) + 1, 'v')));
  ASSERT_TRUE(r && r->has_data_resp());
  EXPECT_EQ(r->data_resp().code(), wire::INVALID);
  r = Call(net, Addr(1), PutReq("", "v"));
  ASSERT_TRUE(r && r->has_data_resp());
  EXPECT_EQ(r->data_resp().code(), wire::INVALID);
}

// A client's get or put of a key the asked node owns is served there, in no hops (before, the
// owner looked the key up like any node: a hop to its predecessor and back); a get of any other
// key is looked up. Both read the value written; the answer relayed by the other node names the
// owner computed here from the sorted ids (the owner's own answer names nobody).
TEST(ChordNodeTest, AGetOfAKeyTheNodeOwnsIsServedWithoutALookup) {
  SimNetwork net(Net(10));
  const std::vector<std::string> addrs = JoinOneByOne(net, 5);
  ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 4); }, 60000));
  const auto ids = SortedIds(addrs);
  std::map<Id, std::string> addr_of;
  for (const std::string& a : addrs) addr_of[Id::Sha1(a)] = a;
  int owned = 0, elsewhere = 0;
  for (int k = 0; k < 60; ++k) {
    const std::string key = "key-" + std::to_string(k);
    const std::string owner = addr_of.at(SuccessorOf(Id::Sha1(key), ids));
    auto put = Call(net, owner, PutReq(key, "v" + std::to_string(k)));
    ASSERT_TRUE(put && put->data_resp().code() == wire::OK) << key;
    EXPECT_EQ(put->data_resp().hops(), 0u) << key;
    // The node after the owner: the key lies just behind it.
    const std::string other = addr_of.at(SuccessorOf(Id::Sha1(owner) + Id::PowerOfTwo(0), ids));
    for (const std::string& asked : {owner, other}) {
      SCOPED_TRACE(key + " asked at " + asked);
      auto got = Call(net, asked, GetReq(key));
      ASSERT_TRUE(got && got->has_data_resp());
      EXPECT_EQ(got->data_resp().code(), wire::OK);
      EXPECT_EQ(got->data_resp().value(), "v" + std::to_string(k));
      if (asked == owner) {
        // The owner does not name itself: the client knows whom it asked.
        EXPECT_FALSE(got->data_resp().has_owner());
        EXPECT_EQ(got->data_resp().hops(), 0u);
        ++owned;
      } else {
        // A relayed answer names the owner that served it.
        ASSERT_TRUE(got->data_resp().has_owner());
        EXPECT_EQ(*Id::FromBytes(got->data_resp().owner().id()), Id::Sha1(owner));
        EXPECT_EQ(got->data_resp().owner().addr(), owner);
        EXPECT_GE(got->data_resp().hops(), 1u);
        ++elsewhere;
      }
    }
  }
  EXPECT_EQ(owned, 60);
  EXPECT_EQ(elsewhere, 60);
}

// A client's put or delete of a key its node owns, on a ring without copies (R = 1), is
// versioned there, above the record it replaces, whatever version and writer the client put in
// the request: a record stored behind the node's clock's back with a higher version than the
// node has seen is still outranked, nothing answers "superseded", and the record stored names
// the node as its writer.
TEST(ChordNodeTest, AWriteAtItsOwnerIsVersionedThereAboveTheStoredRecord) {
  SimNetwork net(Net(12));
  net.AddNode(Addr(1), FastConfig());
  net.RunFor(100);
  const Id key_id = Id::Sha1("k");
  const std::string self = Id::Sha1(Addr(1)).ToBytes();
  auto first = Call(net, Addr(1), PutReq("k", "v1"));
  ASSERT_TRUE(first && first->data_resp().code() == wire::OK);
  const uint64_t v1 = first->data_resp().version();
  ASSERT_GT(v1, 0u);
  // Another writer's record, 1000 versions ahead of anything the node has stamped.
  wire::Record ahead;
  ahead.set_key("k");
  ahead.set_value("ahead");
  ahead.set_version(v1 + 1000);
  ahead.set_writer(Id::Sha1("another node").ToBytes());
  ASSERT_TRUE(net.store(Addr(1))->Put(key_id, ahead).ok());
  for (const bool del : {false, true}) {
    SCOPED_TRACE(del ? "delete" : "put");
    wire::Envelope req;
    if (del) {
      req.mutable_del()->set_key("k");
      req.mutable_del()->set_version(v1 + 5000);
      req.mutable_del()->set_writer(std::string(Id::kBytes, 'e'));
    } else {
      req = PutReq("k", "v2");
      req.mutable_put()->set_version(v1 + 5000);
      req.mutable_put()->set_writer(std::string(Id::kBytes, 'e'));
    }
    auto r = Call(net, Addr(1), std::move(req));
    ASSERT_TRUE(r && r->has_data_resp());
    EXPECT_EQ(r->data_resp().code(), wire::OK) << r->data_resp().error();
    EXPECT_EQ(r->data_resp().superseded_by(), 0u);
    EXPECT_GT(r->data_resp().version(), v1 + 1000);
    EXPECT_NE(r->data_resp().version(), v1 + 5000);
    wire::Record stored;
    ASSERT_TRUE(net.store(Addr(1))->Get(key_id, "k", &stored).ok());
    EXPECT_EQ(stored.version(), r->data_resp().version());
    EXPECT_EQ(stored.writer(), self);
    EXPECT_EQ(stored.deleted(), del);
    if (!del) {
      EXPECT_EQ(stored.value(), "v2");
    }
  }
  auto got = Call(net, Addr(1), GetReq("k"));
  ASSERT_TRUE(got && got->has_data_resp());
  EXPECT_EQ(got->data_resp().code(), wire::NOT_FOUND);
  // Conditional and TTL writes are versioned through the condition check: if_absent holds
  // over the tombstone, a second if_absent conflicts, if_version of the current version holds,
  // and a TTL write's expiry follows its version.
  wire::Envelope absent = PutReq("k", "v3");
  absent.mutable_put()->set_if_absent(true);
  auto a = Call(net, Addr(1), absent);
  ASSERT_TRUE(a && a->has_data_resp());
  ASSERT_EQ(a->data_resp().code(), wire::OK) << a->data_resp().error();
  a = Call(net, Addr(1), absent);
  ASSERT_TRUE(a && a->has_data_resp());
  EXPECT_EQ(a->data_resp().code(), wire::CONFLICT);
  wire::Record current;
  ASSERT_TRUE(net.store(Addr(1))->Get(key_id, "k", &current).ok());
  wire::Envelope cas = PutReq("k", "v4");
  cas.mutable_put()->set_if_version(current.version());
  cas.mutable_put()->set_ttl_ms(60000);
  auto c = Call(net, Addr(1), cas);
  ASSERT_TRUE(c && c->has_data_resp());
  ASSERT_EQ(c->data_resp().code(), wire::OK) << c->data_resp().error();
  EXPECT_GT(c->data_resp().version(), current.version());
  wire::Record after;
  ASSERT_TRUE(net.store(Addr(1))->Get(key_id, "k", &after).ok());
  EXPECT_EQ(after.value(), "v4");
  EXPECT_EQ(after.writer(), self);
  EXPECT_EQ(after.expires_unix_ms(), (after.version() >> 16) + 60000);
}

// The owner reads and replaces records through buffers it keeps from one request to the next:
// no answer and no stored record may carry anything of the record handled before it. Reads
// and writes of records with and without a value, an expiry, a tombstone alternate; every
// answer is checked against what was written.
TEST(ChordNodeTest, EachReadAndWriteAtTheOwnerCarriesNothingOfTheOneBefore) {
  SimNetwork net(Net(13));
  net.AddNode(Addr(1), FastConfig());
  net.RunFor(100);
  const std::string self = Id::Sha1(Addr(1)).ToBytes();
  const std::string long_value(300, 'L');
  wire::Envelope with_ttl = PutReq("ttl", long_value);
  with_ttl.mutable_put()->set_ttl_ms(60000);
  auto t = Call(net, Addr(1), std::move(with_ttl));
  ASSERT_TRUE(t && t->data_resp().code() == wire::OK) << (t ? t->data_resp().error() : "");
  auto p = Call(net, Addr(1), PutReq("plain", "short"));
  ASSERT_TRUE(p && p->data_resp().code() == wire::OK);
  wire::Envelope del;
  del.mutable_del()->set_key("gone");
  auto d = Call(net, Addr(1), std::move(del));
  ASSERT_TRUE(d && d->data_resp().code() == wire::OK);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (const std::string key : {"ttl", "plain", "gone", "never-written", "plain", "ttl"}) {
      SCOPED_TRACE(key);
      auto got = Call(net, Addr(1), GetReq(key));
      ASSERT_TRUE(got && got->has_data_resp());
      const wire::DataResponse& r = got->data_resp();
      if (key == "ttl") {
        EXPECT_EQ(r.code(), wire::OK);
        EXPECT_EQ(r.value(), long_value);
        EXPECT_EQ(r.expires_unix_ms(), (r.version() >> 16) + 60000);
      } else if (key == "plain") {
        EXPECT_EQ(r.code(), wire::OK);
        EXPECT_EQ(r.value(), "short");
        EXPECT_EQ(r.expires_unix_ms(), 0u);
        EXPECT_EQ(r.version(), p->data_resp().version());
      } else {
        EXPECT_EQ(r.code(), wire::NOT_FOUND);
        EXPECT_TRUE(r.value().empty());
        EXPECT_EQ(r.expires_unix_ms(), 0u);
      }
    }
    // A write replacing a record with an expiry by one without, and back: the record stored
    // is the write's own, whatever the one it replaced said.
    const bool to_plain = round % 2 == 0;
    wire::Record before;
    ASSERT_TRUE(net.store(Addr(1))->Get(Id::Sha1("ttl"), "ttl", &before).ok());
    wire::Envelope rewrite = PutReq("ttl", to_plain ? "now-plain" : long_value);
    if (!to_plain) rewrite.mutable_put()->set_ttl_ms(60000);
    auto w = Call(net, Addr(1), std::move(rewrite));
    ASSERT_TRUE(w && w->data_resp().code() == wire::OK);
    // Versioned above the record it replaced, as read through the kept record.
    EXPECT_GT(w->data_resp().version(), before.version());
    wire::Record stored;
    ASSERT_TRUE(net.store(Addr(1))->Get(Id::Sha1("ttl"), "ttl", &stored).ok());
    EXPECT_EQ(stored.version(), w->data_resp().version());
    EXPECT_EQ(stored.writer(), self);
    EXPECT_FALSE(stored.deleted());
    EXPECT_EQ(stored.value(), to_plain ? "now-plain" : long_value);
    EXPECT_EQ(stored.expires_unix_ms(), to_plain ? 0u : (stored.version() >> 16) + 60000);
    // Put the record back as the reads above expect it.
    wire::Envelope back = PutReq("ttl", long_value);
    back.mutable_put()->set_ttl_ms(60000);
    auto b = Call(net, Addr(1), std::move(back));
    ASSERT_TRUE(b && b->data_resp().code() == wire::OK);
  }
}

// A node that has joined but not yet received its keys does not serve a get of its new range
// from its empty store, nor answer NOT_OWNER: the get waits (lookups with back-off) until the
// hand-over is in, then reads the value written before the join.
TEST(ChordNodeTest, AGetAtAJoinerAwaitingItsKeysReadsTheValueOnceTheyArrive) {
  SimNetwork net(Net(11));
  const std::vector<std::string> addrs = JoinOneByOne(net, 4);
  ASSERT_TRUE(net.RunUntil([&] { return IsIdeal(net, 4); }, 60000));
  const std::string joiner = Addr(5);
  std::vector<std::string> after = addrs;
  after.push_back(joiner);
  const auto ids = SortedIds(after);
  // Keys whose owner, once the joiner is in, is the joiner (computed from the sorted ids).
  std::vector<std::string> moving;
  for (int k = 0; k < 400 && moving.size() < 5; ++k) {
    const std::string key = "key-" + std::to_string(k);
    if (SuccessorOf(Id::Sha1(key), ids) == Id::Sha1(joiner)) moving.push_back(key);
  }
  ASSERT_FALSE(moving.empty());
  for (const std::string& key : moving) {
    auto put = Call(net, Addr(1), PutReq(key, "before-" + key));
    ASSERT_TRUE(put && put->data_resp().code() == wire::OK) << key;
  }
  // Slow the hand-over: everything the joiner's successor sends the joiner takes 2 s.
  const std::string successor_addr = [&] {
    const Id next = SuccessorOf(Id::Sha1(joiner) + Id::PowerOfTwo(0), ids);
    for (const std::string& a : addrs) {
      if (Id::Sha1(a) == next) return a;
    }
    return std::string();
  }();
  ASSERT_FALSE(successor_addr.empty());
  net.SetDelay([&](const std::string& from, const std::string& to) -> uint64_t {
    return from == successor_addr && to == joiner ? 2000 : 0;
  });
  const ChordNode* j = net.AddNode(joiner, FastConfig(), Addr(1));
  ASSERT_TRUE(net.RunUntil([&] { return j->joined() && j->ring().awaiting_transfer; }, 20000))
      << "the joiner never waited for its keys";
  net.SetDelay(nullptr);
  for (const std::string& key : moving) {
    auto got = Call(net, joiner, GetReq(key));
    ASSERT_TRUE(got && got->has_data_resp()) << key;
    EXPECT_EQ(got->data_resp().code(), wire::OK) << key << ": " << got->data_resp().error();
    EXPECT_EQ(got->data_resp().value(), "before-" + key);
  }
}

}  // namespace
}  // namespace chord
