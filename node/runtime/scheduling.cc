#include "node/runtime/scheduling.h"

#include <dirent.h>
#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace chord {
namespace {

// Scans of /proc/self/task before giving up on threads that keep appearing.
constexpr int kMaxScans = 5;

int KernelPolicy(SchedPolicy policy) {
  return policy == SchedPolicy::kBatch ? SCHED_BATCH : SCHED_OTHER;
}

// One scan: every thread not yet under `policy` is put under it. Sets *changed when a thread
// had to be switched.
Status ScanOnce(SchedPolicy policy, bool* changed) {
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc/self/task"), ::closedir);
  if (dir == nullptr) {
    const int error = errno;
    return Status::IoError("cannot list this process's threads in /proc/self/task (" +
                           std::string(std::strerror(error)) + ")");
  }
  const sched_param param{};  // priority 0, the only one SCHED_OTHER and SCHED_BATCH take
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(dir.get());
    if (entry == nullptr) {
      const int error = errno;
      if (error == 0) return Status::Ok();
      return Status::IoError("cannot read this process's threads in /proc/self/task (" +
                             std::string(std::strerror(error)) + ")");
    }
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;  // "." and ".."
    const auto tid = static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10));
    if (SchedPolicyOf(tid) == policy) continue;
    if (::sched_setscheduler(tid, KernelPolicy(policy), &param) != 0) {
      const int error = errno;
      if (error == ESRCH) continue;  // the thread ended meanwhile
      return Status::IoError("cannot put thread " + std::string(entry->d_name) + " under the " +
                             SchedPolicyName(policy) + " scheduling policy (" +
                             std::strerror(error) + ")");
    }
    *changed = true;
  }
}

}  // namespace

std::optional<SchedPolicy> ParseSchedPolicy(std::string_view name) {
  if (name == "normal") return SchedPolicy::kNormal;
  if (name == "batch") return SchedPolicy::kBatch;
  return std::nullopt;
}

const char* SchedPolicyName(SchedPolicy policy) {
  return policy == SchedPolicy::kBatch ? "batch" : "normal";
}

Status ApplySchedPolicy(SchedPolicy policy) {
  for (int scan = 0; scan < kMaxScans; ++scan) {
    bool changed = false;
    if (Status s = ScanOnce(policy, &changed); !s.ok()) return s;
    if (!changed) return Status::Ok();
  }
  return Status::Aborted(std::string("threads kept starting or changing policy while this "
                                     "process's were put under the ") +
                         SchedPolicyName(policy) + " scheduling policy; some may have missed it");
}

std::optional<SchedPolicy> SchedPolicyOf(pid_t tid) {
  const int policy = ::sched_getscheduler(tid);
  if (policy < 0) return std::nullopt;
  switch (policy & ~SCHED_RESET_ON_FORK) {
    case SCHED_BATCH:
      return SchedPolicy::kBatch;
    case SCHED_OTHER:
      return SchedPolicy::kNormal;
    default:
      return std::nullopt;
  }
}

}  // namespace chord
