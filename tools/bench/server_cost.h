// ServerCost: what the servers under a chord-bench run spent: their CPU time and resident
// memory (and, read by PID, the CPU's split into user and system time, system calls and
// sleeps), read before and after the preload and the measured window, and the arithmetic that
// turns two readings into figures per operation and bytes per key. The readings come
// from every process of the ring (the status of each, HOST:PORT counted once however many
// vnodes it runs), or from /proc/PID/stat of given PIDs (--server-pid), which measures any
// server, redis-server too, the same way. Blocking; one thread.
#ifndef CHORD_TOOLS_BENCH_SERVER_COST_H_
#define CHORD_TOOLS_BENCH_SERVER_COST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/status.h"

namespace chord::bench {

// The sum over the measured processes at one moment. The split of the CPU time and the
// counters of system calls and sleeps come from /proc (--server-pid) only: a node's status
// gives its CPU time as one figure. Each is unknown when any process's could not be read.
struct ServerReading {
  double cpu_seconds = 0;
  uint64_t resident_bytes = 0;
  size_t processes = 0;
  std::optional<double> user_seconds;
  std::optional<double> system_seconds;
  std::optional<uint64_t> io_syscalls;         // read- and write-family system calls
  std::optional<uint64_t> voluntary_switches;  // sleeps: each one a wake-up later
};

// Where the servers' CPU went per operation, from two readings of /proc: user and system
// microseconds, read- and write-family system calls, and sleeps (voluntary context
// switches). Each is nullopt when a reading lacks it, without ops, or when it went backwards.
struct ServerBreakdown {
  std::optional<double> user_us_per_op;
  std::optional<double> system_us_per_op;
  std::optional<double> syscalls_per_op;
  std::optional<double> sleeps_per_op;
};
ServerBreakdown BreakdownPerOp(const ServerReading& before, const ServerReading& after,
                               uint64_t ops);

// Server CPU microseconds per operation: the CPU-seconds delta over `ops`; nullopt without ops
// or when the CPU time went backwards (a process restarted).
std::optional<double> CpuMicrosPerOp(const ServerReading& before, const ServerReading& after,
                                     uint64_t ops);
// Resident-memory growth per key over a preload of `keys` keys (may be negative when the
// allocator returned memory); nullopt without keys.
std::optional<double> BytesPerKey(const ServerReading& before, const ServerReading& after,
                                  uint64_t keys);

// "HOST:PORT" of a ring address "HOST:PORT" or "HOST:PORT#i".
std::string ProcessAddress(const std::string& ring_addr);

class ServerCostProbe {
 public:
  // From the status of every process of the ring that `nodes` belong to.
  static ServerCostProbe ForRing(const std::vector<std::string>& nodes, uint64_t timeout_ms);
  // From /proc/PID/stat of `pids`.
  static ServerCostProbe ForPids(std::vector<int> pids);

  // Finds the processes: walks the ring from the first node that answers (ForRing; the given
  // nodes themselves when no walk succeeds). Unavailable with one sentence when none answers.
  [[nodiscard]] Status Discover();
  // The sum over the processes now; Unavailable when one of them cannot be read or sends no
  // process figures (a node of an older version).
  Result<ServerReading> Read() const;

  const std::vector<std::string>& processes() const { return processes_; }
  // "status" or "pid": where the readings come from.
  const char* source() const { return pids_.empty() ? "status" : "pid"; }

 private:
  std::vector<std::string> nodes_;
  std::vector<int> pids_;
  uint64_t timeout_ms_ = 0;
  std::vector<std::string> processes_;  // HOST:PORT each, once
};

}  // namespace chord::bench

#endif  // CHORD_TOOLS_BENCH_SERVER_COST_H_
