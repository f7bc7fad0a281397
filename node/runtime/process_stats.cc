#include "node/runtime/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>

#include <cstring>

#include "protocol/proc_stat.h"

namespace chord {

uint64_t CountOpenFds(const std::string& fd_dir) {
  DIR* dir = opendir(fd_dir.c_str());
  if (dir == nullptr) return 0;
  uint64_t n = 0;
  while (const dirent* e = readdir(dir)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  }
  closedir(dir);
  return n > 0 ? n - 1 : 0;  // the directory stream's own descriptor is not the process's
}

ProcessSample ProcStatsSource::Sample() const {
  ProcessSample s;
  Result<ProcReading> r = ReadProcStat(0);
  if (!r.ok()) return s;
  s.valid = true;
  s.cpu_seconds = r->cpu_seconds;
  s.resident_bytes = r->resident_bytes;
  s.virtual_bytes = r->virtual_bytes;
  s.start_time_seconds = r->start_time_seconds;
  s.open_fds = CountOpenFds("/proc/self/fd");
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    s.max_fds = static_cast<uint64_t>(limit.rlim_cur);
  }
  return s;
}

}  // namespace chord
