#include "tools/lancheck/ack_log.h"

#include <algorithm>
#include <charconv>
#include <sstream>

namespace chord::lancheck {

bool ParseU64(const std::string& s, uint64_t* out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::string FormatAck(const Ack& ack) {
  return ack.key + "\t" + ack.value + "\t" + std::to_string(ack.version) + "\t" +
         std::to_string(ack.at_ms) + "\n";
}

std::vector<std::pair<int, std::vector<std::string>>> TabRows(const std::string& text) {
  std::vector<std::pair<int, std::vector<std::string>>> rows;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::istringstream split(line);
    for (std::string c; std::getline(split, c, '\t');) cells.push_back(c);
    rows.emplace_back(n, std::move(cells));
  }
  return rows;
}

Result<std::vector<Ack>> ParseAckLog(const std::string& text) {
  std::vector<Ack> out;
  for (const auto& [n, f] : TabRows(text)) {
    Ack a;
    if (f.size() != 4 || f[0].empty() || !ParseU64(f[2], &a.version) || !ParseU64(f[3], &a.at_ms)) {
      return Status::InvalidArgument("line " + std::to_string(n) +
                                     " of the ack log is not KEY<TAB>VALUE<TAB>VERSION<TAB>MS; "
                                     "give a file chord-lancheck write made");
    }
    a.key = f[0];
    a.value = f[1];
    out.push_back(std::move(a));
  }
  return out;
}

std::map<std::string, Ack> NewestByKey(const std::vector<Ack>& acks) {
  std::map<std::string, Ack> newest;
  for (const Ack& a : acks) {
    auto it = newest.find(a.key);
    if (it == newest.end() || it->second.version < a.version) newest[a.key] = a;
  }
  return newest;
}

Verdict Verify(const std::vector<Ack>& acks, const ReadFn& read) {
  Verdict v;
  // Two coordinators can give two writes the same version (the same millisecond); the
  // store then keeps the one of the higher writer id, which the client does not see: any
  // value acknowledged at the newest version is right.
  std::map<std::string, std::vector<std::string>> at_newest;
  const std::map<std::string, Ack> newest = NewestByKey(acks);
  for (const Ack& a : acks) {
    if (newest.at(a.key).version == a.version) at_newest[a.key].push_back(a.value);
  }
  for (const auto& [key, want] : newest) {
    const std::vector<std::string>& values = at_newest[key];
    ++v.keys;
    std::string error;
    const auto got = read(key, &error);
    std::string problem;
    if (!got && !error.empty()) {
      ++v.unreadable;
      problem = key + ": acknowledged with version " + std::to_string(want.version) +
                ", cannot be read: " + error;
    } else if (!got) {
      ++v.lost;
      problem =
          key + ": acknowledged with version " + std::to_string(want.version) + ", now missing";
    } else if (got->second < want.version ||
               (got->second == want.version &&
                std::find(values.begin(), values.end(), got->first) == values.end())) {
      ++v.stale;
      problem = key + ": reads version " + std::to_string(got->second) + " (\"" + got->first +
                "\"), older than the acknowledged " + std::to_string(want.version) + " (\"" +
                want.value + "\")";
    }
    if (!problem.empty() && v.problems.size() < kMaxProblems) v.problems.push_back(problem);
  }
  return v;
}

}  // namespace chord::lancheck
