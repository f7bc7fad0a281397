// The figures Linux's /proc gives about a process, for the node's process metrics
// (node/runtime/process_stats.h) and for chord-bench, which reads the servers it measures
// (chord-node or redis-server) by PID. The parsers are pure functions; ReadProcStat reads the
// files. Any thread.
#ifndef CHORD_PROTOCOL_PROC_STAT_H_
#define CHORD_PROTOCOL_PROC_STAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace chord {

// The fields of /proc/PID/stat that the process metrics need.
struct ProcStatFields {
  uint64_t utime_ticks = 0;     // user CPU time, in clock ticks
  uint64_t stime_ticks = 0;     // system CPU time, in clock ticks
  uint64_t start_ticks = 0;     // start time, clock ticks after boot
  uint64_t virtual_bytes = 0;   // vsize
  uint64_t resident_pages = 0;  // rss
  // Field 41, the scheduling policy (sched.h's SCHED_* number); nullopt on a line that stops
  // before it.
  std::optional<uint32_t> policy;
};

// Parses the one line of /proc/PID/stat ("pid (comm) state ppid ..."); the command name may
// hold spaces and parentheses, so the fields are counted from the last ')'. nullopt when the
// text is not such a line.
std::optional<ProcStatFields> ParseProcStat(std::string_view text);

// The resident pages of /proc/PID/statm ("size resident shared ..."); nullopt when malformed.
std::optional<uint64_t> ParseProcStatmResident(std::string_view text);

// The boot time ("btime N" line) of /proc/stat, in seconds since the Unix epoch.
std::optional<uint64_t> ParseBootTime(std::string_view text);

// The number after "NAME:" on its own line of a "NAME: value" file: /proc/PID/io
// ("syscr: 12") or /proc/PID/status ("voluntary_ctxt_switches:\t7"). nullopt when there is
// no such line or its value is not a number.
std::optional<uint64_t> ParseProcCounter(std::string_view text, std::string_view name);

// One reading of a process, converted to seconds and bytes.
struct ProcReading {
  double cpu_seconds = 0;     // utime + stime
  double user_seconds = 0;    // utime
  double system_seconds = 0;  // stime
  uint64_t resident_bytes = 0;
  uint64_t virtual_bytes = 0;
  double start_time_seconds = 0;  // since the Unix epoch; 0 when the boot time is unknown
};

// Reads /proc/<pid>/stat and /proc/<pid>/statm (pid 0: /proc/self). NotFound when the process
// does not exist (or /proc is not mounted).
Result<ProcReading> ReadProcStat(int pid);

// What a process did so far, for chord-bench's breakdown of a server's cost (not read by the
// node's own metrics: it walks every thread). Each is unknown when it cannot be read.
struct ProcCounters {
  // Read- and write-family system calls (syscr + syscw of /proc/PID/io): unknown for another
  // user's process or on a kernel without task I/O accounting.
  std::optional<uint64_t> io_syscalls;
  // Times the process's threads gave the CPU up to wait (voluntary_ctxt_switches of each
  // /proc/PID/task/TID/status, summed): each is a sleep and a wake-up. A thread that ends
  // between two readings takes its count with it, so a server that starts and ends threads
  // under load reads low; chord-node's and redis-server's threads live as long as they do.
  std::optional<uint64_t> voluntary_switches;
};
ProcCounters ReadProcCounters(int pid);

}  // namespace chord

#endif  // CHORD_PROTOCOL_PROC_STAT_H_
