#include "node/core/lookup.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "protocol/messages.h"

namespace chord {
namespace {

// Bound on the addresses of answering hops a lookup remembers.
constexpr size_t kMaxAnswered = 16;

std::vector<NodeRef> ParseNodes(const google::protobuf::RepeatedPtrField<wire::NodeInfo>& infos) {
  std::vector<NodeRef> out;
  for (const auto& info : infos) {
    if (auto n = NodeRef::FromWire(info)) out.push_back(std::move(*n));
  }
  return out;
}

}  // namespace

uint64_t LookupService::NewOp(const Id& target, bool verify_owner, OpRef parent) {
  const uint64_t id = next_id_++;
  Op& op = ops_[id];
  op.target = target;
  op.verify_owner = verify_owner;
  op.parent = parent;
  return id;
}

void LookupService::Start(const Id& target, bool verify_owner, OpRef parent) {
  ++ctx_.counters.lookups;
  const uint64_t id = NewOp(target, verify_owner, parent);
  const RingState& ring = ctx_.ring;
  if (!ring.joined()) return Fail(id, "this node has not joined a ring yet");
  if (auto span = ring.OwnerFromSuccessors(target)) {
    // We are the last hop ourselves.
    Op& op = ops_[id];
    op.predecessor = span->predecessor;
    if (verify_owner) {
      op.owners = std::move(span->owners);
      return Verify(id, 0, /*retried=*/false);
    }
    return Found(id, span->owners, 0, /*record_hops=*/true);
  }
  // The first hop has every finger and successor to fall back on, not just a few.
  std::vector<NodeRef> first = ring.ClosestPreceding(target, Id::kBits);
  if (first.empty()) first.push_back(ring.successor());
  ops_[id].stack.push_back(std::move(first));
  NextHop(id);
}

void LookupService::StartThrough(const Id& target, const NodeRef& first_hop, OpRef parent) {
  const uint64_t id = NewOp(target, /*verify_owner=*/false, parent);
  ops_[id].stack.push_back({first_hop});
  NextHop(id);
}

void LookupService::OnRpc(OpRef ref, const wire::Envelope* response) {
  if (ops_.count(ref.id) == 0) return;
  if (ref.step == kHop) return OnHop(ref.id, response);
  if (ref.step == kVerify) return OnVerify(ref.id, response);
}

void LookupService::NextHop(uint64_t id) {
  Op& op = ops_[id];
  // Next untried candidate, most recent list first.
  std::optional<NodeRef> next;
  while (!op.stack.empty() && !next) {
    auto& list = op.stack.back();
    while (!list.empty()) {
      NodeRef c = list.front();
      list.erase(list.begin());
      if (op.tried.insert(c.id).second) {
        next = std::move(c);
        break;
      }
    }
    if (!next) op.stack.pop_back();
  }
  if (!next) return Fail(id, "every route toward the key's owner timed out");
  if (++op.steps > ctx_.config.max_lookup_steps) {
    return Fail(id, "the lookup did not converge within " +
                        std::to_string(ctx_.config.max_lookup_steps) + " steps");
  }
  op.hop = *next;
  ctx_.out.Send(op.hop, msg::FindNextHop(op.target), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kLookup, kHop, 0, id});
}

void LookupService::OnHop(uint64_t id, const wire::Envelope* response) {
  Op& op = ops_[id];
  const NodeRef hop = op.hop;
  if (response == nullptr || !response->has_find_next_hop_resp()) {
    if (response == nullptr) {
      ++op.timeouts;
      if (op.retried.insert(hop.id).second) {
        // A slow answer is not proof of death: ask the same hop once more first.
        op.tried.erase(hop.id);
        if (op.stack.empty()) op.stack.emplace_back();
        op.stack.back().insert(op.stack.back().begin(), hop);
        return NextHop(id);
      }
      ctx_.ring.DropFinger(hop);
    }
    return NextHop(id);  // route around it
  }
  ++op.hops;
  if (op.answered.size() < kMaxAnswered) op.answered.push_back(hop.addr);
  const auto& r = response->find_next_hop_resp();
  std::vector<NodeRef> nodes = ParseNodes(r.nodes());
  if (!r.done()) {
    op.stack.push_back(std::move(nodes));
    return NextHop(id);
  }
  if (nodes.empty()) nodes.push_back(hop);  // the hop is alone: it owns everything
  auto pred = r.has_predecessor() ? NodeRef::FromWire(r.predecessor()) : std::nullopt;
  op.predecessor = pred ? *pred : hop;
  if (op.verify_owner) {
    op.owners = std::move(nodes);
    return Verify(id, 0, /*retried=*/false);
  }
  // Like the lookup counter, the histogram leaves out this node's own join lookup.
  Found(id, nodes, 0, /*record_hops=*/ctx_.ring.state != NodeState::kJoining);
}

void LookupService::Verify(uint64_t id, size_t index, bool retried) {
  Op& op = ops_[id];
  if (index >= op.owners.size() || ++op.steps > ctx_.config.max_lookup_steps) {
    return Fail(id, "the key's owner and its known successors did not answer");
  }
  op.owner_index = index;
  op.owner_retried = retried;
  const NodeRef& candidate = op.owners[index];
  if (candidate == ctx_.self() && ctx_.ring.Owns(op.target)) {
    op.owner_successors = ctx_.ring.successors;
    return Found(id, op.owners, index, /*record_hops=*/true);
  }
  // Ask the candidate for its predecessor: the owner is the node whose range
  // (predecessor, self] holds the key. A list that is stale under churn can name a node past
  // a newly joined owner; the candidate's own predecessor pointer is fresher (a joining node
  // notifies its successor at once), so step back to it when it lies at or after the key.
  ctx_.out.Send(candidate, msg::GetState(), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kLookup, kVerify, 0, id});
}

void LookupService::OnVerify(uint64_t id, const wire::Envelope* response) {
  Op& op = ops_[id];
  const size_t index = op.owner_index;
  const NodeRef candidate = op.owners[index];
  if (response == nullptr) {
    ++op.timeouts;
    // Skipping a live owner that was merely slow would return the wrong node: ask once
    // more before moving on.
    if (!op.owner_retried) return Verify(id, index, /*retried=*/true);
    ctx_.ring.DropFinger(candidate);
    op.dead.insert(candidate.id);
    return Verify(id, index + 1, /*retried=*/false);
  }
  if (!response->has_get_state_resp() || !response->get_state_resp().joined()) {
    return Verify(id, index + 1, /*retried=*/false);  // leaving
  }
  const auto& state = response->get_state_resp();
  auto pred = state.has_predecessor() ? NodeRef::FromWire(state.predecessor()) : std::nullopt;
  if (pred && !(*pred == candidate) && op.dead.count(pred->id) == 0 &&
      !Id::InHalfOpen(op.target, pred->id, candidate.id)) {
    // The candidate's predecessor lies at or after the key: it is the better owner.
    op.owners.insert(op.owners.begin() + static_cast<std::ptrdiff_t>(index), *pred);
    return Verify(id, index, /*retried=*/false);
  }
  op.owner_successors = ParseNodes(state.successors());
  Found(id, op.owners, index, /*record_hops=*/true);
}

void LookupService::Found(uint64_t id, const std::vector<NodeRef>& owners, size_t index,
                          bool record_hops) {
  Op& op = ops_[id];
  ctx_.counters.lookup_hops += static_cast<uint64_t>(op.hops);
  if (record_hops) ctx_.metrics.lookup_hops.Observe(op.hops);
  LookupResult r;
  r.owner = owners[index];
  r.successors.assign(owners.begin() + static_cast<std::ptrdiff_t>(index) + 1, owners.end());
  r.predecessor = op.predecessor;
  r.owner_successors = std::move(op.owner_successors);
  r.hops = op.hops;
  r.timeouts = op.timeouts;
  LookupOutcome outcome{std::move(r), std::move(op.answered)};
  const OpRef parent = op.parent;
  ops_.erase(id);
  ctx_.completions.Post(parent, std::move(outcome));
}

void LookupService::Fail(uint64_t id, const std::string& why) {
  Op& op = ops_[id];
  LookupOutcome outcome{Status::Unavailable(why), std::move(op.answered)};
  const OpRef parent = op.parent;
  ops_.erase(id);
  ctx_.completions.Post(parent, std::move(outcome));
}

void LookupService::HandleFindNextHop(ReplyToken from, const wire::Envelope& request) {
  wire::Envelope reply;
  auto* r = reply.mutable_find_next_hop_resp();
  auto target = Id::FromBytes(request.find_next_hop().target());
  const RingState& ring = ctx_.ring;
  if (!target || !ring.joined()) {
    // Not done and no nodes: the asker routes around us.
    return ctx_.out.Reply(from, request.request_id(), std::move(reply));
  }
  if (auto span = ring.OwnerFromSuccessors(*target)) {
    r->set_done(true);
    for (const NodeRef& n : span->owners) n.ToWire(r->add_nodes());
    span->predecessor.ToWire(r->mutable_predecessor());
  } else {
    std::vector<NodeRef> next = ring.ClosestPreceding(*target, ctx_.config.next_hop_candidates);
    if (next.empty()) next.push_back(ring.successor());
    for (const NodeRef& n : next) n.ToWire(r->add_nodes());
  }
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

void LookupService::HandleLookup(ReplyToken from, const wire::Envelope& request) {
  const Id key_id = Id::Sha1(request.lookup().key());
  if (clients_.size() >= kMaxClientLookups) {
    wire::Envelope reply;
    auto* l = reply.mutable_lookup_resp();
    l->set_code(wire::UNAVAILABLE);
    l->set_key_id(key_id.ToBytes());
    l->set_error(ctx_.self().addr + " already runs " + std::to_string(kMaxClientLookups) +
                 " lookups for clients; retry later or send fewer at once");
    return ctx_.out.Reply(from, request.request_id(), std::move(reply));
  }
  const uint64_t id = next_id_++;
  clients_[id] = ClientLookup{from, request.request_id(), key_id};
  Start(key_id, /*verify_owner=*/true, OpRef{OpKind::kClientLookup, 0, 0, id});
}

void LookupService::OnClientLookupDone(OpRef op, LookupOutcome outcome) {
  auto it = clients_.find(op.id);
  if (it == clients_.end()) return;
  const ClientLookup c = it->second;
  clients_.erase(it);
  wire::Envelope reply;
  auto* l = reply.mutable_lookup_resp();
  l->set_key_id(c.key_id.ToBytes());
  if (!outcome.result.ok()) {
    l->set_code(wire::UNAVAILABLE);
    l->set_error(outcome.result.status().message());
  } else {
    l->set_code(wire::OK);
    outcome.result->owner.ToWire(l->mutable_owner());
    l->set_hops(static_cast<uint32_t>(outcome.result->hops));
    l->set_timeouts(static_cast<uint32_t>(outcome.result->timeouts));
    const size_t others = ctx_.config.replicas > 1 ? size_t(ctx_.config.replicas - 1) : 0;
    const LookupResult& found = *outcome.result;
    const std::vector<NodeRef>& after =
        found.owner_successors.empty() ? found.successors : found.owner_successors;
    for (const NodeRef& r : RingState::DistinctProcesses(after, found.owner, others)) {
      r.ToWire(l->add_replicas());
    }
  }
  for (const std::string& addr : outcome.answered) l->add_route(addr);
  ctx_.out.Reply(c.from, c.request_id, std::move(reply));
}

}  // namespace chord
