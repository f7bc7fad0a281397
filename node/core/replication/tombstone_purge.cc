#include "node/core/replication/tombstone_purge.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "node/core/range_digest.h"
#include "node/core/record_order.h"
#include "protocol/limits.h"
#include "protocol/messages.h"

namespace chord {
namespace {

// Records one round looks at for tombstones past their grace, at most.
constexpr size_t kMaxPurgeVisits = 20'000;
// Members remembered missing at most (each from this node's own group, so a handful unless
// the ring churns hard).
constexpr size_t kMaxMissing = 64;
// Missing members probed per maintenance round, at most.
constexpr int kMaxProbesPerRound = 4;

std::vector<RecordStamp> Stamps(const std::vector<wire::Record>& records) {
  std::vector<RecordStamp> out;
  for (const auto& r : records) {
    out.push_back(RecordStamp{Id::Sha1(r.key()), r.key(), r.version(), r.writer()});
  }
  return out;
}

}  // namespace

void TombstonePurge::NoteGroup(const std::vector<NodeRef>& replicas, const RingState& ring) {
  const uint64_t now = ctx_.now.mono_ms;
  const auto in_group = [&replicas](std::string_view process) {
    return std::any_of(replicas.begin(), replicas.end(),
                       [process](const NodeRef& r) { return r.process() == process; });
  };
  // Every replica that left the group, whether it is still listed or not: down, it missed
  // what was deleted meanwhile; pushed out alive by a join, it holds copies until its clean-up
  // walk hands them on.
  for (const NodeRef& r : replicas_) {
    if (!in_group(r.process())) AddMissing(r, now, "left the replica group");
  }
  // A predecessor replaced by one before it: this node took its range over.
  if (predecessor_ && ring.predecessor && !predecessor_->SameProcess(*ring.predecessor) &&
      !Id::InHalfOpen(ring.predecessor->id, predecessor_->id, ring.self.id) &&
      !in_group(predecessor_->process())) {
    AddMissing(*predecessor_, now, "left the ring before this node (its range is ours)");
  }
  replicas_ = replicas;
  if (ring.predecessor) predecessor_ = ring.predecessor;
  // Back in the group: no longer missing (the next clean round compares with it). Back as the
  // predecessor is not enough: no round here compares with it, and a probe finds it empty
  // once it holds nothing of this range.
  for (auto it = missing_.begin(); it != missing_.end();) {
    if (in_group(it->first)) {
      if (it->second.probe != 0) probes_.erase(it->second.probe);
      it = missing_.erase(it);
      ++returns_;
    } else {
      ++it;
    }
  }
  ProbeMissing(ring, now);
}

void TombstonePurge::AddMissing(const NodeRef& member, uint64_t since, std::string_view why) {
  const uint64_t now = ctx_.now.mono_ms;
  const std::string process(member.process());
  // Another position of this process shares its store: it is never missing from it.
  if (member.SameProcess(ctx_.self())) return;
  if (auto it = missing_.find(process); it != missing_.end()) {
    it->second.since_ms = std::min(it->second.since_ms, since);
    return;
  }
  if (missing_.size() >= kMaxMissing) {
    // Forgetting one would let a purge erase what it may bring back: purge nothing instead.
    overflow_until_ms_ = now + ForgetAfterMs();
    return;
  }
  // The first probe waits for what was sent to it while it was in the group (a write, an
  // anti-entropy push, another walk's page) to have arrived or timed out.
  const uint64_t first_probe =
      now + std::max(ctx_.config.transfer_timeout_ms, ctx_.config.anti_entropy_ms);
  missing_.emplace(process, MissingEntry{member, since, first_probe, 0});
  ctx_.Log(LogLevel::kInfo, process + " " + std::string(why) +
                                ": no tombstone is purged until it holds nothing of this "
                                "range or is back");
}

void TombstonePurge::ProbeMissing(const RingState& ring, uint64_t now) {
  const auto start = ring.RangeStart();
  if (!start || ring.awaiting_transfer) return;  // our range is unknown for now
  const KeyRange range{*start, ring.self.id};
  std::vector<uint64_t> empty;  // every piece's digest when it holds nothing
  int sent = 0;
  for (auto& [process, m] : missing_) {
    if (sent == kMaxProbesPerRound) break;
    if (m.probe != 0 || now < m.next_probe_ms) continue;
    if (empty.empty()) empty.assign(LedgerStore::PieceCount(range.from, range.to), 0);
    m.probe = next_id_++;
    m.next_probe_ms = now + std::max(ctx_.config.anti_entropy_ms, ctx_.config.rpc_timeout_ms);
    probes_.emplace(m.probe, Probe{process, range});
    ctx_.out.Send(m.member, msg::SyncDigest(ctx_.self(), range.from, range.to, empty),
                  ctx_.config.rpc_timeout_ms, OpRef{OpKind::kPurge, kProbeStep, 0, m.probe});
    ++sent;
  }
}

void TombstonePurge::OnProbe(uint64_t id, const wire::Envelope* response) {
  auto p = probes_.find(id);
  if (p == probes_.end()) return;
  const Probe probe = std::move(p->second);
  probes_.erase(p);
  auto m = missing_.find(probe.process);
  if (m == missing_.end() || m->second.probe != id) return;
  m->second.probe = 0;
  // It holds nothing of our range (no piece differs from empty), and our range is still the
  // one it was asked about (a range grown since may hold what it was not asked for).
  if (response == nullptr || !response->has_sync_digest_resp() ||
      response->sync_digest_resp().code() != wire::OK) {
    return;
  }
  if (response->sync_digest_resp().differing_size() != 0) {
    // Alive and still holding copies of our range: not forgotten while it answers so.
    m->second.since_ms = ctx_.now.mono_ms;
    return;
  }
  const auto start = ctx_.ring.RangeStart();
  if (!start || *start != probe.range.from || ctx_.ring.self.id != probe.range.to) return;
  // A round under way that started with it may still push it copies.
  if (std::any_of(comparing_.begin(), comparing_.end(),
                  [&probe](const NodeRef& t) { return t.process() == probe.process; })) {
    return;
  }
  ctx_.Log(LogLevel::kInfo, probe.process + " holds nothing of this range: no longer missing");
  missing_.erase(m);
}

MissingList TombstonePurge::Missing() const {
  const uint64_t now = ctx_.now.mono_ms;
  MissingList list;
  std::vector<MissingMember>& out = list.members;
  out.reserve(missing_.size());
  for (const auto& entry : missing_) {
    out.push_back(MissingMember{entry.second.member, now - std::min(now, entry.second.since_ms)});
  }
  if (now < overflow_until_ms_) list.overflow_ms_left = overflow_until_ms_ - now;
  // A replica of the last group taken off the successor list since is missing too, though
  // NoteGroup has not run since (a join within that round is handed it all the same).
  for (const NodeRef& r : replicas_) {
    const bool listed = std::any_of(ctx_.ring.successors.begin(), ctx_.ring.successors.end(),
                                    [&r](const NodeRef& s) { return s.SameProcess(r); });
    if (!listed && !missing_.contains(std::string(r.process()))) out.push_back({r, 0});
  }
  return list;
}

void TombstonePurge::NoteHandedOver(const MissingList& list) {
  const uint64_t now = ctx_.now.mono_ms;
  const uint64_t forget = ForgetAfterMs();
  for (const MissingMember& m : list.members) {
    // Missing there for longer than we remember anyone: nothing to note.
    if (m.missing_for_ms >= forget) continue;
    AddMissing(m.member, now - std::min(now, m.missing_for_ms),
               "is missing where a hand-over came from");
  }
  if (list.overflow_ms_left > 0) {
    overflow_until_ms_ =
        std::max(overflow_until_ms_, now + std::min(list.overflow_ms_left, forget));
  }
}

uint64_t TombstonePurge::ForgetAfterMs() const {
  return std::max(kForgetMissingMs, 10 * ctx_.config.tombstone_grace_ms);
}

bool TombstonePurge::MembersMissing() {
  const uint64_t now = ctx_.now.mono_ms;
  for (auto it = missing_.begin(); it != missing_.end();) {
    if (now >= it->second.since_ms + ForgetAfterMs()) {
      if (it->second.probe != 0) probes_.erase(it->second.probe);
      it = missing_.erase(it);
    } else {
      ++it;
    }
  }
  return !missing_.empty() || now < overflow_until_ms_;
}

void TombstonePurge::Start(const KeyRange& range, const std::vector<NodeRef>& replicas) {
  if (MembersMissing()) return;
  const uint64_t now = ctx_.now.wall_ms;
  const uint64_t grace = ctx_.config.tombstone_grace_ms;
  // Only the pieces whose arcs hold tombstones (by the ledger) are read, at most
  // kMaxPurgeVisits records a round, continuing where the last round stopped.
  LedgerStore* store = ctx_.store();
  std::vector<uint32_t> wanted;
  const uint32_t pieces = LedgerStore::PieceCount(range.from, range.to);
  for (uint32_t i = 0; i < pieces; ++i) {
    const uint32_t arc = LedgerStore::Piece(range.from, range.to, i).arc;
    if (store->ArcTally(arc).tombstones > 0) wanted.push_back(i);
  }
  if (after_ && !Id::InHalfOpen(*after_, range.from, range.to)) after_.reset();
  auto read = ReadPieces(store, range.from, range.to, std::move(wanted), after_,
                         // Within what the slowest replica's link takes (LinkPace).
                         PageLimits{ctx_.pace().BatchBytesForAll(replicas), SIZE_MAX},
                         kMaxPurgeVisits, [now, grace](const Id&, const wire::Record& rec) {
                           // An expiry tombstone's grace counts from the expiry (a tombstone
                           // keeps that time).
                           const uint64_t since =
                               std::max(VersionWallMs(rec.version()), rec.expires_unix_ms());
                           return rec.deleted() && since + grace <= now;
                         });
  if (!read.ok()) return;
  after_ = read->page.more ? read->last : std::nullopt;
  if (read->page.records.empty()) return;
  std::vector<wire::Record> tombstones;
  for (auto& [id, rec] : read.value().page.records) tombstones.push_back(std::move(rec));
  if (replicas.empty()) return EraseHere(tombstones);
  // The replicas first: if one misses the purge, the next digest comparison sends it the
  // tombstone again (never the deleted value), and the purge is retried.
  const uint64_t id = next_id_++;
  PurgeOp& op = ops_[id];
  op.pending = replicas.size();
  for (const NodeRef& t : replicas) {
    ctx_.out.Send(t, msg::Purge(tombstones), ctx_.config.rpc_timeout_ms,
                  OpRef{OpKind::kPurge, kPurgeStep, 0, id});
  }
  op.tombstones = std::move(tombstones);
}

void TombstonePurge::OnRpc(OpRef ref, const wire::Envelope* response) {
  if (ref.step == kProbeStep) return OnProbe(ref.id, response);
  auto it = ops_.find(ref.id);
  if (it == ops_.end()) return;
  PurgeOp& op = it->second;
  op.all_ok = op.all_ok && response != nullptr && response->has_purge_resp() &&
              response->purge_resp().code() == wire::OK;
  if (--op.pending > 0) return;
  PurgeOp done = std::move(op);
  ops_.erase(it);
  if (done.all_ok) EraseHere(done.tombstones);
}

void TombstonePurge::EraseHere(const std::vector<wire::Record>& tombstones) {
  auto erased = ctx_.records.EraseIfUnchanged(Stamps(tombstones), /*tombstones_only=*/true);
  const uint64_t n = erased.ok() ? *erased : 0;
  ctx_.counters.tombstones_purged += n;
  if (n > 0) ctx_.Log(LogLevel::kInfo, "purged " + std::to_string(n) + " expired tombstones");
}

void TombstonePurge::HandlePurge(ReplyToken from, const wire::Envelope& request) {
  wire::Envelope reply;
  auto* r = reply.mutable_purge_resp();
  r->set_code(wire::OK);
  std::vector<RecordStamp> stamps;
  for (const auto& rec : request.purge().records()) {
    if (!KeyProblem(rec.key()).empty()) continue;
    stamps.push_back(RecordStamp{Id::Sha1(rec.key()), rec.key(), rec.version(), rec.writer()});
  }
  auto erased = ctx_.records.EraseIfUnchanged(stamps, /*tombstones_only=*/true);
  if (!erased.ok()) {
    r->set_code(wire::UNAVAILABLE);
  } else {
    ctx_.counters.tombstones_purged += *erased;
  }
  ctx_.out.Reply(from, request.request_id(), std::move(reply));
}

}  // namespace chord
