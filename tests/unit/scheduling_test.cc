// The scheduling policy chord-node puts its threads under (node/runtime/scheduling.h): the
// --sched names, and ApplySchedPolicy on this very process, read back per thread from
// /proc/self/task/TID/stat (proc(5), field 41), independently of sched_getscheduler.
#include "node/runtime/scheduling.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace chord {
namespace {

// Field 41 (policy) of /proc/self/task/TID/stat; nullopt when it cannot be read.
std::optional<int> PolicyFromProc(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const size_t close = line.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int index = 3; rest >> field; ++index) {
    if (index == 41) return std::stoi(field);
  }
  return std::nullopt;
}

std::vector<pid_t> Threads() {
  std::vector<pid_t> tids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    tids.push_back(static_cast<pid_t>(std::stoi(entry.path().filename().string())));
  }
  return tids;
}

TEST(SchedPolicyTest, ParsesItsTwoNamesOnly) {
  EXPECT_EQ(ParseSchedPolicy("batch"), SchedPolicy::kBatch);
  EXPECT_EQ(ParseSchedPolicy("normal"), SchedPolicy::kNormal);
  for (const char* bad : {"", "fifo", "BATCH", "other", "batch "}) {
    EXPECT_FALSE(ParseSchedPolicy(bad).has_value()) << "'" << bad << "'";
  }
  for (SchedPolicy p : {SchedPolicy::kBatch, SchedPolicy::kNormal}) {
    EXPECT_EQ(ParseSchedPolicy(SchedPolicyName(p)), p);
  }
}

TEST(SchedPolicyTest, AppliesToEveryThreadOfTheProcessAndBack) {
  // A second thread that exists before the call, waiting until the checks are done.
  std::atomic<pid_t> other_tid{0};
  std::atomic<bool> done{false};
  std::thread other([&] {
    other_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  for (int i = 0; i < 5000 && other_tid == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_NE(other_tid.load(), 0);

  ASSERT_TRUE(ApplySchedPolicy(SchedPolicy::kBatch).ok());
  for (pid_t tid : Threads()) EXPECT_EQ(PolicyFromProc(tid), SCHED_BATCH) << "thread " << tid;
  EXPECT_EQ(PolicyFromProc(other_tid), SCHED_BATCH);
  EXPECT_EQ(SchedPolicyOf(0), SchedPolicy::kBatch);
  EXPECT_EQ(SchedPolicyOf(other_tid), SchedPolicy::kBatch);

  ASSERT_TRUE(ApplySchedPolicy(SchedPolicy::kNormal).ok());
  for (pid_t tid : Threads()) EXPECT_EQ(PolicyFromProc(tid), SCHED_OTHER) << "thread " << tid;
  EXPECT_EQ(SchedPolicyOf(0), SchedPolicy::kNormal);
  EXPECT_EQ(SchedPolicyOf(other_tid), SchedPolicy::kNormal);

  done = true;
  other.join();
}

TEST(SchedPolicyTest, APolicyOtherThanTheTwoReadsAsNeither) {
  sched_param param{};
  ASSERT_EQ(::sched_setscheduler(0, SCHED_IDLE, &param), 0);
  EXPECT_FALSE(SchedPolicyOf(0).has_value());
  EXPECT_EQ(PolicyFromProc(static_cast<pid_t>(::syscall(SYS_gettid))), SCHED_IDLE);
  ASSERT_EQ(::sched_setscheduler(0, SCHED_OTHER, &param), 0);  // back, for the other tests
  EXPECT_EQ(SchedPolicyOf(0), SchedPolicy::kNormal);
}

}  // namespace
}  // namespace chord
