#include "node/core/replication/tombstone_purge.h"

#include <algorithm>
#include <string>
#include <utility>

#include "node/core/range_digest.h"
#include "node/core/record_order.h"
#include "protocol/limits.h"
#include "protocol/messages.h"

namespace chord {
namespace {

// Records one round looks at for tombstones past their grace, at most.
constexpr size_t kMaxPurgeVisits = 20'000;

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
  auto alive = [&](const std::string& process) {
    for (const NodeRef& n : ring.successors) {
      if (n.process() == process) return true;
    }
    return ring.predecessor && ring.predecessor->process() == process;
  };
  std::vector<std::string> current;
  for (const NodeRef& r : replicas) current.emplace_back(r.process());
  // A replica that dropped out and is not in the successor list any more (a join pushing it
  // out of the replica set leaves it there, alive).
  for (const std::string& p : replicas_) {
    if (std::find(current.begin(), current.end(), p) == current.end() && !alive(p)) {
      missing_.emplace(p, now);
    }
  }
  // A predecessor replaced by one before it: this node took its range over.
  if (predecessor_ && ring.predecessor && !predecessor_->SameProcess(*ring.predecessor) &&
      !Id::InHalfOpen(ring.predecessor->id, predecessor_->id, ring.self.id) &&
      !alive(std::string(predecessor_->process()))) {
    missing_.emplace(std::string(predecessor_->process()), now);
  }
  replicas_ = std::move(current);
  if (ring.predecessor) predecessor_ = ring.predecessor;
  // Back in the group (or alive again as the predecessor): no longer missing.
  for (auto it = missing_.begin(); it != missing_.end();) {
    if (alive(it->first)) {
      it = missing_.erase(it);
      ++returns_;
    } else {
      ++it;
    }
  }
}

bool TombstonePurge::MembersMissing() {
  const uint64_t forget = std::max(kForgetMissingMs, 10 * ctx_.config.tombstone_grace_ms);
  for (auto it = missing_.begin(); it != missing_.end();) {
    it = ctx_.now.mono_ms >= it->second + forget ? missing_.erase(it) : std::next(it);
  }
  return !missing_.empty();
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
                         PageLimits{ctx_.config.transfer_batch_bytes, SIZE_MAX}, kMaxPurgeVisits,
                         [now, grace](const Id&, const wire::Record& rec) {
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
                  OpRef{OpKind::kPurge, 0, 0, id});
  }
  op.tombstones = std::move(tombstones);
}

void TombstonePurge::OnRpc(OpRef ref, const wire::Envelope* response) {
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
