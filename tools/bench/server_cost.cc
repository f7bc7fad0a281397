#include "tools/bench/server_cost.h"

#include <algorithm>
#include <set>
#include <utility>

#include "protocol/proc_stat.h"
#include "tools/client/chord_client.h"
#include "tools/client/ring_walk.h"

namespace chord::bench {

namespace {

// (after - before) * scale / ops, when both are known, ops > 0 and the count did not go back.
template <typename T>
std::optional<double> DeltaPerOp(const std::optional<T>& before, const std::optional<T>& after,
                                 uint64_t ops, double scale) {
  if (ops == 0 || !before || !after || *after < *before) return std::nullopt;
  return static_cast<double>(*after - *before) * scale / static_cast<double>(ops);
}

// Adds `part` to *sum; once a part is unknown, the sum is too.
template <typename T>
void AddKnown(std::optional<T>* sum, const std::optional<T>& part, bool first) {
  if (first) {
    *sum = part;
  } else if (*sum && part) {
    **sum += *part;
  } else {
    sum->reset();
  }
}

}  // namespace

std::optional<double> CpuMicrosPerOp(const ServerReading& before, const ServerReading& after,
                                     uint64_t ops) {
  return DeltaPerOp(std::optional(before.cpu_seconds), std::optional(after.cpu_seconds), ops, 1e6);
}

ServerBreakdown BreakdownPerOp(const ServerReading& before, const ServerReading& after,
                               uint64_t ops) {
  ServerBreakdown b;
  b.user_us_per_op = DeltaPerOp(before.user_seconds, after.user_seconds, ops, 1e6);
  b.system_us_per_op = DeltaPerOp(before.system_seconds, after.system_seconds, ops, 1e6);
  b.syscalls_per_op = DeltaPerOp(before.io_syscalls, after.io_syscalls, ops, 1.0);
  b.sleeps_per_op = DeltaPerOp(before.voluntary_switches, after.voluntary_switches, ops, 1.0);
  return b;
}

std::optional<double> BytesPerKey(const ServerReading& before, const ServerReading& after,
                                  uint64_t keys) {
  if (keys == 0) return std::nullopt;
  return (static_cast<double>(after.resident_bytes) - static_cast<double>(before.resident_bytes)) /
         static_cast<double>(keys);
}

std::string ProcessAddress(const std::string& ring_addr) {
  return ring_addr.substr(0, ring_addr.find('#'));
}

ServerCostProbe ServerCostProbe::ForRing(const std::vector<std::string>& nodes,
                                         uint64_t timeout_ms) {
  ServerCostProbe p;
  p.nodes_ = nodes;
  p.timeout_ms_ = timeout_ms;
  return p;
}

ServerCostProbe ServerCostProbe::ForPids(std::vector<int> pids) {
  ServerCostProbe p;
  p.pids_ = std::move(pids);
  for (int pid : p.pids_) p.processes_.push_back("pid " + std::to_string(pid));
  return p;
}

Status ServerCostProbe::Discover() {
  if (!pids_.empty()) return Status::Ok();
  std::set<std::string> found;
  std::string last_error = "no node was given";
  for (const std::string& node : nodes_) {
    Result<RingView> view = WalkRing(ProcessAddress(node), timeout_ms_);
    if (!view.ok()) {
      last_error = view.status().message();
      continue;
    }
    for (const RingNode& n : view->nodes) found.insert(ProcessAddress(n.addr));
    break;
  }
  if (found.empty()) {
    return Status::Unavailable("cannot find the ring's processes to read their CPU time: " +
                               last_error);
  }
  processes_.assign(found.begin(), found.end());
  return Status::Ok();
}

Result<ServerReading> ServerCostProbe::Read() const {
  ServerReading sum;
  if (!pids_.empty()) {
    for (int pid : pids_) {
      Result<ProcReading> r = ReadProcStat(pid);
      if (!r.ok()) return r.status();
      const bool first = sum.processes == 0;
      sum.cpu_seconds += r->cpu_seconds;
      sum.resident_bytes += r->resident_bytes;
      AddKnown(&sum.user_seconds, std::optional<double>(r->user_seconds), first);
      AddKnown(&sum.system_seconds, std::optional<double>(r->system_seconds), first);
      const ProcCounters counters = ReadProcCounters(pid);
      AddKnown(&sum.io_syscalls, counters.io_syscalls, first);
      AddKnown(&sum.voluntary_switches, counters.voluntary_switches, first);
      ++sum.processes;
    }
    return sum;
  }
  for (const std::string& addr : processes_) {
    ChordClient client(addr, timeout_ms_);
    Result<wire::StatusResponse> status = client.GetStatus();
    if (!status.ok()) return status.status();
    if (!status->has_process()) {
      return Status::Unavailable(
          addr + " reports no process figures; is it a chord-node of this version?");
    }
    sum.cpu_seconds += status->process().cpu_seconds();
    sum.resident_bytes += status->process().resident_memory_bytes();
    ++sum.processes;
  }
  return sum;
}

}  // namespace chord::bench
