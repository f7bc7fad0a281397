#include "node/core/replication/write_coordinator.h"

#include <algorithm>
#include <utility>

#include "node/core/record_order.h"
#include "node/core/replication/consistency.h"
#include "node/core/replication/hint_store.h"
#include "protocol/messages.h"

namespace chord {
namespace {

enum Step : uint8_t { kReplicate = 1 };

}  // namespace

bool WriteCoordinator::Start(const Id& key_id, wire::Record&& record, OpRef requester,
                             wire::Consistency level, uint32_t required,
                             wire::DataResponse* answer) {
  // Kept here until it has to wait for a member: a write settled within this call (a ring
  // without copies, a refusal, an outranked write) never enters ops_. Its answer is built in
  // the caller's `answer`, not moved through temporaries.
  WriteOp w;
  w.key_id = key_id;
  w.record = std::move(record);
  w.requester = requester;
  const auto settled_now = [this, &w] {
    Close(w);
    return true;
  };
  const auto failed_now = [this, &settled_now, answer](wire::Code code, std::string why) {
    Failed(code, std::move(why), answer);
    return settled_now();
  };
  const RingState& ring = ctx_.ring;
  const std::vector<NodeRef>& targets = policy_.Targets();
  const Needed needed = WritesNeeded(level, required, policy_.replicas(), targets.size() + 1);
  if (!needed.problem.empty()) return failed_now(wire::INVALID, needed.problem);
  w.needed = needed.count;
  // Hints count toward ONE and QUORUM only where they can be delivered (HintDeliveryWindowMs).
  w.hints_count = needed.hints_count && HintDeliveryWindowMs(ctx_.config.tombstone_grace_ms,
                                                             ctx_.config.max_clock_skew_ms) > 0;
  w.level = level;
  w.required = required;
  bool stored = false;
  // Watchers see this change once the replica set has answered (Close publishes it).
  const ChangeLink link{ChangeLink::Kind::kLocal, 0, /*published=*/false};
  Status s;
  wire::Record kept;  // the record StoreIfNewer kept instead of this one
  if (w.record.version() == 0) {
    // Not versioned by a coordinator (a direct request from a client): versioned here, above
    // the record it replaces, in the same read of the store.
    s = ctx_.records.StoreStamped(key_id, &w.record, ring.self.id, link);
    stored = s.ok();
  } else {
    // Another coordinator may have stamped a write of this key with the same version (its
    // clock had not seen this one's): the later write is stamped again rather than replacing it.
    s = ctx_.records.StoreIfNewer(key_id, w.record, &stored, &kept, link, /*new_version=*/true);
  }
  if (!s.ok()) {
    if (s.code() == Status::Code::kInvalidArgument) return failed_now(wire::INVALID, s.message());
    return failed_now(wire::UNAVAILABLE, "the owner could not store the key: " + s.message());
  }
  w.logged = stored;
  if (!stored && (kept.version() != w.record.version() || kept.writer() != w.record.writer())) {
    // A newer write is here already, or another write stamped with the same version: this
    // one changes nothing until the coordinator stamps it again.
    w.superseded_by = kept.version();
    w.outranked = true;
    Settled(w, answer);
    return settled_now();
  }
  ++ctx_.counters.writes_replicated;
  w.acks = 1;  // the owner's own store
  if (targets.empty()) {
    Settled(w, answer);
    return settled_now();
  }
  w.pending = targets.size();
  w.sent_to.reserve(targets.size());
  w.hint_for.reserve(targets.size());
  const uint64_t id = next_id_++;
  ops_.emplace(id, std::move(w));
  SendToAll(id, targets);
  return false;
}

bool WriteCoordinator::Asked(const WriteOp& w, std::string_view process) const {
  if (process == ctx_.ring.self.process()) return true;
  return std::any_of(w.sent_to.begin(), w.sent_to.end(),
                     [process](const NodeRef& n) { return n.process() == process; });
}

wire::Envelope WriteCoordinator::ReplicateRequest(const WriteOp& w,
                                                  const std::optional<NodeRef>& hint_for) const {
  wire::Envelope request = msg::ReplicateOne(ctx_.self(), w.record);
  if (hint_for) {
    hint_for->ToWire(request.mutable_replicate()->mutable_hint_for());
  } else if (uint64_t prev = 0; ctx_.watches.LinkOf(w.record.key(), w.record.version(), &prev)) {
    // A watched key: the replica keeps its changes too, linked by the version before this one.
    request.mutable_replicate()->set_watched(true);
    request.mutable_replicate()->set_prev_version(prev);
  }
  return request;
}

void WriteCoordinator::SendTo(uint64_t id, const NodeRef& target,
                              const std::optional<NodeRef>& hint_for) {
  WriteOp& w = ops_[id];
  const auto index = static_cast<uint16_t>(w.sent_to.size());
  w.sent_to.push_back(target);
  w.hint_for.push_back(hint_for);
  ctx_.out.Send(target, ReplicateRequest(w, hint_for), ctx_.config.rpc_timeout_ms,
                OpRef{OpKind::kWrite, kReplicate, index, id});
}

void WriteCoordinator::SendToAll(uint64_t id, const std::vector<NodeRef>& targets) {
  WriteOp& w = ops_[id];
  const auto first = static_cast<uint16_t>(w.sent_to.size());
  w.sent_to.insert(w.sent_to.end(), targets.begin(), targets.end());
  w.hint_for.resize(w.hint_for.size() + targets.size());
  // One message for all of them: the record is copied into it once.
  ctx_.out.SendToEach(targets, ReplicateRequest(w, std::nullopt), ctx_.config.rpc_timeout_ms,
                      OpRef{OpKind::kWrite, kReplicate, first, id});
}

bool WriteCoordinator::SendHint(uint64_t id, const NodeRef& member) {
  WriteOp& w = ops_[id];
  for (const NodeRef& n : ctx_.ring.successors) {
    if (Asked(w, n.process())) continue;  // the silent member too: it is in sent_to
    SendTo(id, n, member);  // its answer settles the member's place; pending unchanged
    return true;
  }
  return false;
}

bool WriteCoordinator::Replace(uint64_t id) {
  WriteOp& w = ops_[id];
  for (const NodeRef& n : ctx_.ring.successors) {
    if (Asked(w, n.process())) continue;
    SendTo(id, n);  // its answer settles this member's place; pending unchanged
    return true;
  }
  return false;
}

void WriteCoordinator::OnRpc(OpRef op, const wire::Envelope* response) {
  auto it = ops_.find(op.id);
  if (it == ops_.end()) return;
  WriteOp& w = it->second;
  const bool known = op.index < w.sent_to.size();
  const bool hint = known && w.hint_for[op.index].has_value();
  if (response != nullptr && response->has_replicate_resp()) {
    const auto& r = response->replicate_resp();
    const auto who = [&] {
      return (hint ? "the hint holder " : "the replica ") + w.sent_to[op.index].addr;
    };
    if (r.code() == wire::OK && r.refused() > 0) {
      // Answered, but not kept: no copy there to count.
      if (known) {
        w.failed = who() +
                   " refused the record as outside its limits (its clock behind this node's "
                   "by more than the skew it allows, or lower size limits)";
      }
    } else if (r.code() == wire::OK) {
      if (hint) {
        ++w.hinted;
      } else {
        ++w.acks;
        TakeNewer(op.id, r);
        if (r.chain_broken()) w.chain_broken = true;
      }
    } else if (r.code() == wire::SHUTTING_DOWN && !hint) {
      if (Replace(op.id)) return;
    } else if (known) {
      w.failed = who() + " could not store the key";
    }
  } else if (known && !hint && response == nullptr) {
    // No answer: the member is presumed dead; its copy goes to the next live process as a
    // hint for it (hinted hand-off).
    if (SendHint(op.id, w.sent_to[op.index])) return;
  }
  if (--w.pending == 0) {
    wire::DataResponse resp;
    Settled(w, &resp);
    Answer(op.id, std::move(resp));
  }
}

void WriteCoordinator::TakeNewer(uint64_t id, const wire::ReplicateResponse& answer) {
  WriteOp& w = ops_[id];
  // What the replica kept instead decides, not its version alone: a record of the same
  // version from a writer that ranks higher outranks this write as a newer version does.
  for (const auto& rec : answer.newer()) {
    if (rec.key() != w.record.key() || !RecordNewer(rec, w.record)) continue;
    w.outranked = true;
    w.superseded_by = std::max(w.superseded_by, rec.version());
    Status s = ctx_.records.StoreIfNewer(w.key_id, rec);
    if (!s.ok()) ctx_.Log(LogLevel::kError, "cannot store a newer copy: " + s.message());
  }
}

void WriteCoordinator::Settled(const WriteOp& w, wire::DataResponse* resp) {
  const uint32_t counted = w.acks + (w.hints_count ? w.hinted : 0);
  if (counted < w.needed && w.superseded_by == 0) {
    ++ctx_.counters.writes_failed;
    std::string why = "only " + std::to_string(counted) + " of " +
                      std::to_string(policy_.replicas()) + " replicas stored the write (" +
                      LevelName(w.level, w.required, /*write=*/true) + " needs " +
                      std::to_string(w.needed) + ")";
    if (!w.hints_count && w.hinted > 0) {
      why += "; " + std::to_string(w.hinted) + " more kept it as hints, which do not count here";
    }
    if (!w.failed.empty()) why += "; " + w.failed;
    why += "; it stays on those " + std::to_string(counted) +
           " and reaches the others by anti-entropy; retry when the ring is whole";
    resp->set_code(wire::UNAVAILABLE);
    resp->set_error(std::move(why));
    resp->set_acks(counted);
    resp->set_required(w.needed);
    return;
  }
  resp->set_code(wire::OK);
  resp->set_acks(counted);
  resp->set_required(w.needed);
  resp->set_version(w.record.version());
  if (w.record.expires_unix_ms() != 0) resp->set_expires_unix_ms(w.record.expires_unix_ms());
  if (w.outranked) resp->set_superseded_by(w.superseded_by);
}

void WriteCoordinator::Failed(wire::Code code, std::string why, wire::DataResponse* resp) {
  if (code == wire::UNAVAILABLE) ++ctx_.counters.writes_failed;
  resp->set_code(code);
  resp->set_error(std::move(why));
}

void WriteCoordinator::Close(const WriteOp& w) {
  if (w.outranked) {
    // Not the key's state at any time: its coordinator stamps the write again. Only a change
    // this write logged goes: one it did not store may share its version with another's.
    if (w.logged) ctx_.watches.Retract(w.record.key(), w.record.version());
    return;
  }
  if (w.chain_broken) ctx_.watches.Unlink(w.record.key(), w.record.version());
  ctx_.watches.Publish(w.record.key(), w.record.version());
}

void WriteCoordinator::Answer(uint64_t id, wire::DataResponse&& response) {
  auto it = ops_.find(id);
  if (it == ops_.end()) return;
  Close(it->second);
  const OpRef requester = it->second.requester;
  ops_.erase(it);
  ctx_.completions.Post(requester, std::move(response));
}

}  // namespace chord
