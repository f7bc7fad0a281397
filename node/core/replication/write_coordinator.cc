#include "node/core/replication/write_coordinator.h"

#include <algorithm>
#include <utility>

#include "protocol/messages.h"

namespace chord {
namespace {

enum Step : uint8_t { kReplicate = 1 };

}  // namespace

void WriteCoordinator::Start(const Id& key_id, wire::Record record, OpRef requester) {
  const uint64_t id = next_id_++;
  WriteOp& w = ops_[id];
  w.key_id = key_id;
  w.record = std::move(record);
  w.requester = requester;
  const RingState& ring = ctx_.ring;
  if (w.record.version() == 0) {
    // Not versioned by a coordinator (a direct request from a client): version it here.
    wire::Record old;
    if (ctx_.store()->Get(key_id, w.record.key(), &old).ok()) ctx_.versions.Observe(old.version());
    w.record.set_version(ctx_.versions.Next(ctx_.now.wall_ms));
    w.record.set_writer(ring.self.id.ToBytes());
  }
  bool stored = false;
  wire::Record kept;
  // Watchers see this change once the replica set has answered (Answer publishes it).
  const ChangeLink link{ChangeLink::Kind::kLocal, 0, /*published=*/false};
  if (Status s = ctx_.records.StoreIfNewer(key_id, w.record, &stored, &kept, link); !s.ok()) {
    if (s.code() == Status::Code::kInvalidArgument) return Fail(id, wire::INVALID, s.message());
    return Fail(id, wire::UNAVAILABLE, "the owner could not store the key: " + s.message());
  }
  if (!stored && (kept.version() != w.record.version() || kept.writer() != w.record.writer())) {
    // A newer write is here already: this one is older and changes nothing.
    w.superseded_by = kept.version();
    return Settle(id);
  }
  ++ctx_.counters.writes_replicated;
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
  wire::Envelope replicate = msg::Replicate(ctx_.self(), {w.record});
  // A watched key: the replica keeps its changes too, linked by the version before this one.
  if (uint64_t prev = 0; ctx_.watches.LinkOf(w.record.key(), w.record.version(), &prev)) {
    replicate.mutable_replicate()->set_watched(true);
    replicate.mutable_replicate()->set_prev_version(prev);
  }
  ctx_.out.Send(target, std::move(replicate), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kWrite, kReplicate, index, id});
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
  if (it == ops_.end()) return;
  WriteOp& w = it->second;
  if (response != nullptr && response->has_replicate_resp()) {
    const auto& r = response->replicate_resp();
    if (r.code() == wire::OK) {
      TakeNewer(op.id, r);
    } else if (r.code() == wire::SHUTTING_DOWN) {
      if (Replace(op.id)) return;
    } else if (op.index < w.sent_to.size()) {
      w.failed = "the replica " + w.sent_to[op.index].addr + " could not store the key";
    }
  }
  // No answer: the replica is presumed dead; the write needs the live ones only.
  if (--w.pending == 0) Settle(op.id);
}

void WriteCoordinator::TakeNewer(uint64_t id, const wire::ReplicateResponse& answer) {
  WriteOp& w = ops_[id];
  if (answer.newer_version() <= w.record.version()) return;
  w.superseded_by = std::max(w.superseded_by, answer.newer_version());
  for (const auto& rec : answer.newer()) {
    if (rec.key() != w.record.key()) continue;
    Status s = ctx_.records.StoreIfNewer(w.key_id, rec);
    if (!s.ok()) ctx_.Log(LogLevel::kError, "cannot store a newer copy: " + s.message());
  }
}

void WriteCoordinator::Settle(uint64_t id) {
  WriteOp& w = ops_[id];
  if (!w.failed.empty() && w.superseded_by == 0) {
    return Fail(id, wire::UNAVAILABLE, w.failed);
  }
  wire::DataResponse resp;
  resp.set_code(wire::OK);
  resp.set_version(w.record.version());
  if (w.superseded_by > w.record.version()) resp.set_superseded_by(w.superseded_by);
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
  const WriteOp& w = ops_[id];
  ctx_.watches.Publish(w.record.key(), w.record.version());
  const OpRef requester = w.requester;
  ops_.erase(id);
  ctx_.completions.Post(requester, std::move(response));
}

}  // namespace chord
