#include "tools/chordctl/ring_check.h"

#include <algorithm>
#include <optional>

#include "protocol/id.h"

namespace chord::ctl {
namespace {

constexpr size_t kMaxNamersListed = 4;

// How a check line names the node a pointer points to.
std::string PointerName(const wire::NodeInfo& info) {
  if (!info.addr().empty()) return info.addr();
  std::optional<Id> id = Id::FromBytes(info.id());
  if (!id) return "an unnamed node";
  std::string name(1, '[');
  return name.append(id->ShortHex(12)).append(1, ']');
}

bool IsSet(const wire::NodeInfo& info) { return !info.id().empty() || !info.addr().empty(); }

// "successor of A, predecessor of B and 3 more".
std::string JoinNamers(const std::vector<std::string>& named_by) {
  std::string out;
  const size_t shown = std::min(named_by.size(), kMaxNamersListed);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out += ", ";
    out += named_by[i];
  }
  if (named_by.size() > shown) out += " and " + std::to_string(named_by.size() - shown) + " more";
  return out;
}

}  // namespace

RingVerdict CheckRing(const RingSurvey& survey) {
  std::vector<std::string> errors;
  const std::vector<size_t> order = survey.Answering();
  const size_t n = order.size();

  for (const SurveyNode& node : survey.nodes) {
    if (node.state == NodeState::kDown && !node.named_by.empty()) {
      errors.push_back(node.addr + " does not answer; it is still " + JoinNamers(node.named_by));
    } else if (node.state == NodeState::kJoining) {
      errors.push_back("node " + node.addr + " is still joining");
    } else if (node.state == NodeState::kLeaving) {
      errors.push_back("node " + node.addr + " is leaving the ring");
    }
  }

  for (size_t k = 0; k < n; ++k) {
    const SurveyNode& node = survey.nodes[order[k]];
    const SurveyNode& want_succ = survey.nodes[order[(k + 1) % n]];
    const SurveyNode& want_pred = survey.nodes[order[(k + n - 1) % n]];
    const wire::StatusResponse& status = *node.status;
    const bool has_succ = !status.successors().empty() && IsSet(status.successors(0));
    const bool has_pred = status.has_predecessor() && IsSet(status.predecessor());
    const std::optional<Id> succ_id =
        has_succ ? Id::FromBytes(status.successors(0).id()) : std::nullopt;
    const std::optional<Id> pred_id =
        has_pred ? Id::FromBytes(status.predecessor().id()) : std::nullopt;
    if (!status.store_error().empty()) {
      errors.push_back(node.addr + " cannot read its store to count its keys (" +
                       status.store_error() + "); see its log and the disk of its --data-dir");
    }

    if (n == 1) {
      // Alone: no successor or itself, no predecessor or itself.
      if (has_succ && succ_id != node.id) {
        errors.push_back(node.addr + "'s successor is " + PointerName(status.successors(0)) +
                         " but it is the only node that answers");
      }
      if (has_pred && pred_id != node.id) {
        errors.push_back(node.addr + "'s predecessor is " + PointerName(status.predecessor()) +
                         " but it is the only node that answers");
      }
      continue;
    }
    if (!has_succ) {
      errors.push_back(node.addr + " has no successor but the ring order says " + want_succ.addr);
    } else if (succ_id != want_succ.id) {
      errors.push_back(node.addr + "'s successor is " + PointerName(status.successors(0)) +
                       " but the ring order says " + want_succ.addr);
    }
    if (!has_pred) {
      errors.push_back(node.addr + " has no predecessor but the ring order says " + want_pred.addr);
    } else if (pred_id != want_pred.id) {
      errors.push_back(node.addr + "'s predecessor is " + PointerName(status.predecessor()) +
                       " but the ring order says " + want_pred.addr);
    }
  }

  for (const RingNode& o : survey.walk.outside) {
    std::string line = o.addr + " answers but is not in this ring";
    if (!o.status.successors().empty()) {
      line += " (its successor is " + PointerName(o.status.successors(0)) + ")";
    }
    errors.push_back(line +
                     ": the network was or is split; the rings merge once their nodes reach "
                     "each other again");
  }
  for (const std::string& m : survey.malformed) errors.push_back(m);
  // Whatever else the walk itself found wrong (e.g. it never came back to its start).
  if (errors.empty() && !survey.walk.consistent) {
    for (const std::string& p : survey.walk.problems) errors.push_back(p);
    if (survey.walk.problems.empty()) errors.push_back("the walk found the ring inconsistent");
  }

  RingVerdict verdict;
  verdict.ok = errors.empty();
  if (verdict.ok) {
    verdict.lines.push_back(
        n == 1 ? "[OK] the one node agrees: its successor and predecessor pointers match the "
                 "ring order"
               : "[OK] all " + std::to_string(n) +
                     " nodes agree: every successor and predecessor pointer matches the ring "
                     "order");
  } else {
    for (std::string& e : errors) verdict.lines.push_back("[ERR] " + std::move(e));
  }
  return verdict;
}

std::string VerdictText(const RingVerdict& verdict) {
  std::string out;
  for (const std::string& line : verdict.lines) out += line + "\n";
  return out;
}

}  // namespace chord::ctl
