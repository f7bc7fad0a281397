#include "node/core/replication/anti_entropy.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>

#include "node/core/range_digest.h"
#include "node/core/record_order.h"
#include "protocol/limits.h"
#include "protocol/messages.h"

namespace chord {
namespace {

// Ranges the clean-up walk examines per round, beyond the R-1 it keeps.
constexpr int kExtraRangesPerRound = 2;
// Pages of differing records one comparison pulls from a replica at most.
constexpr int kMaxPullPages = 64;

}  // namespace

void AntiEntropy::Round() {
  const RingState& ring = ctx_.ring;
  if (running_ || !ring.joined() || ring.awaiting_transfer) return;
  const auto start = ring.RangeStart();
  range_ = KeyRange{start ? *start : ring.self.id, ring.self.id};
  targets_ = policy_.Targets();
  // Cursors of processes that left the replica set go.
  std::erase_if(push_cursors_, [this](const auto& entry) {
    return std::none_of(targets_.begin(), targets_.end(),
                        [&entry](const NodeRef& t) { return t.process() == entry.first; });
  });
  const int walk = policy_.replicas() - 1 + kExtraRangesPerRound;
  if (targets_.empty()) {
    purge_.Start(range_, {});
    return cleanup_.Run(walk);
  }
  if (!start && !ring.successors.empty()) return;  // our range is unknown for now
  // Whole arcs come from the store's ledger; only the two edge pieces are scanned.
  auto digests = ctx_.store()->PieceDigests(range_.from, range_.to);
  if (!digests.ok()) {
    ctx_.Log(LogLevel::kError, "anti-entropy cannot read the store: " + digests.status().message());
    return;
  }
  running_ = true;
  purge_.NoteComparing(targets_);
  ++round_;
  returns_at_start_ = purge_.returns();
  pieces_ = static_cast<uint32_t>(digests->size());
  clean_ = true;
  pending_ = targets_.size();
  sessions_.assign(targets_.size(), Session{});
  for (size_t i = 0; i < targets_.size(); ++i) {
    sessions_[i].target = targets_[i];
    SendDigests(i, *digests);
  }
}

void AntiEntropy::OnRpc(OpRef op, const wire::Envelope* response) {
  if (!running_ || op.id != round_ || op.index >= sessions_.size()) return;
  if (op.step == kDigest) return OnDigests(op.index, response);
  if (op.step == kPull) return OnPulled(op.index, response);
  if (op.step == kPush) return OnPushed(op.index, response);
}

void AntiEntropy::SendDigests(size_t index, const std::vector<uint64_t>& digests) {
  wire::Envelope req = msg::SyncDigest(ctx_.self(), range_.from, range_.to, digests);
  ctx_.counters.anti_entropy_bytes += req.ByteSizeLong();
  ++ctx_.counters.anti_entropy_rounds;
  ctx_.out.Send(sessions_[index].target, std::move(req), ctx_.config.rpc_timeout_ms,
                Ref(kDigest, index));
}

void AntiEntropy::OnDigests(size_t index, const wire::Envelope* response) {
  if (response == nullptr || !response->has_sync_digest_resp() ||
      response->sync_digest_resp().code() != wire::OK) {
    return SessionDone(false);
  }
  ctx_.counters.anti_entropy_bytes += response->ByteSizeLong();
  const auto& differing = response->sync_digest_resp().differing();
  if (differing.empty()) {
    ++ctx_.counters.anti_entropy_clean;
    KeepCursor(index, std::nullopt);  // nothing left to push: the next difference starts afresh
    return SessionDone(true);
  }
  // Fetch the replica's records of those arcs, take what is newer, send what it lacks.
  Session& s = sessions_[index];
  // The replica's list is untrusted: pieces of this range only, each once, in order (the pulls
  // and pushes walk them in order).
  s.differing.clear();
  for (uint32_t piece : differing) {
    if (piece < pieces_) s.differing.push_back(piece);
  }
  std::sort(s.differing.begin(), s.differing.end());
  s.differing.erase(std::unique(s.differing.begin(), s.differing.end()), s.differing.end());
  if (s.differing.empty()) return SessionDone(false);
  s.pages_left = kMaxPullPages;
  // The pull covers the same stretch as the push: from the cursor the last push left.
  s.start = CursorOf(index);
  s.after = s.start;
  Pull(index);
}

void AntiEntropy::Pull(size_t index) {
  Session& s = sessions_[index];
  // The page's size is what the link from the replica carries in a quarter of a short
  // request's deadline (LinkPace): the answer comes back ahead of our other answers from it.
  s.pull_bytes = ctx_.pull_pace().BatchBytes(s.target.process());
  wire::Envelope req =
      msg::SyncPull(range_.from, range_.to, pieces_, s.differing, s.pull_bytes, s.after);
  ctx_.counters.anti_entropy_bytes += req.ByteSizeLong();
  s.sent_ms = ctx_.now.mono_ms;
  ctx_.out.Send(s.target, std::move(req), ctx_.config.transfer_timeout_ms, Ref(kPull, index));
}

void AntiEntropy::OnPulled(size_t index, const wire::Envelope* response) {
  Session& s = sessions_[index];
  if (response == nullptr) {
    ctx_.pull_pace().Failed(s.target.process(), s.pull_bytes, s.pull_bytes);
  }
  if (response == nullptr || !response->has_sync_pull_resp() ||
      response->sync_pull_resp().code() != wire::OK) {
    return SessionDone(false);
  }
  const size_t answer_bytes = response->ByteSizeLong();
  ctx_.pull_pace().Answered(s.target.process(), answer_bytes, ctx_.now.mono_ms - s.sent_ms,
                            s.pull_bytes);
  ctx_.counters.anti_entropy_bytes += answer_bytes;
  uint64_t taken = 0;
  std::optional<Id> last;
  for (const auto& rec : response->sync_pull_resp().records()) {
    if (!KeyProblem(rec.key()).empty()) continue;
    const Id id = Id::Sha1(rec.key());
    last = id;
    // Take only what falls in our range: the rest is not ours to hold.
    if (!Id::InHalfOpen(id, range_.from, range_.to)) continue;
    bool stored = false;
    if (!ctx_.records.StoreIfNewer(id, rec, &stored).ok()) continue;
    if (stored) ++taken;
    wire::Record meta = rec;
    meta.clear_value();  // only the version matters from here on
    s.theirs.push_back(std::move(meta));
  }
  ctx_.counters.keys_repaired += taken;
  if (taken > 0) {
    ctx_.Log(LogLevel::kInfo, "anti-entropy: took " + std::to_string(taken) + " newer keys from " +
                                  s.target.Describe());
  }
  if (response->sync_pull_resp().more() && last && s.pages_left > 1) {
    --s.pages_left;
    s.after = last;
    return Pull(index);
  }
  Push(index);
}

void AntiEntropy::Push(size_t index) {
  Session& s = sessions_[index];
  std::unordered_map<std::string, wire::Record> have;
  for (auto& r : s.theirs) {
    std::string key = r.key();
    have.emplace(std::move(key), std::move(r));
  }
  s.theirs.clear();
  // Only the differing pieces are read, and a bounded number of their records, from where the
  // last push to this replica stopped (when it stopped early in this same range).
  s.push_pace = ctx_.pace().BatchBytes(s.target.process());
  auto read = ReadPieces(ctx_.store(), range_.from, range_.to, s.differing, s.start,
                         PageLimits{s.push_pace, SIZE_MAX},
                         std::max<size_t>(1, ctx_.config.anti_entropy_push_visits),
                         [&](const Id&, const wire::Record& rec) {
                           auto it = have.find(rec.key());
                           return it == have.end() || RecordNewer(rec, it->second);
                         });
  if (!read.ok()) return SessionDone(false);
  // Stopped early: the next round with this replica goes on after the last record read, once
  // the replica has taken this push (a lost push is read again).
  s.next.reset();
  if (read->page.more && read->last) s.next = read->last;
  if (read->page.records.empty()) {
    KeepCursor(index, s.next);
    return SessionDone(false);
  }
  StorePage& page = read.value().page;
  ctx_.counters.anti_entropy_bytes += page.bytes;
  std::vector<wire::Record> records;
  for (auto& [id, rec] : page.records) records.push_back(std::move(rec));
  s.pushed = records.size();
  s.pushed_bytes = page.bytes;
  s.sent_ms = ctx_.now.mono_ms;
  ctx_.out.Send(s.target, msg::Replicate(ctx_.self(), std::move(records)),
                ctx_.config.transfer_timeout_ms, Ref(kPush, index));
}

void AntiEntropy::OnPushed(size_t index, const wire::Envelope* response) {
  const Session& s = sessions_[index];
  const bool ok = response != nullptr && response->has_replicate_resp() &&
                  response->replicate_resp().code() == wire::OK;
  if (response == nullptr) {
    ctx_.pace().Failed(s.target.process(), s.pushed_bytes, s.push_pace);
  } else {
    ctx_.pace().Answered(s.target.process(), s.pushed_bytes, ctx_.now.mono_ms - s.sent_ms,
                         s.push_pace);
  }
  if (ok) {
    KeepCursor(index, s.next);
    ctx_.counters.keys_repaired += response->replicate_resp().stored();
    ctx_.Log(LogLevel::kInfo, "anti-entropy: sent " + std::to_string(s.pushed) +
                                  " keys to replica " + s.target.Describe());
  }
  SessionDone(false);  // something differed this round
}

std::optional<Id> AntiEntropy::CursorOf(size_t index) const {
  auto c = push_cursors_.find(std::string(sessions_[index].target.process()));
  if (c == push_cursors_.end()) return std::nullopt;
  const PushCursor& cursor = c->second;
  if (cursor.range.from != range_.from || cursor.range.to != range_.to ||
      !Id::InHalfOpen(cursor.after, range_.from, range_.to)) {
    return std::nullopt;  // left in another range: start afresh
  }
  return cursor.after;
}

void AntiEntropy::KeepCursor(size_t index, const std::optional<Id>& next) {
  const std::string process(sessions_[index].target.process());
  if (next) {
    push_cursors_[process] = PushCursor{range_, *next};
  } else {
    push_cursors_.erase(process);
  }
}

void AntiEntropy::SessionDone(bool clean) {
  clean_ = clean_ && clean;
  if (--pending_ == 0) Finish();
}

void AntiEntropy::Finish() {
  running_ = false;
  purge_.NoteComparing({});
  sessions_.clear();
  // Every replica agrees with us: tombstones past their grace period can go everywhere,
  // unless a missing member came back into the group meanwhile (this round did not compare
  // with it). One back since the last maintenance round is still missing: Start purges
  // nothing then either.
  if (clean_ && purge_.returns() == returns_at_start_) purge_.Start(range_, targets_);
  cleanup_.Run(policy_.replicas() - 1 + kExtraRangesPerRound);
}

}  // namespace chord
