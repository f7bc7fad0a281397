// The kernel scheduling policy of chord-node's threads (sched(7)). By default a node runs
// under SCHED_BATCH: a node woken by a message then waits for the running task's slice
// instead of preempting it, so the members of a ring on one host (and their clients) stop
// switching the CPU over at every message they send each other, which measured about a tenth
// of a replicated put's CPU (README, "Scheduling"). SCHED_OTHER (`--sched normal`) is the
// kernel's default. Called by chord-node's main before the runtime starts; any thread.
#ifndef CHORD_NODE_RUNTIME_SCHEDULING_H_
#define CHORD_NODE_RUNTIME_SCHEDULING_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace chord {

enum class SchedPolicy { kNormal, kBatch };

// "normal" or "batch"; nullopt for anything else.
std::optional<SchedPolicy> ParseSchedPolicy(std::string_view name);
// "normal" or "batch".
const char* SchedPolicyName(SchedPolicy policy);

// Puts every thread of this process (each entry of /proc/self/task) under `policy`; threads
// created later inherit it from their creator. An error names the thread and the reason.
[[nodiscard]] Status ApplySchedPolicy(SchedPolicy policy);

// The policy of thread `tid` (0: the calling thread); nullopt when it cannot be read or is
// neither of the two (a real-time or idle policy set from outside).
std::optional<SchedPolicy> SchedPolicyOf(pid_t tid);

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_SCHEDULING_H_
