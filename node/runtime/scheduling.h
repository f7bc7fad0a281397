// The kernel scheduling policy of chord-node's threads (sched(7)), chosen with --sched. A
// node started without it keeps the policy it was started with (SCHED_OTHER unless chrt or
// systemd's CPUSchedulingPolicy= chose another). `--sched batch` (SCHED_BATCH) suits several
// ring members on one host: a node woken by a message does not preempt the task running on
// that CPU, which saved 7-10% of a replicated put's CPU on a 3-node ring sharing
// two cores (README, "Scheduling"), at the price of waiting for a CPU instead of taking one.
// Called by chord-node's main before the store and the runtime start threads; any thread.
#ifndef CHORD_NODE_RUNTIME_SCHEDULING_H_
#define CHORD_NODE_RUNTIME_SCHEDULING_H_

#include <sys/types.h>

#include <optional>
#include <string_view>

#include "protocol/base/status.h"

namespace chord {

enum class SchedPolicy { kNormal, kBatch };

// "normal" or "batch"; nullopt for anything else.
std::optional<SchedPolicy> ParseSchedPolicy(std::string_view name);
// "normal" or "batch".
const char* SchedPolicyName(SchedPolicy policy);

// Puts every thread of this process (each entry of /proc/self/task) under `policy`. Threads
// started meanwhile by threads not yet switched are caught by scanning again until a scan
// finds every thread under `policy` (a bounded number of scans); threads created later
// inherit the policy of their creator. (A thread still being created by a thread that was
// switched meanwhile, and listed only after the last scan, keeps the old policy: in
// chord-node only jemalloc's first background thread starts threads this early.) An error
// names the thread and the reason; threads switched before it stay switched.
[[nodiscard]] Status ApplySchedPolicy(SchedPolicy policy);

// The policy of thread `tid` (0: the calling thread), SCHED_RESET_ON_FORK aside; nullopt when
// it cannot be read or is neither of the two (a real-time or idle policy).
std::optional<SchedPolicy> SchedPolicyOf(pid_t tid);

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_SCHEDULING_H_
