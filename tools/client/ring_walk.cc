#include "tools/client/ring_walk.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "protocol/node_ref.h"
#include "tools/client/chord_client.h"

namespace chord {
namespace {

// A wire NodeInfo as a readable name, tolerating a malformed id.
std::string DescribeInfo(const wire::NodeInfo& info) {
  auto id = Id::FromBytes(info.id());
  if (!id) return info.addr() + " [malformed id]";
  return DescribeNode(info.addr(), *id);
}

// Asks `addr` for its status and checks that its id matches its address.
Result<RingNode> AskStatus(const std::string& addr, uint64_t timeout_ms) {
  ChordClient client(addr, timeout_ms);
  Result<wire::StatusResponse> status = client.GetStatus();
  if (!status.ok()) return status.status();
  std::optional<NodeRef> self = NodeRef::FromWire(status->self());
  if (!self) {
    return Status::Unavailable(addr + " reported an id that is not SHA-1 of its address \"" +
                               status->self().addr() +
                               "\"; is it a chord-node of the same version?");
  }
  return RingNode{self->id, self->addr, std::move(status).value()};
}

// Remembered members are asked this many at a time.
constexpr size_t kParallelProbes = 16;

// Asks the members the walked nodes remember but the walk did not meet; those that answer as
// joined members of a ring are outside this one.
void FindOutsiders(RingView* view, uint64_t timeout_ms) {
  std::set<Id> seen;
  for (const RingNode& n : view->nodes) seen.insert(n.id);
  std::vector<std::string> ask;
  for (const RingNode& n : view->nodes) {
    for (const wire::NodeInfo& m : n.status.known_members()) {
      auto id = Id::FromBytes(m.id());
      if (!id || m.addr().empty() || !seen.insert(*id).second) continue;
      if (ask.size() < kMaxOutsideProbes) ask.push_back(m.addr());
    }
  }
  std::map<Id, RingNode> outside;
  for (size_t first = 0; first < ask.size(); first += kParallelProbes) {
    const size_t count = std::min(kParallelProbes, ask.size() - first);
    std::vector<std::optional<RingNode>> answers(count);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < count; ++i) {
      threads.emplace_back([&, i] {
        Result<RingNode> r = AskStatus(ask[first + i], timeout_ms);
        if (r.ok() && r->status.joined()) answers[i] = std::move(r).value();
      });
    }
    for (std::thread& t : threads) t.join();
    for (auto& a : answers) {
      // A seed remembered without its vnode suffix answers as vnode 0: maybe on the ring.
      if (a && std::none_of(view->nodes.begin(), view->nodes.end(),
                            [&a](const RingNode& n) { return n.id == a->id; })) {
        outside.emplace(a->id, std::move(*a));
      }
    }
  }
  for (auto& [id, node] : outside) view->outside.push_back(std::move(node));
  if (!view->outside.empty()) view->consistent = false;
}

}  // namespace

std::string DescribeNode(const std::string& addr, const Id& id) {
  return addr + " [" + id.ShortHex(12) + "]";
}

Result<RingView> WalkRing(const std::string& start_addr, uint64_t timeout_ms,
                          const std::function<bool()>& cancelled) {
  Result<RingNode> start = AskStatus(start_addr, timeout_ms);
  if (!start.ok()) return start.status();

  RingView view;
  std::map<Id, RingNode> met;
  std::set<std::string> unreachable;  // addresses that did not answer, reported once
  bool walk_problem = false;
  RingNode current = std::move(start).value();
  met.emplace(current.id, current);

  for (int step = 0; step < kMaxRingWalkSteps; ++step) {
    if (cancelled && cancelled()) return Status::Unavailable("the ring walk was cancelled");
    const auto& successors = current.status.successors();
    std::optional<RingNode> next;
    bool closed = false;
    // Take the first successor that answers; stop once the walk reaches a node it has met.
    for (const wire::NodeInfo& candidate : successors) {
      auto id = Id::FromBytes(candidate.id());
      if (!id) {
        view.problems.push_back("node " + DescribeNode(current.addr, current.id) +
                                ": its successor list holds a malformed id for " +
                                candidate.addr());
        walk_problem = true;
        continue;
      }
      if (met.count(*id) > 0) {
        closed = true;
        break;
      }
      if (unreachable.count(candidate.addr()) > 0) continue;
      Result<RingNode> status = AskStatus(candidate.addr(), timeout_ms);
      if (status.ok()) {
        next = std::move(status).value();
        break;
      }
      unreachable.insert(candidate.addr());
      view.problems.push_back("node " + DescribeInfo(candidate) + ", successor of " + current.addr +
                              ", is unreachable: " + status.status().message());
      walk_problem = true;
    }
    if (closed) break;
    if (!next) {
      if (!successors.empty()) {
        view.problems.push_back("node " + DescribeNode(current.addr, current.id) +
                                ": none of its successors could be reached; the walk stopped "
                                "there");
        walk_problem = true;
      }
      break;
    }
    if (step + 1 == kMaxRingWalkSteps) {
      view.problems.push_back("the walk stopped after " + std::to_string(kMaxRingWalkSteps) +
                              " nodes without coming back to the start");
      walk_problem = true;
    }
    current = *next;
    met.emplace(current.id, std::move(*next));
  }

  view.nodes.reserve(met.size());
  for (auto& [id, node] : met) view.nodes.push_back(std::move(node));
  CheckRingPointers(&view);
  if (walk_problem) view.consistent = false;
  if (cancelled && cancelled()) return Status::Unavailable("the ring walk was cancelled");
  FindOutsiders(&view, timeout_ms);
  return view;
}

void CheckRingPointers(RingView* view) {
  const bool had_problems = !view->problems.empty();
  const size_t n = view->nodes.size();
  bool ok = n > 0;
  for (size_t i = 0; i < n; ++i) {
    const RingNode& node = view->nodes[i];
    const std::string name = "node " + DescribeNode(node.addr, node.id);
    const auto& successors = node.status.successors();
    const bool has_pred = node.status.has_predecessor() && !node.status.predecessor().id().empty();
    std::optional<Id> succ_id;
    if (!successors.empty()) succ_id = Id::FromBytes(successors[0].id());
    std::optional<Id> pred_id;
    if (has_pred) pred_id = Id::FromBytes(node.status.predecessor().id());

    if (n == 1) {
      // Alone: no successor or itself, no predecessor or itself.
      if (!successors.empty() && succ_id != node.id) {
        view->problems.push_back(name + ": successor is " + DescribeInfo(successors[0]) +
                                 ", expected itself (it is the only node met)");
        ok = false;
      }
      if (has_pred && pred_id != node.id) {
        view->problems.push_back(name + ": predecessor is " +
                                 DescribeInfo(node.status.predecessor()) +
                                 ", expected itself or none (it is the only node met)");
        ok = false;
      }
      continue;
    }

    const RingNode& want_succ = view->RingSuccessor(i);
    const RingNode& want_pred = view->RingPredecessor(i);
    if (successors.empty()) {
      view->problems.push_back(name + ": has no successor, expected " +
                               DescribeNode(want_succ.addr, want_succ.id));
      ok = false;
    } else if (succ_id != want_succ.id) {
      view->problems.push_back(name + ": successor is " + DescribeInfo(successors[0]) +
                               ", expected " + DescribeNode(want_succ.addr, want_succ.id));
      ok = false;
    }
    if (!has_pred) {
      view->problems.push_back(name + ": predecessor is unset, expected " +
                               DescribeNode(want_pred.addr, want_pred.id));
      ok = false;
    } else if (pred_id != want_pred.id) {
      view->problems.push_back(name + ": predecessor is " +
                               DescribeInfo(node.status.predecessor()) + ", expected " +
                               DescribeNode(want_pred.addr, want_pred.id));
      ok = false;
    }
  }
  view->consistent = ok && !had_problems;
}

}  // namespace chord
