#include "protocol/proc_stat.h"

#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace chord {
namespace {

// The whitespace-separated words of `text`.
std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t')) ++i;
    const size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\n' && text[i] != '\t') ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

std::optional<uint64_t> ToU64(std::string_view word) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size()) return std::nullopt;
  return value;
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The /proc directory of `pid` (0: this process).
std::string ProcDir(int pid) { return pid == 0 ? "/proc/self" : "/proc/" + std::to_string(pid); }

}  // namespace

std::optional<ProcStatFields> ParseProcStat(std::string_view text) {
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos || text.find('(') == std::string_view::npos) {
    return std::nullopt;
  }
  // Field N of proc(5) (counting from 1, pid = 1, comm = 2) is words[N - 3].
  const std::vector<std::string_view> words = Words(text.substr(close + 1));
  if (words.size() < 22) return std::nullopt;
  auto field = [&](int n) { return ToU64(words[static_cast<size_t>(n - 3)]); };
  const auto utime = field(14), stime = field(15), start = field(22), vsize = field(23),
             rss = field(24);
  if (!utime || !stime || !start || !vsize || !rss) return std::nullopt;
  ProcStatFields f{*utime, *stime, *start, *vsize, *rss, std::nullopt};
  if (words.size() > 41 - 3) {
    if (const auto policy = field(41); policy && *policy <= UINT32_MAX) {
      f.policy = static_cast<uint32_t>(*policy);
    }
  }
  return f;
}

std::optional<uint64_t> ParseProcStatmResident(std::string_view text) {
  const std::vector<std::string_view> words = Words(text);
  if (words.size() < 2) return std::nullopt;
  return ToU64(words[1]);
}

std::optional<uint64_t> ParseBootTime(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    if (line.substr(0, 6) == "btime ") {
      const std::vector<std::string_view> words = Words(line);
      if (words.size() == 2) return ToU64(words[1]);
      return std::nullopt;
    }
    pos = end + 1;
  }
  return std::nullopt;
}

std::optional<uint64_t> ParseProcCounter(std::string_view text, std::string_view name) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    if (line.size() > name.size() && line.substr(0, name.size()) == name &&
        line[name.size()] == ':') {
      const std::vector<std::string_view> words = Words(line.substr(name.size() + 1));
      if (words.size() == 1) return ToU64(words[0]);
      return std::nullopt;
    }
    pos = end + 1;
  }
  return std::nullopt;
}

Result<ProcReading> ReadProcStat(int pid) {
  const std::string dir = ProcDir(pid);
  const std::optional<std::string> stat = ReadFile(dir + "/stat");
  if (!stat)
    return Status::NotFound("cannot read " + dir + "/stat; is process " + std::to_string(pid) +
                            " running?");
  const std::optional<ProcStatFields> f = ParseProcStat(*stat);
  if (!f) return Status::IoError(dir + "/stat is not in the format of proc(5)");
  // statm's resident count is the more current one; stat's is the fallback.
  uint64_t resident_pages = f->resident_pages;
  if (const std::optional<std::string> statm = ReadFile(dir + "/statm")) {
    if (const auto pages = ParseProcStatmResident(*statm)) resident_pages = *pages;
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  const long page = sysconf(_SC_PAGESIZE);
  const double tick_s = ticks > 0 ? 1.0 / static_cast<double>(ticks) : 0.01;
  ProcReading r;
  r.cpu_seconds = static_cast<double>(f->utime_ticks + f->stime_ticks) * tick_s;
  r.user_seconds = static_cast<double>(f->utime_ticks) * tick_s;
  r.system_seconds = static_cast<double>(f->stime_ticks) * tick_s;
  r.resident_bytes = resident_pages * static_cast<uint64_t>(page > 0 ? page : 4096);
  r.virtual_bytes = f->virtual_bytes;
  if (const std::optional<std::string> proc_stat = ReadFile("/proc/stat")) {
    if (const auto boot = ParseBootTime(*proc_stat)) {
      r.start_time_seconds =
          static_cast<double>(*boot) + static_cast<double>(f->start_ticks) * tick_s;
    }
  }
  return r;
}

ProcCounters ReadProcCounters(int pid) {
  const std::string dir = ProcDir(pid);
  ProcCounters c;
  if (const std::optional<std::string> io = ReadFile(dir + "/io")) {
    const auto reads = ParseProcCounter(*io, "syscr"), writes = ParseProcCounter(*io, "syscw");
    if (reads && writes) c.io_syscalls = *reads + *writes;
  }
  // A status file counts one thread's switches: summed over the process's threads. Any error
  // of the walk (the process ended meanwhile) leaves the figure unknown.
  std::error_code ec;
  std::filesystem::directory_iterator it(dir + "/task", ec);
  uint64_t switches = 0;
  bool all_read = !ec;
  for (; all_read && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    // A thread that ended since the listing has no file any more and no switches to add.
    const std::optional<std::string> status = ReadFile(it->path().string() + "/status");
    if (!status) continue;
    const std::optional<uint64_t> n = ParseProcCounter(*status, "voluntary_ctxt_switches");
    if (!n) all_read = false;
    switches += n.value_or(0);
  }
  if (all_read && !ec) c.voluntary_switches = switches;
  return c;
}

}  // namespace chord
