// Multi-process tests of chord-node's scheduling policy (--sched): real chord-node processes
// on 127.0.0.1 whose threads' policies are read from /proc/PID/task/TID/stat (proc(5), field
// 41), so that the threads the store and the runtime start after the choice count too. By
// default every thread runs under SCHED_BATCH; `--sched normal` keeps SCHED_OTHER; a node
// started under another policy (chrt, systemd) keeps it unless --sched is given; a policy
// name it does not know is a usage error.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cluster_fixture.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

constexpr int kSchedOther = 0;  // the kernel's numbers (sched.h), spelled out for the reader
constexpr int kSchedBatch = 3;

// Each thread of process `pid` and its policy; threads that end while being read are skipped.
std::map<pid_t, int> ThreadPolicies(pid_t pid) {
  std::map<pid_t, int> policies;
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(task_dir, ec)) {
    std::ifstream in(entry.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string field;
    for (int index = 3; rest >> field; ++index) {
      if (index == 41) {
        policies[static_cast<pid_t>(std::stoi(entry.path().filename().string()))] =
            std::stoi(field);
        break;
      }
    }
  }
  return policies;
}

// Expects every thread of `node` under `policy`, and at least `min_threads` of them.
void ExpectEveryThreadUnder(NodeProcess* node, int policy, size_t min_threads) {
  const std::map<pid_t, int> policies = ThreadPolicies(node->pid());
  EXPECT_GE(policies.size(), min_threads) << node->addr();
  for (const auto& [tid, p] : policies) {
    EXPECT_EQ(p, policy) << node->addr() << " thread " << tid;
  }
}

void ExpectServes(NodeProcess* node) {
  ChordClient client(node->addr(), 5000);
  EXPECT_TRUE(IsOk(client.Put("scheduled", "v")));
  auto got = client.Get("scheduled");
  ASSERT_TRUE(IsOk(got)) << Describe(got);
  EXPECT_EQ(got->value(), "v");
}

using SchedulingTest = ClusterTest;

TEST_F(SchedulingTest, EveryThreadRunsUnderBatchByDefault) {
  // RocksDB starts its background threads after the policy is chosen: they inherit it.
  NodeProcess* node = cluster().StartNode(OnDisk(FastNodes()));
  ASSERT_NE(node, nullptr);
  ExpectServes(node);
  ExpectEveryThreadUnder(node, kSchedBatch, 2);
}

TEST_F(SchedulingTest, NormalKeepsTheKernelsDefault) {
  NodeOptions o = OnDisk(FastNodes());
  o.extra_args = {"--sched", "normal"};
  NodeProcess* node = cluster().StartNode(o);
  ASSERT_NE(node, nullptr);
  ExpectServes(node);
  ExpectEveryThreadUnder(node, kSchedOther, 2);
}

// Starts chord-node with `args` from this thread put under SCHED_BATCH for the fork (the
// child inherits it, as under `chrt --batch 0`), and waits (bounded) until its log says which
// policy it settled on.
std::unique_ptr<NodeProcess> StartUnderBatch(Cluster& cluster, std::vector<std::string> args) {
  const int port = PickFreePort();
  auto node = std::make_unique<NodeProcess>(
      port, cluster.dir() + "/outside-" + std::to_string(port) + ".log");
  args.insert(args.begin(), {"--listen", LocalAddr(port), "--memory"});
  sched_param param{};
  if (::sched_setscheduler(0, SCHED_BATCH, &param) != 0) {
    ADD_FAILURE() << "cannot put the test thread under SCHED_BATCH";
    return nullptr;
  }
  const bool started = node->Start(args);
  EXPECT_EQ(::sched_setscheduler(0, SCHED_OTHER, &param), 0);
  if (!started) return nullptr;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline && node->IsRunning() &&
         node->LogTail(50).find("scheduling policy") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(node->LogTail(50).find("scheduling policy"), std::string::npos) << node->LogTail(20);
  return node;
}

TEST_F(SchedulingTest, APolicySetFromOutsideIsKeptUnlessSchedIsGiven) {
  // Started under SCHED_BATCH without --sched: left alone (the log says so; applying the
  // default would also give SCHED_BATCH, so the log is what tells the two apart).
  std::unique_ptr<NodeProcess> kept = StartUnderBatch(cluster(), {});
  ASSERT_NE(kept, nullptr);
  ASSERT_TRUE(kept->IsRunning()) << kept->LogTail(20);
  ExpectEveryThreadUnder(kept.get(), kSchedBatch, 1);
  EXPECT_NE(kept->LogTail(50).find("left as started"), std::string::npos) << kept->LogTail(20);
  kept->Kill();

  // With --sched, the flag wins.
  std::unique_ptr<NodeProcess> chosen = StartUnderBatch(cluster(), {"--sched", "normal"});
  ASSERT_NE(chosen, nullptr);
  ASSERT_TRUE(chosen->IsRunning()) << chosen->LogTail(20);
  ExpectEveryThreadUnder(chosen.get(), kSchedOther, 1);
  EXPECT_EQ(chosen->LogTail(50).find("left as started"), std::string::npos);
  chosen->Kill();
}

TEST_F(SchedulingTest, AnUnknownPolicyIsAUsageError) {
  const CommandResult r = RunCommand(
      {CHORD_NODE_BIN, "--listen", LocalAddr(PickFreePort()), "--memory", "--sched", "fifo"},
      cluster().dir(), milliseconds(10000));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
  EXPECT_NE(r.err.find("--sched must be batch or normal"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace chord::testing
