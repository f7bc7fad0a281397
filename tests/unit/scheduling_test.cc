// The scheduling policy chord-node puts its threads under with --sched
// (node/runtime/scheduling.h): the names, and ApplySchedPolicy on this very process, read
// back per thread from /proc/self/task/TID/stat (proc(5), field 41), independently of
// sched_getscheduler. Every change to this process's policy is undone before the test ends,
// also when it fails.
#include "node/runtime/scheduling.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "protocol/proc_stat.h"

namespace chord {
namespace {

// The policy of thread `tid` from /proc/self/task/TID/stat; nullopt when it cannot be read
// (the thread ended).
std::optional<int> PolicyFromProc(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const std::optional<ProcStatFields> f = ParseProcStat(line);
  if (!f || !f->policy) return std::nullopt;
  return static_cast<int>(*f->policy);
}

std::vector<pid_t> Threads() {
  std::vector<pid_t> tids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    tids.push_back(static_cast<pid_t>(std::stoi(entry.path().filename().string())));
  }
  return tids;
}

pid_t ThisThread() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// Expects every thread of this process that still exists under `policy`.
void ExpectEveryThreadUnder(int policy) {
  for (pid_t tid : Threads()) {
    const std::optional<int> p = PolicyFromProc(tid);
    if (p) {
      EXPECT_EQ(*p, policy) << "thread " << tid;
    }
  }
}

// A second thread, started before the policy changes and waiting until the test is over; on
// destruction it is stopped and joined, and every thread goes back to SCHED_OTHER.
class OtherThread {
 public:
  OtherThread()
      : thread_([this] {
          tid_ = ThisThread();
          while (!done_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }) {
    for (int i = 0; i < 5000 && tid_ == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~OtherThread() {
    done_ = true;
    thread_.join();
    sched_param param{};
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
      const auto tid =
          static_cast<pid_t>(std::strtol(entry.path().filename().c_str(), nullptr, 10));
      ::sched_setscheduler(tid, SCHED_OTHER, &param);
    }
    EXPECT_EQ(PolicyFromProc(ThisThread()), SCHED_OTHER);
  }
  OtherThread(const OtherThread&) = delete;
  OtherThread& operator=(const OtherThread&) = delete;
  pid_t tid() const { return tid_; }

 private:
  std::atomic<pid_t> tid_{0};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

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
  if (PolicyFromProc(ThisThread()) != SCHED_OTHER) GTEST_SKIP() << "run under SCHED_OTHER";
  OtherThread other;
  ASSERT_NE(other.tid(), 0);

  ASSERT_TRUE(ApplySchedPolicy(SchedPolicy::kBatch).ok());
  ExpectEveryThreadUnder(SCHED_BATCH);
  EXPECT_EQ(PolicyFromProc(other.tid()), SCHED_BATCH);
  EXPECT_EQ(SchedPolicyOf(0), SchedPolicy::kBatch);
  EXPECT_EQ(SchedPolicyOf(other.tid()), SchedPolicy::kBatch);

  ASSERT_TRUE(ApplySchedPolicy(SchedPolicy::kNormal).ok());
  ExpectEveryThreadUnder(SCHED_OTHER);
  EXPECT_EQ(PolicyFromProc(other.tid()), SCHED_OTHER);
  EXPECT_EQ(SchedPolicyOf(0), SchedPolicy::kNormal);
  EXPECT_EQ(SchedPolicyOf(other.tid()), SchedPolicy::kNormal);
}

TEST(SchedPolicyTest, APolicyOtherThanTheTwoReadsAsNeither) {
  // On a thread of its own, which ends under it: leaving SCHED_IDLE needs privileges.
  std::optional<SchedPolicy> read;
  std::optional<int> from_proc;
  bool set = false;
  std::thread idle([&] {
    sched_param param{};
    set = ::sched_setscheduler(0, SCHED_IDLE, &param) == 0;
    read = SchedPolicyOf(0);
    from_proc = PolicyFromProc(ThisThread());
  });
  idle.join();
  ASSERT_TRUE(set);
  EXPECT_FALSE(read.has_value());
  EXPECT_EQ(from_proc, SCHED_IDLE);
}

TEST(SchedPolicyTest, ResetOnForkIsNotAPolicyOfItsOwn) {
  std::optional<SchedPolicy> read;
  bool set = false;
  std::thread reset([&] {
    sched_param param{};
    set = ::sched_setscheduler(0, SCHED_BATCH | SCHED_RESET_ON_FORK, &param) == 0;
    read = SchedPolicyOf(0);
  });
  reset.join();
  ASSERT_TRUE(set);
  EXPECT_EQ(read, SchedPolicy::kBatch);
}

}  // namespace
}  // namespace chord
