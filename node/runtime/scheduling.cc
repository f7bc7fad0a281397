#include "node/runtime/scheduling.h"

#include <dirent.h>
#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace chord {
namespace {

int KernelPolicy(SchedPolicy policy) {
  return policy == SchedPolicy::kBatch ? SCHED_BATCH : SCHED_OTHER;
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
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc/self/task"), ::closedir);
  if (dir == nullptr) {
    return Status::IoError(std::string("cannot list this process's threads in /proc/self/task (") +
                           std::strerror(errno) + ")");
  }
  sched_param param{};
  param.sched_priority = 0;  // the only priority SCHED_OTHER and SCHED_BATCH take
  while (const dirent* entry = ::readdir(dir.get())) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;  // "." and ".."
    const auto tid = static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10));
    if (::sched_setscheduler(tid, KernelPolicy(policy), &param) != 0 && errno != ESRCH) {
      return Status::IoError(std::string("cannot put thread ") + entry->d_name + " under the " +
                             SchedPolicyName(policy) + " scheduling policy (" +
                             std::strerror(errno) + ")");
    }
  }
  return Status::Ok();
}

std::optional<SchedPolicy> SchedPolicyOf(pid_t tid) {
  const int policy = ::sched_getscheduler(tid);
  if (policy == SCHED_BATCH) return SchedPolicy::kBatch;
  if (policy == SCHED_OTHER) return SchedPolicy::kNormal;
  return std::nullopt;
}

}  // namespace chord
