#include "tools/lancheck/counter_log.h"

#include <map>
#include <set>

namespace chord::lancheck {

std::string FormatIncrement(const Increment& inc) {
  return inc.key + "\t" + std::to_string(inc.from_version) + "\t" + std::to_string(inc.value) +
         "\t" + std::to_string(inc.version) + "\t" + std::to_string(inc.at_ms) + "\n";
}

Result<std::vector<Increment>> ParseIncrementLog(const std::string& text) {
  std::vector<Increment> out;
  for (const auto& [n, f] : TabRows(text)) {
    Increment inc;
    if (f.size() != 5 || f[0].empty() || !ParseU64(f[1], &inc.from_version) ||
        !ParseU64(f[2], &inc.value) || !ParseU64(f[3], &inc.version) ||
        !ParseU64(f[4], &inc.at_ms)) {
      return Status::InvalidArgument(
          "line " + std::to_string(n) +
          " of the increment log is not KEY<TAB>FROM_VERSION<TAB>VALUE<TAB>VERSION<TAB>MS; give "
          "a file chord-lancheck count made");
    }
    inc.key = f[0];
    out.push_back(std::move(inc));
  }
  return out;
}

Verdict VerifyCounters(const std::vector<Increment>& incs, const ReadFn& read) {
  Verdict v;
  auto note = [&v](const std::string& problem) {
    if (v.problems.size() < kMaxProblems) v.problems.push_back(problem);
  };
  std::map<std::string, const Increment*> highest;
  std::map<std::string, std::set<uint64_t>> values;
  for (const Increment& inc : incs) {
    if (!values[inc.key].insert(inc.value).second) {
      ++v.doubled;
      note(inc.key + ": the value " + std::to_string(inc.value) +
           " was acknowledged twice (compare-and-set from version " +
           std::to_string(inc.from_version) + "): one increment was lost");
    }
    const Increment*& h = highest[inc.key];
    if (h == nullptr || h->value < inc.value) h = &inc;
  }
  for (const auto& [key, want] : highest) {
    ++v.keys;
    std::string error;
    const auto got = read(key, &error);
    uint64_t value = 0;
    if (!got && !error.empty()) {
      ++v.unreadable;
      note(key + ": acknowledged up to " + std::to_string(want->value) +
           ", cannot be read: " + error);
    } else if (!got || !ParseU64(got->first, &value) || value < want->value) {
      ++v.lost;
      note(key + ": acknowledged up to " + std::to_string(want->value) + ", now " +
           (!got ? std::string("missing") : "reads \"" + got->first + "\""));
    } else if (got->second < want->version) {
      ++v.stale;
      note(key + ": reads version " + std::to_string(got->second) + ", older than the " +
           std::to_string(want->version) + " of the acknowledged value " +
           std::to_string(want->value));
    }
  }
  return v;
}

}  // namespace chord::lancheck
