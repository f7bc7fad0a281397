// The simulator's experiments at reduced sizes (seconds each), with the paper's bounds
// asserted loosely, Zave's invariants under heavy churn on small rings over many seeds, the
// invariant checker itself, and determinism (same seed and flags, same output).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "tools/sim/balance_experiment.h"
#include "tools/sim/churn_experiment.h"
#include "tools/sim/fail_experiment.h"
#include "tools/sim/ideal_ring.h"
#include "tools/sim/invariant_checker.h"
#include "tools/sim/lookup_experiment.h"

namespace chord::sim {
namespace {

TEST(LookupExperimentTest, PathLengthIsAboutHalfLog2N) {
  LookupOptions o;
  o.nodes = 1024;
  o.lookups = 5000;
  o.successors = 1;  // the paper's Fig. 10 setting: no successor-list shortcut
  o.seed = 7;
  const LookupReport r = RunLookupExperiment(o);
  const double half_log = 0.5 * std::log2(1024.0);
  EXPECT_GT(r.hops_mean, 0.8 * half_log);
  EXPECT_LT(r.hops_mean, 1.3 * half_log);
  EXPECT_LE(r.hops_p1, r.hops_p50);
  EXPECT_LE(r.hops_p50, r.hops_p99);
  EXPECT_LE(r.hops_p99, 2 * std::log2(1024.0));
  EXPECT_LT(r.failed, o.lookups / 100);
}

TEST(LookupExperimentTest, SuccessorListsShortenLookupsAndNoneFail) {
  LookupOptions o;
  o.nodes = 1024;
  o.lookups = 5000;
  o.seed = 7;
  o.successors = 8;
  const LookupReport with_list = RunLookupExperiment(o);
  o.successors = 1;
  const LookupReport without = RunLookupExperiment(o);
  EXPECT_EQ(with_list.failed, 0);
  EXPECT_LT(with_list.hops_mean, without.hops_mean);
}

TEST(BalanceExperimentTest, VirtualNodesEvenOutTheLoad) {
  BalanceOptions o;
  o.nodes = 1000;
  o.keys = 100000;
  o.vnodes = 1;
  const BalanceReport one = RunBalanceExperiment(o);
  o.vnodes = 20;
  const BalanceReport twenty = RunBalanceExperiment(o);
  EXPECT_DOUBLE_EQ(one.mean, 100.0);
  EXPECT_DOUBLE_EQ(twenty.mean, 100.0);
  // Paper, Fig. 8-9: p99/mean about 4.8 with one id per node, about 1.6 with 20.
  EXPECT_GT(one.p99 / one.mean, 3.5);
  EXPECT_LT(twenty.p99 / twenty.mean, 2.2);
  EXPECT_LT(one.p1 / one.mean, 0.1);
  EXPECT_GT(twenty.p1 / twenty.mean, 0.3);
}

TEST(FailExperimentTest, NoLookupFailsWhenAThirdOfTheNodesCrash) {
  FailOptions o;
  o.nodes = 400;
  o.successors = 20;
  o.fail_fraction = 0.3;
  o.lookups = 2000;
  o.seed = 3;
  const FailReport r = RunFailExperiment(o);
  EXPECT_EQ(r.crashed, 120);
  EXPECT_EQ(r.failed, 0);
  EXPECT_GT(r.timeouts_mean, 0.3);  // dead nodes were met and routed around
  EXPECT_LT(r.hops_mean, 8);
}

TEST(ChurnExperimentTest, ModerateChurnOnAPaperShapedRing) {
  ChurnOptions o;
  o.nodes = 200;
  o.successors = 10;
  o.rate = 0.05;
  o.lookups = 800;
  o.seed = 11;
  o.check_invariants = true;
  const ChurnReport r = RunChurnExperiment(o);
  EXPECT_GT(r.joins + r.leaves, 40);
  EXPECT_EQ(r.invariant_violations, 0u) << r.first_violation;
  EXPECT_LT(r.failed, r.lookups / 50) << "more than 2% of lookups failed";
  EXPECT_TRUE(r.converged);
  EXPECT_GT(r.invariants.node_checks, 1000u);
}

// Heavy churn on small rings with short successor lists: where the original protocol
// breaks. Every seed must keep Zave's invariants and end in the ideal ring.
class SmallRingChurnTest : public ::testing::TestWithParam<int> {};

TEST_P(SmallRingChurnTest, KeepsInvariantsAndConverges) {
  const int r = GetParam();
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    ChurnOptions o;
    o.nodes = 8;
    o.successors = r;
    o.rate = 0.2;  // a join and a departure every 5 s against 15-45 s stabilization
    o.lookups = 1000;
    o.seed = seed;
    o.check_invariants = true;
    o.crash_fraction = 0.3;
    o.min_nodes = 5;
    o.max_nodes = 12;
    const ChurnReport rep = RunChurnExperiment(o);
    EXPECT_EQ(rep.invariant_violations, 0u)
        << "R=" << r << " seed " << seed << ": " << rep.first_violation
        << " (replay: chord-sim churn --nodes 8 --successors " << r
        << " --rate 0.2 --lookups 1000 --crash-fraction 0.3 --min-nodes 5 --max-nodes 12"
        << " --check-invariants --seed " << seed << ")";
    EXPECT_TRUE(rep.converged) << "R=" << r << " seed " << seed << ": " << rep.not_converged_why;
    EXPECT_GT(rep.joins + rep.leaves + rep.crashes, 50) << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(ShortLists, SmallRingChurnTest, ::testing::Values(2, 3));

TEST(ChurnExperimentTest, MessageLossKeepsInvariants) {
  ChurnOptions o;
  o.nodes = 100;
  o.successors = 8;
  o.rate = 0.02;
  o.lookups = 800;
  o.loss = 0.01;
  o.check_invariants = true;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    o.seed = seed;
    const ChurnReport r = RunChurnExperiment(o);
    EXPECT_EQ(r.invariant_violations, 0u) << "seed " << seed << ": " << r.first_violation;
    EXPECT_TRUE(r.converged) << "seed " << seed << ": " << r.not_converged_why;
    EXPECT_LT(r.failed, r.lookups / 20) << "seed " << seed;
  }
}

// A partition is outside Zave's model (nodes lose every reachable successor, so the
// invariants may break while it lasts); what must hold is that the ring heals afterwards.
TEST(ChurnExperimentTest, RingHealsAfterAPartition) {
  ChurnOptions o;
  o.nodes = 100;
  o.successors = 8;
  o.rate = 0.02;
  o.lookups = 800;
  o.partition_at_s = 200;
  o.partition_seconds = 20;
  o.partition_fraction = 0.3;
  o.check_invariants = true;
  int failed = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    o.seed = seed;
    const ChurnReport r = RunChurnExperiment(o);
    EXPECT_TRUE(r.converged) << "seed " << seed << ": " << r.not_converged_why;
    failed += r.failed;
  }
  EXPECT_GT(failed, 0);  // lookups across the cut did fail while it lasted
}

TEST(InvariantCheckerTest, FlagsDisorderedAndDeadSuccessorLists) {
  SimNetwork net(SimOptions{});
  NodeConfig config;
  config.successors = 3;
  const auto addrs = BuildIdealRing(&net, 6, config);
  InvariantChecker checker(&net);
  checker.CheckAllNodes();
  checker.CheckRing();
  EXPECT_EQ(checker.counts().total(), 0u);
  EXPECT_TRUE(IsIdealRing(net, 3));

  // Reverse one node's list: out of order.
  auto nodes = net.LiveNodes();
  const ChordNode* x = nodes[0];
  std::vector<NodeRef> reversed(x->successors().rbegin(), x->successors().rend());
  net.InstallRoutingState(x->self().addr, reversed, x->predecessor(), {});
  checker.CheckNode(*x);
  EXPECT_EQ(checker.counts().ordered_lists, 1u);
  EXPECT_FALSE(IsIdealRing(net, 3));

  // Crash everything another node lists: no live successor.
  const ChordNode* y = nodes[3];
  std::vector<std::string> dead;
  for (const NodeRef& s : y->successors()) dead.push_back(s.addr);
  for (const auto& a : dead) net.Crash(a);
  checker.CheckNode(*y);
  EXPECT_EQ(checker.counts().one_live_successor, 1u);
  EXPECT_FALSE(checker.first_violation().empty());
}

TEST(InvariantCheckerTest, FlagsTwoRings) {
  SimNetwork net(SimOptions{});
  NodeConfig config;
  config.successors = 1;
  BuildIdealRing(&net, 6, config);
  auto nodes = net.LiveNodes();
  // Split into {0, 1, 2} and {3, 4, 5}, each closing on itself.
  net.InstallRoutingState(nodes[2]->self().addr, {nodes[0]->self()}, nodes[1]->self(), {});
  net.InstallRoutingState(nodes[5]->self().addr, {nodes[3]->self()}, nodes[4]->self(), {});
  InvariantChecker checker(&net);
  checker.CheckRing();
  EXPECT_EQ(checker.counts().ring_count, 1u);
}

std::string RunSim(const std::string& args) {
  const std::string cmd = std::string(CHORD_SIM_BIN) + " " + args;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  return out;
}

TEST(DeterminismTest, SameSeedSameOutputByteForByte) {
  const std::string args =
      "churn --nodes 30 --successors 3 --rate 0.1 --lookups 300 --seed 5 --check-invariants "
      "--json";
  const std::string a = RunSim(args);
  const std::string b = RunSim(args);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  const std::string other = RunSim(
      "churn --nodes 30 --successors 3 --rate 0.1 --lookups 300 --seed 6 --check-invariants "
      "--json");
  EXPECT_NE(a, other);
  const std::string l1 = RunSim("lookups --nodes 200 --lookups 500 --seed 2 --json");
  EXPECT_EQ(l1, RunSim("lookups --nodes 200 --lookups 500 --seed 2 --json"));
}

}  // namespace
}  // namespace chord::sim
