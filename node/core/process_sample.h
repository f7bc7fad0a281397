// ProcessSample and ProcessStatsSource: the figures of the whole process a node runs in (CPU
// time, resident memory, open files), as Prometheus's standard process metrics name them. The
// core reads no clock and does no I/O, so the driver injects a source (node/runtime reads
// /proc; the simulator and tests pass a fake or nothing); NodeStatus only copies a sample into
// the Status reply. Sample() is called on the node's thread.
#ifndef CHORD_NODE_CORE_PROCESS_SAMPLE_H_
#define CHORD_NODE_CORE_PROCESS_SAMPLE_H_

#include <cstdint>

namespace chord {

struct ProcessSample {
  bool valid = false;             // false: the figures could not be read
  double cpu_seconds = 0;         // user + system CPU time since the process started
  uint64_t resident_bytes = 0;    // resident set size
  uint64_t virtual_bytes = 0;     // virtual memory size
  double start_time_seconds = 0;  // when the process started, seconds since the Unix epoch
  uint64_t open_fds = 0;          // open file descriptors
  uint64_t max_fds = 0;           // their limit (RLIMIT_NOFILE, soft)
};

class ProcessStatsSource {
 public:
  virtual ~ProcessStatsSource() = default;
  virtual ProcessSample Sample() const = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_PROCESS_SAMPLE_H_
