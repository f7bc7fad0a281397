#include "node/core/replication/replica_reads.h"

#include <algorithm>
#include <string>
#include <utility>

#include "node/core/record_order.h"
#include "protocol/messages.h"

namespace chord {
namespace {

enum Step : uint8_t { kRead = 1 };

// What a replica's answer to a read of its copy says of the record it holds (a NOT_FOUND with
// a version is a tombstone; a condition read's answer carries no value).
RecordRank RankOf(const wire::DataResponse& d) {
  const bool deleted = d.code() == wire::NOT_FOUND;
  return {d.version(), deleted && d.expired(), d.writer(), deleted, d.value()};
}

}  // namespace

void ReplicaReads::ReadFallback(const std::string& key, const std::vector<NodeRef>& holders,
                                OpRef requester) {
  if (holders.empty()) {
    wire::DataResponse none;
    none.set_code(wire::UNAVAILABLE);
    none.set_error("the key's owner did not answer and no replica is known");
    return ctx_.completions.Post(requester, std::move(none));
  }
  const uint64_t id = next_id_++;
  ops_[id].requester = requester;
  Ask(id, key, holders, ctx_.config.rpc_timeout_ms);
}

void ReplicaReads::ReadMiss(const std::string& key, wire::DataResponse not_found, OpRef requester) {
  // Half an RPC timeout: a coordinator waits one for this owner's answer, which must reach it
  // first (silence there would make it suspect a live owner). A replica slower than that
  // counts as silent, and the read is tried again.
  ReadReplicasForOwner(key, std::move(not_found), requester, /*every=*/false,
                       std::max<uint64_t>(1, ctx_.config.rpc_timeout_ms / 2));
}

void ReplicaReads::ReadForCondition(const std::string& key, OpRef requester) {
  wire::DataResponse none;
  none.set_code(wire::NOT_FOUND);
  // Three quarters of an RPC timeout, and answers count only within it (Finish). The first
  // replica, confirming this node as its predecessor, does not drop it for a missed check
  // during a whole RPC timeout from its answer (OwnerService::RefuseConditionRead), which came
  // after the question: so it does not take this node's arc over before this node has
  // decided, even if this node was paused just after the answers came. The last quarter is
  // the margin. An empty holder's quick "none" must not decide alone: a holder as slow as half
  // a timeout may hold the key. (Its coordinator allows a conditional write one RPC timeout
  // more than a plain one for this read.)
  ReadReplicasForOwner(key, std::move(none), requester, /*every=*/true,
                       std::max<uint64_t>(1, ctx_.config.rpc_timeout_ms * 3 / 4));
}

void ReplicaReads::ReadReplicasForOwner(const std::string& key, wire::DataResponse not_found,
                                        OpRef requester, bool every, uint64_t timeout_ms) {
  const std::vector<NodeRef> targets = policy_.Targets();
  if (targets.empty()) return ctx_.completions.Post(requester, std::move(not_found));
  const uint64_t id = next_id_++;
  ReadOp& op = ops_[id];
  op.requester = requester;
  op.owner_miss = true;
  op.every = every;
  // Our own NOT_FOUND is the answer only if a replica confirms it (or has nothing newer): a
  // new owner may lack keys it was not handed yet, so with no replica answering, "not found"
  // would be a guess (Finish answers UNAVAILABLE, and the coordinator tries again).
  op.any = false;
  op.best = std::move(not_found);
  Ask(id, key, targets, timeout_ms);
}

void ReplicaReads::Ask(uint64_t id, const std::string& key, const std::vector<NodeRef>& holders,
                       uint64_t timeout_ms) {
  ReadOp& op = ops_[id];
  op.pending = holders.size();
  op.asked = holders.size();
  op.sent_ms = ctx_.now.mono_ms;
  op.timeout_ms = timeout_ms;
  if (op.every) {
    for (const NodeRef& h : holders) op.holders.push_back(h.addr);
  }
  for (size_t i = 0; i < holders.size(); ++i) {
    // A condition read names this node to its first replica, which must confirm it as its
    // predecessor (OwnerService::RefuseConditionRead).
    const NodeRef* asker = op.every && i == 0 ? &ctx_.self() : nullptr;
    ctx_.out.Send(holders[i], msg::ReplicaGet(key, /*for_condition=*/op.every, asker), timeout_ms,
                  OpRef{OpKind::kReplicaRead, kRead, static_cast<uint16_t>(i), id});
  }
}

void ReplicaReads::OnRpc(OpRef ref, const wire::Envelope* response) {
  if (ref.kind == OpKind::kRepair) {
    if (response != nullptr && response->has_replicate_resp() &&
        response->replicate_resp().code() == wire::OK) {
      ctx_.counters.keys_repaired += response->replicate_resp().stored();
    }
    return;
  }
  auto it = ops_.find(ref.id);
  if (it == ops_.end()) return;
  ReadOp& op = it->second;
  if (response != nullptr && response->has_data_resp()) {
    const auto& d = response->data_resp();
    bool copy_or_none = d.code() == wire::OK || d.code() == wire::NOT_FOUND;
    if (op.every && copy_or_none && !ctx_.records.VersionPlausible(d.version())) {
      // No store takes a version that far ahead of its clock, and the owner versions a
      // conditional write above what its replicas hold: taken, this answer would push its
      // version clock past what every store accepts. Not an answer to decide on. (A plain
      // read's answer goes to its client as it is and moves no clock.)
      copy_or_none = false;
      if (ref.index < op.holders.size()) {
        op.implausible = op.holders[ref.index] + " answered a version " +
                         std::to_string(VersionWallMs(d.version()) - ctx_.now.wall_ms) +
                         " ms ahead of this node's clock, more than the " +
                         std::to_string(ctx_.config.max_clock_skew_ms) + " ms allowed";
      }
    }
    if (copy_or_none) ++op.answered;
    if (op.every && d.code() == wire::NOT_OWNER && ref.index < op.holders.size()) {
      // It owns the key itself, or does not take this node as its predecessor
      // (OwnerService::RefuseConditionRead); what it said, cut short.
      op.refused = op.holders[ref.index] + " answered \"" + d.error().substr(0, 160) + "\"";
    }
    // The newest record wins, in the order the stores keep (RecordNewer: at one version an
    // expiry loses to any other record, then the higher writer wins).
    if (copy_or_none && (!op.any || RankNewer(RankOf(d), RankOf(op.best)))) {
      op.best = d;
      op.best.clear_owner();  // a node's own answer names nobody (an older node named itself)
      op.any = true;
    }
  }
  if (--op.pending == 0) Finish(ref.id);
}

void ReplicaReads::Finish(uint64_t id) {
  ReadOp op = std::move(ops_[id]);
  ops_.erase(id);
  std::string unavailable;  // why the answer is UNAVAILABLE, if it is
  if (op.every && !op.refused.empty()) {
    // Another node may own the key too (this node's successor took its arc over while it was
    // paused or cut off and has not taken it back, or a node joined between them): deciding
    // here could repeat a decision made there. The ring settles within a stabilization round.
    unavailable = "the owner " + ctx_.self().addr +
                  " checks a condition against every replica and its replica " + op.refused +
                  " (the ring is settling after a pause, a cut or a join); retry";
  } else if (op.every && !op.implausible.empty()) {
    unavailable = "the owner " + ctx_.self().addr +
                  " checks a condition against every replica and its replica " + op.implausible +
                  "; compare the nodes' clocks, then retry";
  } else if (op.any && !op.owner_miss && op.best.code() == wire::NOT_FOUND &&
             op.best.version() == 0) {
    // A fall-back read asks the holders named by a lookup that reached a dead or departed
    // owner: they may be stale, or new members that were not handed the key yet. That none of
    // them holds a record (not even a tombstone) proves nothing: the coordinator tries again,
    // and once the ring has noticed, the new owner answers (asking the replicas it lacks).
    unavailable = "the key's owner did not answer and the replicas asked hold no record of it";
  } else if (!op.any) {
    if (op.every) {
      unavailable = "the owner " + ctx_.self().addr +
                    " checks a condition against every replica and none of its replicas "
                    "answered; retry";
    } else if (op.owner_miss) {
      unavailable = "the owner " + ctx_.self().addr +
                    " holds no copy of the key and none of its replicas answered; retry";
    } else {
      unavailable = "neither the key's owner nor its replicas answered";
    }
  } else if (op.every && op.answered < op.asked) {
    // The silent one may hold the newest version.
    unavailable = "the owner " + ctx_.self().addr +
                  " checks a condition against every replica and only " +
                  std::to_string(op.answered) + " of its " + std::to_string(op.asked) +
                  " replicas answered (the silent one may hold the newest version); retry";
  } else if (op.every && ctx_.now.mono_ms - op.sent_ms > op.timeout_ms) {
    // Answers held back (this node was paused, or its loop stalled): the first replica keeps
    // this node as its predecessor for an RPC timeout from its answer only, and may have taken
    // the arc over since.
    ++ctx_.counters.condition_reads_late;
    unavailable = "the owner " + ctx_.self().addr +
                  " checks a condition against every replica and their answers came too late to "
                  "decide on; retry";
  }
  if (!op.every) {
    op.best.clear_writer();  // only a condition read's requester uses these two
    op.best.clear_expired();
    // Answered as the owner answers a get: the copies that answered, one required, and no
    // version for a key that is absent (a replica tells its tombstone's).
    op.best.set_acks(op.answered);
    op.best.set_required(1);
    if (op.best.code() == wire::NOT_FOUND) op.best.clear_version();
  }
  if (!unavailable.empty()) {
    op.best.Clear();
    op.best.set_code(wire::UNAVAILABLE);
    op.best.set_error(std::move(unavailable));
  }
  ctx_.completions.Post(op.requester, std::move(op.best));
}

}  // namespace chord
