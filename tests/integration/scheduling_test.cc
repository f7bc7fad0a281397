// Multi-process tests of chord-node's scheduling policy (--sched): real chord-node processes
// on 127.0.0.1 whose threads' policies are read from /proc/PID/task/TID/stat (proc(5), field
// 41) and names from .../comm, so that the threads the store and the runtime start after the
// choice count too. Without --sched a node keeps the policy it was started with (here the
// test's SCHED_OTHER, or SCHED_BATCH set around the fork as `chrt --batch 0` would);
// `--sched batch` puts every thread, RocksDB's included, under SCHED_BATCH; `--sched normal`
// overrides a policy set from outside; a policy name it does not know is a usage error.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "protocol/proc_stat.h"
#include "tests/integration/cluster_fixture.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

constexpr int kSchedOther = 0;  // the kernel's numbers (sched.h), spelled out for the reader
constexpr int kSchedBatch = 3;

struct ThreadInfo {
  int policy = -1;
  std::string name;
};

// Each thread of process `pid`, its policy and name; threads that end while being read are
// skipped.
std::map<pid_t, ThreadInfo> Threads(pid_t pid) {
  std::map<pid_t, ThreadInfo> threads;
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(task_dir, ec)) {
    std::ifstream in(entry.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const std::optional<ProcStatFields> f = ParseProcStat(line);
    if (!f || !f->policy) continue;
    ThreadInfo info;
    info.policy = static_cast<int>(*f->policy);
    std::ifstream comm(entry.path() / "comm");
    std::getline(comm, info.name);
    threads[static_cast<pid_t>(std::stoi(entry.path().filename().string()))] = info;
  }
  return threads;
}

// Expects every thread of `node` under `policy`; returns their names.
std::vector<std::string> ExpectEveryThreadUnder(NodeProcess* node, int policy) {
  std::vector<std::string> names;
  const std::map<pid_t, ThreadInfo> threads = Threads(node->pid());
  EXPECT_FALSE(threads.empty()) << node->addr();
  for (const auto& [tid, info] : threads) {
    EXPECT_EQ(info.policy, policy) << node->addr() << " thread " << tid << " " << info.name;
    names.push_back(info.name);
  }
  return names;
}

void ExpectServes(NodeProcess* node) {
  ChordClient client(node->addr(), 5000);
  EXPECT_TRUE(IsOk(client.Put("scheduled", "v")));
  auto got = client.Get("scheduled");
  ASSERT_TRUE(IsOk(got)) << Describe(got);
  EXPECT_EQ(got->value(), "v");
}

using SchedulingTest = ClusterTest;

// The tests that expect a node to keep the policy it was started with start it under the
// kernel's default, SCHED_OTHER, which they must then run under themselves.
bool RunsUnderSchedOther() {
  return (::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_OTHER;
}

TEST_F(SchedulingTest, WithoutSchedEveryThreadKeepsThePolicyItStartedWith) {
  if (!RunsUnderSchedOther()) GTEST_SKIP() << "the test must run under SCHED_OTHER";
  NodeProcess* node = cluster().StartNode(OnDisk(FastNodes()));
  ASSERT_NE(node, nullptr);
  ExpectServes(node);
  ExpectEveryThreadUnder(node, kSchedOther);
  EXPECT_EQ(node->LogTail(50).find("scheduling policy"), std::string::npos) << node->LogTail(20);
}

TEST_F(SchedulingTest, BatchPutsEveryThreadRocksDbsIncludedUnderSchedBatch) {
  NodeOptions o = OnDisk(FastNodes());
  o.extra_args = {"--sched", "batch"};
  NodeProcess* node = cluster().StartNode(o);
  ASSERT_NE(node, nullptr);
  ExpectServes(node);
  const std::vector<std::string> names = ExpectEveryThreadUnder(node, kSchedBatch);
  // RocksDB starts its background threads ("rocksdb:low", "rocksdb:high") after the choice.
  EXPECT_TRUE(std::any_of(names.begin(), names.end(),
                          [](const std::string& n) { return n.rfind("rocksdb:", 0) == 0; }))
      << "no RocksDB thread among " << names.size() << " threads";
  EXPECT_NE(node->LogTail(50).find("scheduling policy: batch"), std::string::npos);
}

// Starts chord-node with `args` from this thread put under SCHED_BATCH for the fork (the
// child inherits it, as under `chrt --batch 0`; the thread goes back to SCHED_OTHER right
// after), and waits (bounded) until it serves.
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
  const bool up = PollUntil(
      [&] {
        if (!node->IsRunning()) return true;
        ChordClient client(node->addr(), 1000);
        return IsOk(client.Put("up", "1"));
      },
      milliseconds(20000), milliseconds(50));
  EXPECT_TRUE(up && node->IsRunning()) << node->LogTail(20);
  return node;
}

TEST_F(SchedulingTest, APolicySetFromOutsideIsKeptUnlessSchedIsGiven) {
  if (!RunsUnderSchedOther()) GTEST_SKIP() << "the test must run under SCHED_OTHER";
  std::unique_ptr<NodeProcess> kept = StartUnderBatch(cluster(), {});
  ASSERT_NE(kept, nullptr);
  ASSERT_TRUE(kept->IsRunning()) << kept->LogTail(20);
  ExpectEveryThreadUnder(kept.get(), kSchedBatch);
  kept->Kill();

  std::unique_ptr<NodeProcess> chosen = StartUnderBatch(cluster(), {"--sched", "normal"});
  ASSERT_NE(chosen, nullptr);
  ASSERT_TRUE(chosen->IsRunning()) << chosen->LogTail(20);
  ExpectEveryThreadUnder(chosen.get(), kSchedOther);
  chosen->Kill();
}

TEST_F(SchedulingTest, ASchedThatCannotBeAppliedStopsTheNode) {
  // Under SCHED_IDLE without CAP_SYS_NICE a process may not leave SCHED_IDLE: started so
  // (setpriv drops the capability from the bounding set, chrt sets the policy), the node
  // cannot apply --sched batch and must stop with one sentence rather than run on under
  // SCHED_IDLE.
  if (::geteuid() != 0) GTEST_SKIP() << "dropping a capability with setpriv needs root";
  const std::string setpriv = "/usr/bin/setpriv";  // util-linux, as chrt
  const std::string chrt = "/usr/bin/chrt";
  if (::access(setpriv.c_str(), X_OK) != 0 || ::access(chrt.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "needs " << setpriv << " and " << chrt << " (util-linux)";
  }
  if (RunCommand({setpriv, "--bounding-set=-sys_nice", "/bin/true"}, cluster().dir(),
                 milliseconds(10000))
          .exit_code != 0) {
    GTEST_SKIP() << "setpriv cannot drop CAP_SYS_NICE here";
  }
  const CommandResult r =
      RunCommand({setpriv, "--bounding-set=-sys_nice", chrt, "--idle", "0", CHORD_NODE_BIN,
                  "--listen", LocalAddr(PickFreePort()), "--memory", "--sched", "batch"},
                 cluster().dir(), milliseconds(10000));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
  EXPECT_NE(r.err.find("cannot put thread"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("batch scheduling policy"), std::string::npos) << r.err;
}

TEST_F(SchedulingTest, AnUnknownPolicyIsAUsageError) {
  const CommandResult r = RunCommand(
      {CHORD_NODE_BIN, "--listen", LocalAddr(PickFreePort()), "--memory", "--sched", "fifo"},
      cluster().dir(), milliseconds(10000));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
  EXPECT_NE(r.err.find("--sched must be batch or normal"), std::string::npos) << r.err;
  // An empty name is not "no --sched".
  const CommandResult empty =
      RunCommand({CHORD_NODE_BIN, "--listen", LocalAddr(PickFreePort()), "--memory", "--sched", ""},
                 cluster().dir(), milliseconds(10000));
  EXPECT_EQ(empty.exit_code, 2) << empty.out << empty.err;
}

}  // namespace
}  // namespace chord::testing
