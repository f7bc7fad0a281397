#include "node/core/replication/cleanup.h"

#include <algorithm>
#include <string>
#include <utility>

#include "node/core/refused_records.h"
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
  std::optional<Id> after;
  if (resume_ && resume_->from == from && resume_->to == to) after = resume_->after;
  // As large as the slowest holder's link takes (LinkPace, learnt by hand-overs and
  // anti-entropy).
  auto page = ctx_.records.ReadPage(
      KeyRange{from, to}, after, PageLimits{ctx_.pace().BatchBytesForAll(holders), SIZE_MAX},
      [this](const Id& id, const wire::Record&) { return !ctx_.ring.Owns(id); });
  if (!page.ok()) return Advance(std::nullopt);
  if (page->records.empty()) {
    resume_.reset();
    return Advance(owner_.id);
  }
  holders_ = std::move(holders);
  from_ = from;
  sent_ = StampsOf(*page);
  refused_.assign(sent_.size(), false);
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
  if (answered) ctx_.counters.keys_repaired += response->replicate_resp().stored();
  // A holder that refused records (outside its limits) does not hold them: our copies of those
  // stay. One that does not say which it refused keeps the whole page here.
  const bool named = answered && MarkRefused(response->replicate_resp(), &refused_);
  all_ok_ = all_ok_ && named;
  all_answered_ = all_answered_ && answered;
  if (--pending_ > 0) return;
  if (!all_answered_) return Advance(std::nullopt);  // this page again next round
  std::vector<RecordStamp> drop;
  size_t kept = 0;
  for (size_t i = 0; i < sent_.size(); ++i) {
    if (!all_ok_ || refused_[i]) {
      ++kept;
    } else if (!ctx_.ring.Owns(sent_[i].key_id)) {  // ours again meanwhile: keep it
      drop.push_back(sent_[i]);
    }
  }
  auto erased = ctx_.records.EraseIfUnchanged(drop, /*tombstones_only=*/false);
  const uint64_t n = erased.ok() ? *erased : 0;
  ctx_.counters.keys_dropped += n;
  std::string names;
  for (const NodeRef& h : holders_) names += (names.empty() ? "" : ", ") + h.addr;
  ctx_.Log(LogLevel::kInfo,
           "dropped " + std::to_string(n) +
               " keys no longer in this node's replica sets; held by " + names +
               (kept > 0 ? "; kept " + std::to_string(kept) +
                               " that a holder refused as outside its limits (check that every "
                               "node runs with the same limits and synchronized clocks)"
                         : ""));
  if (more_) {
    // The next page follows on after this one (a refused record would head it again), in
    // the next round.
    resume_ = Resume{from_, owner_.id, sent_.back().key_id};
    return Advance(std::nullopt);
  }
  resume_.reset();
  Advance(owner_.id);
}

}  // namespace chord
