#include "tools/chordctl/ring_survey.h"

#include <algorithm>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "protocol/node_ref.h"
#include "tools/client/chord_client.h"

namespace chord::ctl {
namespace {

// What a probe of one address found.
struct ProbeResult {
  bool answered = false;
  wire::StatusResponse status;
  std::string reason;  // when !answered
};

ProbeResult Probe(const std::string& addr, const Id& expected_id, uint64_t timeout_ms) {
  ProbeResult result;
  ChordClient client(addr, timeout_ms);
  Result<wire::StatusResponse> status = client.GetStatus();
  if (!status.ok()) {
    result.reason = status.status().message();
    return result;
  }
  std::optional<NodeRef> self = NodeRef::FromWire(status->self());
  if (!self || self->id != expected_id) {
    result.reason = addr + " answers as " + status->self().addr() + ", not as itself";
    return result;
  }
  result.answered = true;
  result.status = std::move(status).value();
  return result;
}

NodeState StateOf(const wire::StatusResponse& status) {
  if (status.leaving()) return NodeState::kLeaving;
  if (!status.joined()) return NodeState::kJoining;
  return NodeState::kUp;
}

SurveyNode AnsweringNode(const Id& id, const std::string& addr, wire::StatusResponse status) {
  SurveyNode node;
  node.id = id;
  node.addr = addr;
  node.state = StateOf(status);
  node.status = std::move(status);
  return node;
}

// Calls `visit(info, role)` for the predecessor and every successor-list entry of `status`;
// role is "predecessor", "successor" (the first entry) or "successor list".
template <typename Visit>
void ForEachPointer(const wire::StatusResponse& status, Visit visit) {
  if (status.has_predecessor() &&
      (!status.predecessor().id().empty() || !status.predecessor().addr().empty())) {
    visit(status.predecessor(), "predecessor");
  }
  for (int i = 0; i < status.successors_size(); ++i) {
    visit(status.successors(i), i == 0 ? "successor" : "successor list");
  }
}

}  // namespace

const char* NodeStateName(NodeState state) {
  switch (state) {
    case NodeState::kUp:
      return "Up";
    case NodeState::kJoining:
      return "Joining";
    case NodeState::kLeaving:
      return "Leaving";
    case NodeState::kDown:
      return "Down";
  }
  return "?";
}

std::vector<size_t> RingSurvey::Answering() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].answers()) out.push_back(i);
  }
  return out;
}

size_t RingSurvey::CountState(NodeState state) const {
  return static_cast<size_t>(std::count_if(
      nodes.begin(), nodes.end(), [state](const SurveyNode& n) { return n.state == state; }));
}

uint64_t RingSurvey::TotalKeys() const {
  uint64_t total = 0;
  for (const SurveyNode& n : nodes) total += n.keys();
  return total;
}

uint64_t RingSurvey::TotalReplicaKeys() const {
  uint64_t total = 0;
  for (const SurveyNode& n : nodes) total += n.replica_keys();
  return total;
}

size_t RingSurvey::Uncounted() const {
  return static_cast<size_t>(std::count_if(
      nodes.begin(), nodes.end(), [](const SurveyNode& n) { return n.answers() && !n.counted(); }));
}

std::optional<size_t> RingSurvey::AnsweringPredecessor(size_t i) const {
  const size_t n = nodes.size();
  for (size_t step = 1; step <= n; ++step) {
    const size_t j = (i + n - step) % n;
    if (nodes[j].answers()) return j;
  }
  return std::nullopt;
}

double RingSurvey::Share(size_t i) const {
  if (!nodes[i].answers()) return 0.0;
  const std::optional<size_t> pred = AnsweringPredecessor(i);
  if (!pred || *pred == i) return 1.0;
  return Id::Distance(nodes[*pred].id, nodes[i].id).ToUnitFraction();
}

Result<RingSurvey> SurveyRing(const std::vector<std::string>& starts,
                              const std::vector<std::string>& remembered, uint64_t timeout_ms) {
  RingSurvey survey;
  std::optional<Status> first_error;
  bool walked = false;
  std::set<std::string> tried;
  for (const std::string& start : starts) {
    if (!tried.insert(start).second) continue;
    Result<RingView> view = WalkRing(start, timeout_ms);
    if (view.ok()) {
      survey.via = start;
      survey.walk = std::move(view).value();
      walked = true;
      break;
    }
    if (!first_error) first_error = view.status();
  }
  if (!walked) {
    return first_error ? *first_error
                       : Status::InvalidArgument("no node to start the walk from; give --node");
  }

  std::map<Id, SurveyNode> positions;
  for (const RingNode& node : survey.walk.nodes) {
    positions.emplace(node.id, AnsweringNode(node.id, node.addr, node.status));
  }
  std::map<Id, std::string> pending;  // id -> address, not yet probed
  std::set<std::string> malformed;
  auto collect = [&](const SurveyNode& from) {
    ForEachPointer(*from.status, [&](const wire::NodeInfo& info, const char* role) {
      std::optional<Id> id = Id::FromBytes(info.id());
      if (!id) {
        malformed.insert(from.addr + "'s " + role + " pointer holds a malformed id for \"" +
                         info.addr() + "\"");
        return;
      }
      if (positions.count(*id) == 0 && !info.addr().empty()) pending.emplace(*id, info.addr());
    });
  };
  for (const auto& [id, node] : positions) collect(node);
  for (const std::string& addr : remembered) {
    const Id id = Id::Sha1(addr);
    if (positions.count(id) == 0) pending.emplace(id, addr);
  }

  size_t probes = 0;
  while (!pending.empty() && probes < kMaxSurveyProbes) {
    std::vector<std::pair<Id, std::string>> batch;
    for (auto it = pending.begin();
         it != pending.end() && batch.size() < kMaxParallelProbes && probes < kMaxSurveyProbes;
         ++probes) {
      batch.emplace_back(it->first, it->second);
      it = pending.erase(it);
    }
    std::vector<ProbeResult> results(batch.size());
    {
      std::vector<std::thread> threads;
      threads.reserve(batch.size());
      for (size_t i = 0; i < batch.size(); ++i) {
        threads.emplace_back(
            [&, i] { results[i] = Probe(batch[i].second, batch[i].first, timeout_ms); });
      }
      for (std::thread& t : threads) t.join();
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      const auto& [id, addr] = batch[i];
      if (results[i].answered) {
        auto [it, inserted] =
            positions.emplace(id, AnsweringNode(id, addr, std::move(results[i].status)));
        if (inserted) collect(it->second);
      } else {
        SurveyNode down;
        down.id = id;
        down.addr = addr;
        down.state = NodeState::kDown;
        down.down_reason = std::move(results[i].reason);
        positions.emplace(id, std::move(down));
      }
    }
  }

  // Who names each Down position, now that every answering one is known.
  for (auto& [id, node] : positions) {
    if (!node.answers()) continue;
    ForEachPointer(*node.status, [&](const wire::NodeInfo& info, const char* role) {
      std::optional<Id> target = Id::FromBytes(info.id());
      if (!target) return;
      auto it = positions.find(*target);
      if (it == positions.end() || it->second.answers()) return;
      const std::string naming = std::string(role) == "successor list"
                                     ? "in the successor list of " + node.addr
                                     : std::string(role) + " of " + node.addr;
      std::vector<std::string>& named_by = it->second.named_by;
      if (std::find(named_by.begin(), named_by.end(), naming) == named_by.end()) {
        named_by.push_back(naming);
      }
    });
  }

  survey.nodes.reserve(positions.size());
  for (auto& [id, node] : positions) survey.nodes.push_back(std::move(node));
  survey.malformed.assign(malformed.begin(), malformed.end());
  return survey;
}

}  // namespace chord::ctl
