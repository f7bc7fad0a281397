#include "node/core/replication/cleanup.h"

#include <algorithm>
#include <string>
#include <utility>

#include "protocol/messages.h"

namespace chord {

void Cleanup::Run(int ranges) {
  if (running_) return;
  ranges_left_ = ranges;
  Next();
}

void Cleanup::Next() {
  running_ = false;
  const RingState& ring = ctx_.ring;
  if (ranges_left_ <= 0 || !ring.joined() || ring.awaiting_transfer || ring.successors.empty() ||
      !policy_.replicated()) {
    return;
  }
  const auto start = ring.RangeStart();
  if (!start) return;
  // Walk the records outside our range, (self, start], one owner's range at a time.
  Id cursor = cursor_.value_or(ring.self.id);
  if (!(cursor == ring.self.id) && !Id::InOpen(cursor, ring.self.id, *start)) cursor = ring.self.id;
  std::optional<Id> first;
  Status s = ctx_.store()->Scan(cursor, *start, [&first](const Id& id, const wire::Record&) {
    first = id;
    return false;
  });
  if (!s.ok() || !first || cursor == *start) {
    cursor_.reset();
    return;
  }
  running_ = true;
  ++walk_;
  key_id_ = *first;
  lookups_.Start(key_id_, /*verify_owner=*/false, Ref(kFindOwner));
}

void Cleanup::Advance(const std::optional<Id>& cursor) {
  running_ = false;
  if (!cursor) return;  // stop for this round
  cursor_ = cursor;
  --ranges_left_;
  Next();
}

void Cleanup::OnLookupDone(OpRef op, const LookupOutcome& outcome) {
  if (!running_ || op.id != walk_) return;
  if (!outcome.result.ok()) return Advance(std::nullopt);
  owner_ = outcome.result->owner;
  if (owner_.SameProcess(ctx_.self())) return Advance(owner_.id);  // a sibling's range
  ctx_.out.Send(owner_, msg::ReplicaSet(), ctx_.config.rpc_timeout_ms, Ref(kReplicaSet));
}

void Cleanup::OnRpc(OpRef op, const wire::Envelope* response) {
  if (!running_ || op.id != walk_) return;
  if (op.step == kReplicaSet) return OnReplicaSet(response);
  if (op.step == kDrop) return OnDropped(response);
}

void Cleanup::OnReplicaSet(const wire::Envelope* response) {
  if (response == nullptr || !response->has_replica_set_resp()) return Advance(std::nullopt);
  const auto& rs = response->replica_set_resp();
  auto pred = rs.has_predecessor() ? NodeRef::FromWire(rs.predecessor()) : std::nullopt;
  if (!rs.joined() || !pred || !Id::InHalfOpen(key_id_, pred->id, owner_.id)) {
    return Advance(std::nullopt);  // its view is not settled; try next round
  }
  std::vector<NodeRef> named;
  for (const auto& info : rs.replicas()) {
    if (auto n = NodeRef::FromWire(info)) named.push_back(std::move(*n));
  }
  const bool ours = std::any_of(named.begin(), named.end(),
                                [this](const NodeRef& h) { return h.SameProcess(ctx_.self()); });
  // Holders are counted by process: a set naming one process twice (or a sibling vnode of
  // the owner) holds fewer copies than it lists.
  std::vector<NodeRef> holders{owner_};
  for (NodeRef& n : RingState::DistinctProcesses(named, owner_, named.size())) {
    holders.push_back(std::move(n));
  }
  if (ours || static_cast<int>(holders.size()) < policy_.replicas()) {
    // Still ours to hold (or the ring is too small to leave anyone out).
    return Advance(owner_.id);
  }
  Drop(pred->id, owner_.id, std::move(holders));
}

void Cleanup::Drop(const Id& from, const Id& to, std::vector<NodeRef> holders) {
  // Our copies of (from, to] go to every holder first; only once all of them confirm are
  // they erased here.
  auto page = ctx_.records.ReadPage(
      KeyRange{from, to}, std::nullopt, PageLimits{ctx_.config.transfer_batch_bytes, SIZE_MAX},
      [this](const Id& id, const wire::Record&) { return !ctx_.ring.Owns(id); });
  if (!page.ok()) return Advance(std::nullopt);
  if (page->records.empty()) return Advance(owner_.id);
  holders_ = std::move(holders);
  sent_ = StampsOf(*page);
  more_ = page->more;
  pending_ = holders_.size();
  all_ok_ = true;
  all_answered_ = true;
  std::vector<wire::Record> records;
  for (auto& [id, rec] : page->records) records.push_back(std::move(rec));
  for (size_t i = 0; i < holders_.size(); ++i) {
    ctx_.out.Send(holders_[i], msg::Replicate(ctx_.self(), records),
                  ctx_.config.transfer_timeout_ms, Ref(kDrop));
  }
}

void Cleanup::OnDropped(const wire::Envelope* response) {
  const bool answered = response != nullptr && response->has_replicate_resp() &&
                        response->replicate_resp().code() == wire::OK;
  // A holder that refused a record (outside its limits) does not hold it: our copies stay.
  const bool refused = answered && response->replicate_resp().refused() > 0;
  if (answered) ctx_.counters.keys_repaired += response->replicate_resp().stored();
  all_ok_ = all_ok_ && answered && !refused;
  all_answered_ = all_answered_ && answered;
  if (--pending_ > 0) return;
  // A refusal would come again next round: the walk goes on past this range, keeping it.
  if (!all_ok_) return Advance(all_answered_ ? std::optional<Id>(owner_.id) : std::nullopt);
  std::vector<RecordStamp> drop;
  for (const RecordStamp& r : sent_) {
    if (!ctx_.ring.Owns(r.key_id)) drop.push_back(r);  // ours again meanwhile: keep it
  }
  auto erased = ctx_.records.EraseIfUnchanged(drop, /*tombstones_only=*/false);
  const uint64_t n = erased.ok() ? *erased : 0;
  ctx_.counters.keys_dropped += n;
  std::string names;
  for (const NodeRef& h : holders_) names += (names.empty() ? "" : ", ") + h.addr;
  ctx_.Log(LogLevel::kInfo, "dropped " + std::to_string(n) +
                                " keys no longer in this node's replica sets; held by " + names);
  Advance(more_ ? std::nullopt : std::optional<Id>(owner_.id));
}

}  // namespace chord
