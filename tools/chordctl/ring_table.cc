#include "tools/chordctl/ring_table.h"

#include <cctype>
#include <map>
#include <vector>

#include "tools/chordctl/text_table.h"

namespace chord::ctl {
namespace {

// What the ring positions of one process add up to.
struct ProcessTotals {
  int vnodes = 0;
  int down = 0;
  int uncounted = 0;  // answering positions that could not read the store
  uint64_t keys = 0;
  uint64_t replica_keys = 0;
  double share = 0.0;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string UncountedText(const RingSurvey& survey) {
  const size_t n = survey.Uncounted();
  if (n == 0) return "";
  return " (not counting " +
         CountOf(n, "node that cannot read its store", "nodes that cannot read their stores") + ")";
}

std::string NodeCountText(const RingSurvey& survey) {
  std::string out = CountOf(survey.nodes.size(), "node", "nodes") + " (";
  bool first = true;
  for (NodeState state :
       {NodeState::kUp, NodeState::kJoining, NodeState::kLeaving, NodeState::kDown}) {
    const size_t count = survey.CountState(state);
    if (count == 0) continue;
    out += (first ? "" : ", ") + std::to_string(count) + " " + Lower(NodeStateName(state));
    first = false;
  }
  return out + ")";
}

std::string RingTable(const RingSurvey& survey, const RingVerdict& verdict) {
  // KEYS: records the position owns as primary; REPLICA KEYS: copies held for other owners.
  const std::vector<std::string> header = {"STATE", "ADDRESS",      "ID",
                                           "KEYS",  "REPLICA KEYS", "SHARE"};
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, ProcessTotals> processes;
  bool any_vnode = false;
  for (size_t i = 0; i < survey.nodes.size(); ++i) {
    const SurveyNode& node = survey.nodes[i];
    const bool up = node.answers();
    // "?": the node could not read its store to count (check names the error).
    const bool counted = node.counted();
    rows.push_back({NodeStateName(node.state), node.addr, node.id.ShortHex(kTableIdHexDigits),
                    counted ? std::to_string(node.keys()) : (up ? "?" : "-"),
                    counted ? std::to_string(node.replica_keys()) : (up ? "?" : "-"),
                    up ? Percent(survey.Share(i)) : "-"});
    const size_t hash = node.addr.find('#');
    any_vnode = any_vnode || hash != std::string::npos;
    ProcessTotals& p = processes[node.addr.substr(0, hash)];
    ++p.vnodes;
    if (!up) ++p.down;
    if (up && !node.counted()) ++p.uncounted;
    p.keys += node.keys();
    p.replica_keys += node.replica_keys();
    p.share += survey.Share(i);
  }
  std::string out = FormatTable(header, rows, {false, false, false, true, true, true});
  // Virtual nodes: one line per process with what its ring positions add up to.
  if (any_vnode) {
    for (const auto& [process, p] : processes) {
      out += "process " + process + ": " + CountOf(p.vnodes, "vnode", "vnodes");
      if (p.down > 0) out += " (" + std::to_string(p.down) + " down)";
      out += ", " + CountOf(p.keys, "key", "keys") + (p.uncounted > 0 ? " counted" : "") + ", " +
             CountOf(p.replica_keys, "replica key", "replica keys") + ", " + Percent(p.share) +
             " of the ring\n";
    }
  }
  out += "total: " + NodeCountText(survey) + ", ";
  if (any_vnode) out += CountOf(processes.size(), "process", "processes") + ", ";
  out += CountOf(survey.TotalKeys(), "key", "keys") + ", " +
         CountOf(survey.TotalReplicaKeys(), "replica key", "replica keys") + UncountedText(survey) +
         "\n";
  out += VerdictText(verdict);
  return out;
}

}  // namespace chord::ctl
