// ProcStatsSource: the runtime's ProcessStatsSource: samples this process's CPU time, memory
// and open files from /proc/self (and getrlimit) whenever a Status reply or a /metrics scrape
// asks. One per process, shared by its vnodes; any thread (it holds no state).
#ifndef CHORD_NODE_RUNTIME_PROCESS_STATS_H_
#define CHORD_NODE_RUNTIME_PROCESS_STATS_H_

#include <cstdint>
#include <string>

#include "node/core/process_sample.h"

namespace chord {

class ProcStatsSource : public ProcessStatsSource {
 public:
  ProcessSample Sample() const override;
};

// Entries of the directory `fd_dir` (e.g. "/proc/self/fd") other than "." and ".."; 0 when it
// cannot be read.
uint64_t CountOpenFds(const std::string& fd_dir);

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_PROCESS_STATS_H_
