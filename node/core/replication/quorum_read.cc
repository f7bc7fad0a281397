#include "node/core/replication/quorum_read.h"

#include <utility>

#include "node/core/data/write_conditions.h"
#include "node/core/range_digest.h"
#include "node/core/record_order.h"
#include "protocol/messages.h"

namespace chord {
namespace {

enum Step : uint8_t { kPull = 1 };

// `a` is a version at least as new as `b` (nullopt: no record at all, older than any).
bool AtLeastAsNew(const std::optional<wire::Record>& a, const std::optional<wire::Record>& b) {
  if (!b) return true;
  if (!a) return false;
  return !RecordNewer(*b, *a);
}

}  // namespace

void QuorumRead::Start(const std::string& key, std::optional<wire::Record> own, uint32_t needed,
                       std::string level, OpRef requester) {
  const uint64_t id = next_id_++;
  ReadOp& op = ops_[id];
  op.requester = requester;
  op.key = key;
  op.key_id = Id::Sha1(key);
  op.needed = needed;
  op.level = std::move(level);
  op.own = std::move(own);
  op.asked = policy_.Targets();
  op.pending = op.asked.size();
  if (op.pending == 0) return Finish(id);
  // The key's id alone: (id - 1, id], all of its (one or two) pieces wanted; the answer
  // holds whole records.
  const Id lo = op.key_id - Id::PowerOfTwo(0);
  const std::vector<uint32_t> pieces = AllPieces(lo, op.key_id);
  for (size_t i = 0; i < op.asked.size(); ++i) {
    ctx_.out.Send(
        op.asked[i],
        msg::SyncPull(lo, op.key_id, static_cast<uint32_t>(pieces.size()), pieces, 0, std::nullopt),
        ctx_.config.rpc_timeout_ms,
        OpRef{OpKind::kQuorumRead, kPull, static_cast<uint16_t>(i), id});
  }
}

void QuorumRead::OnRpc(OpRef ref, const wire::Envelope* response) {
  auto it = ops_.find(ref.id);
  if (it == ops_.end()) return;
  ReadOp& op = it->second;
  if (response != nullptr && response->has_sync_pull_resp() &&
      response->sync_pull_resp().code() == wire::OK && ref.index < op.asked.size()) {
    Answer a{op.asked[ref.index], std::nullopt};
    for (const auto& rec : response->sync_pull_resp().records()) {
      // Another key with the same id (never seen with SHA-1) or a record outside the limits
      // is not an answer about this key.
      if (rec.key() != op.key || !ctx_.records.RecordProblem(rec).empty()) continue;
      if (!a.record || RecordNewer(rec, *a.record)) a.record = rec;
    }
    op.answers.push_back(std::move(a));
  }
  if (--op.pending == 0) Finish(ref.id);
}

void QuorumRead::Finish(uint64_t id) {
  ReadOp op = std::move(ops_[id]);
  ops_.erase(id);
  const auto answered = static_cast<uint32_t>(op.answers.size() + 1);
  wire::DataResponse resp;
  resp.set_acks(answered);
  resp.set_required(op.needed);
  if (answered < op.needed) {
    resp.set_code(wire::UNAVAILABLE);
    resp.set_error("only " + std::to_string(answered) + " of " +
                   std::to_string(policy_.replicas()) + " replicas answered the read (" + op.level +
                   " needs " + std::to_string(op.needed) +
                   "); retry when the ring is whole, or read with a lower consistency");
    return ctx_.completions.Post(op.requester, std::move(resp));
  }
  std::optional<wire::Record> newest = op.own;
  for (const Answer& a : op.answers) {
    // A member whose clock is ahead may have expired the owner's record already: the owner
    // expires it by its own clock (its store would not take that tombstone either).
    if (op.own && a.record && ctx_.records.ExpiresLaterHere(*a.record, *op.own)) continue;
    if (!AtLeastAsNew(newest, a.record)) newest = a.record;
  }
  if (newest) {
    // A member held a newer version than the owner: the owner takes it (it must not serve
    // older), then every answering member behind it gets it.
    if (!AtLeastAsNew(op.own, newest)) {
      // Counted only when stored: a newer write may have reached this node meanwhile.
      bool stored = false;
      Status s = ctx_.records.StoreIfNewer(op.key_id, *newest, &stored);
      if (s.ok()) {
        if (stored) ++ctx_.counters.keys_repaired;
      } else {
        ctx_.Log(LogLevel::kError, "cannot store a newer copy: " + s.message());
      }
    }
    for (const Answer& a : op.answers) {
      if (AtLeastAsNew(a.record, newest)) continue;
      ctx_.out.Send(a.member, msg::ReplicateOne(ctx_.self(), *newest),
                    ctx_.config.transfer_timeout_ms, OpRef{OpKind::kRepair, 0, 0, 0});
    }
  }
  // An expired value reads as absent, as it does everywhere.
  if (newest && !newest->deleted() && RecordLive(*newest, ctx_.now.wall_ms)) {
    resp.set_code(wire::OK);
    resp.set_value(newest->value());
    resp.set_version(newest->version());
    if (newest->expires_unix_ms() != 0) resp.set_expires_unix_ms(newest->expires_unix_ms());
  } else {
    resp.set_code(wire::NOT_FOUND);
    resp.set_error("the key does not exist");
  }
  ctx_.completions.Post(op.requester, std::move(resp));
}

}  // namespace chord
