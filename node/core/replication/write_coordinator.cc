#include "node/core/replication/write_coordinator.h"

#include <algorithm>
#include <utility>

#include "protocol/messages.h"

namespace chord {

void WriteCoordinator::Start(const Id& key_id, wire::Record record, OpRef requester) {
  const uint64_t id = next_id_++;
  WriteOp& w = ops_[id];
  w.key_id = key_id;
  w.record = std::move(record);
  w.requester = requester;
  Attempt(id);
}

void WriteCoordinator::Attempt(uint64_t id) {
  WriteOp& w = ops_[id];
  ++w.attempts;
  const RingState& ring = ctx_.ring;
  if (w.attempts > 1 && (!ring.joined() || ring.awaiting_transfer || !ring.Owns(w.key_id))) {
    // The ring moved while the first attempt was out: the coordinator must find the owner.
    return Fail(id, wire::NOT_OWNER, ring.self.addr + " is no longer the key's owner");
  }
  wire::Record old;
  if (ctx_.store()->Get(w.key_id, w.record.key(), &old).ok()) ctx_.versions.Observe(old.version());
  w.record.set_version(ctx_.versions.Next(ctx_.now.wall_ms));
  w.record.set_writer(ring.self.id.ToBytes());
  if (Status s = ctx_.store()->Put(w.key_id, w.record); !s.ok()) {
    return Fail(id, wire::UNAVAILABLE, "the owner could not store the key: " + s.message());
  }
  ++ctx_.counters.writes_replicated;
  w.newer = 0;
  w.failed.clear();
  w.sent_to.clear();
  const std::vector<NodeRef> targets = policy_.Targets();
  w.asked = {std::string(ring.self.process())};
  for (const NodeRef& t : targets) w.asked.emplace_back(t.process());
  w.pending = targets.size();
  if (targets.empty()) return Settle(id);
  for (const NodeRef& t : targets) SendTo(id, t);
}

void WriteCoordinator::SendTo(uint64_t id, const NodeRef& target) {
  WriteOp& w = ops_[id];
  const auto index = static_cast<uint16_t>(w.sent_to.size());
  w.sent_to.push_back(target);
  ctx_.out.Send(target, msg::Replicate(ctx_.self(), {w.record}), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kWrite, static_cast<uint8_t>(w.attempts), index, id});
}

bool WriteCoordinator::Replace(uint64_t id) {
  WriteOp& w = ops_[id];
  for (const NodeRef& n : ctx_.ring.successors) {
    if (std::find(w.asked.begin(), w.asked.end(), n.process()) != w.asked.end()) continue;
    w.asked.emplace_back(n.process());
    SendTo(id, n);  // its answer settles this member's place; pending unchanged
    return true;
  }
  return false;
}

void WriteCoordinator::OnRpc(OpRef op, const wire::Envelope* response) {
  auto it = ops_.find(op.id);
  // An earlier attempt's answer (attempts are bounded below 256, see Attempt).
  if (it == ops_.end() || op.step != static_cast<uint8_t>(it->second.attempts)) return;
  WriteOp& w = it->second;
  if (response != nullptr && response->has_replicate_resp()) {
    const auto& r = response->replicate_resp();
    if (r.code() == wire::OK) {
      w.newer = std::max(w.newer, r.newer_version());
    } else if (r.code() == wire::SHUTTING_DOWN) {
      if (Replace(op.id)) return;
    } else if (op.index < w.sent_to.size()) {
      w.failed = "the replica " + w.sent_to[op.index].addr + " could not store the key";
    }
  }
  // No answer: the replica is presumed dead; the write needs the live ones only.
  if (--w.pending == 0) Settle(op.id);
}

void WriteCoordinator::Settle(uint64_t id) {
  WriteOp& w = ops_[id];
  if (w.newer >= w.record.version()) {
    // A replica holds a newer version (written by an earlier owner): write again above it,
    // so that this acknowledged write is the newest everywhere.
    ctx_.versions.Observe(w.newer);
    if (w.attempts < std::min(ctx_.config.write_attempts, 255)) return Attempt(id);
    return Fail(id, wire::UNAVAILABLE, "the key's replicas kept holding newer versions; retry");
  }
  if (!w.failed.empty()) return Fail(id, wire::UNAVAILABLE, w.failed);
  wire::DataResponse resp;
  resp.set_code(wire::OK);
  resp.set_version(w.record.version());
  ctx_.self().ToWire(resp.mutable_owner());
  Answer(id, std::move(resp));
}

void WriteCoordinator::Fail(uint64_t id, wire::Code code, std::string why) {
  wire::DataResponse resp;
  resp.set_code(code);
  resp.set_error(std::move(why));
  Answer(id, std::move(resp));
}

void WriteCoordinator::Answer(uint64_t id, wire::DataResponse response) {
  const OpRef requester = ops_[id].requester;
  ops_.erase(id);
  ctx_.completions.Post(requester, std::move(response));
}

}  // namespace chord
