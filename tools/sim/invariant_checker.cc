#include "tools/sim/invariant_checker.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace chord::sim {

bool InvariantChecker::IsMember(const ChordNode* n) const {
  // A leaving node has, in Zave's terms, already failed: it no longer counts as a member.
  return n != nullptr && n->state() == ChordNode::State::kJoined;
}

void InvariantChecker::Violation(uint64_t* counter, const std::string& what) {
  ++*counter;
  if (first_violation_.empty()) {
    first_violation_ = "t=" + std::to_string(net_->now_ms()) + " ms: " + what;
  }
}

void InvariantChecker::CheckNode(const ChordNode& node) {
  if (!IsMember(&node)) return;
  ++counts_.node_checks;
  const auto& succ = node.successors();
  const Id& self = node.self().id;
  if (succ.empty()) {
    // Alone is only right when it is the only node.
    if (net_->live_count() > 1) {
      Violation(&counts_.one_live_successor, node.self().addr + " has an empty successor list");
    }
    return;
  }
  bool any_live = false;
  std::unordered_set<Id, IdHash> seen{self};
  const Id* prev = &self;
  bool ordered = true;
  for (const NodeRef& s : succ) {
    if (IsMember(net_->node(s.addr))) any_live = true;
    if (!seen.insert(s.id).second) {
      Violation(&counts_.no_duplicates, node.self().addr + " lists " + s.addr + " twice");
    }
    // Each entry strictly after the previous one and before the node itself (clockwise).
    if (prev != &self && !Id::InOpen(s.id, *prev, self)) ordered = false;
    prev = &s.id;
  }
  if (!ordered) {
    std::string list;
    for (const NodeRef& s : succ) list += " " + s.addr + "(" + s.id.ShortHex(4) + ")";
    Violation(&counts_.ordered_lists, node.self().addr + "(" + self.ShortHex(4) +
                                          ")'s successor list is out of order:" + list);
  }
  if (!any_live) {
    std::string list;
    for (const NodeRef& s : succ) list += " " + s.addr;
    Violation(&counts_.one_live_successor,
              node.self().addr + " has no live successor (list:" + list + ")");
  }
}

void InvariantChecker::CheckAllNodes() {
  for (const ChordNode* n : net_->LiveNodes()) CheckNode(*n);
}

void InvariantChecker::CheckRing() {
  ++counts_.ring_checks;
  std::vector<const ChordNode*> members;
  for (const ChordNode* n : net_->LiveNodes()) {
    if (IsMember(n)) members.push_back(n);
  }
  if (members.size() <= 1) return;
  std::unordered_map<Id, size_t, IdHash> index;
  for (size_t i = 0; i < members.size(); ++i) index[members[i]->self().id] = i;
  // best[i]: the first live member in i's successor list; npos when there is none.
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<size_t> best(members.size(), kNone);
  for (size_t i = 0; i < members.size(); ++i) {
    for (const NodeRef& s : members[i]->successors()) {
      auto it = index.find(s.id);
      if (it != index.end()) {
        best[i] = it->second;
        break;
      }
    }
  }
  // Cycles of the functional graph i -> best[i].
  std::vector<int> color(members.size(), 0);  // 0 new, 1 on the current path, 2 done
  int cycles = 0;
  for (size_t start = 0; start < members.size(); ++start) {
    if (color[start] != 0) continue;
    std::vector<size_t> path;
    size_t v = start;
    while (v != kNone && color[v] == 0) {
      color[v] = 1;
      path.push_back(v);
      v = best[v];
    }
    if (v != kNone && color[v] == 1) {
      ++cycles;
      // Ordered: going around the cycle the ids increase except for exactly one wrap.
      int wraps = 0;
      size_t u = v;
      do {
        if (!(members[u]->self().id < members[best[u]]->self().id)) ++wraps;
        u = best[u];
      } while (u != v);
      if (wraps != 1) {
        Violation(&counts_.ring_order, "a ring through " + members[v]->self().addr + " wraps " +
                                           std::to_string(wraps) + " times");
      }
    }
    for (size_t p : path) color[p] = 2;
  }
  if (cycles != 1) {
    Violation(&counts_.ring_count, std::to_string(cycles) + " rings among " +
                                       std::to_string(members.size()) + " members");
  }
}

}  // namespace chord::sim
