#include "node/core/replication/expiry_sweeper.h"

#include <utility>
#include <vector>

#include "node/core/data/write_conditions.h"

namespace chord {

void ExpirySweeper::Sweep() {
  ExpiryIndex& index = ctx_.records.expiry();
  std::vector<ExpiryIndex::Entry> due = index.TakeDue(ctx_.now.wall_ms, kMaxPerSweep);
  for (size_t i = 0; i < due.size(); ++i) {
    if (Expire(due[i].key_id, due[i].key)) continue;
    // The store failed (logged). The keys were taken out of the index: this one goes back to
    // be tried again after kRetryMs (so that a key that keeps failing does not hold up the
    // others, which come first), the rest as they were, for the next sweep.
    index.Note(ctx_.now.wall_ms + kRetryMs, due[i].key_id, due[i].key);
    for (++i; i < due.size(); ++i) index.Note(due[i].expires_unix_ms, due[i].key_id, due[i].key);
    break;
  }
  if (index.overflowed()) ScanSlice();
}

bool ExpirySweeper::Expire(const Id& key_id, const std::string& key) {
  wire::Record rec;
  if (Status s = ctx_.store()->Get(key_id, key, &rec); !s.ok()) {
    if (s.IsNotFound()) return true;  // gone (a hand-over or clean-up took it)
    ctx_.Log(LogLevel::kError, "cannot read a key to expire it (tried again in " +
                                   std::to_string(kRetryMs / 1000) + " s): " + s.message());
    return false;
  }
  // A tombstone already, or written again since with a later (or no) expiry.
  if (rec.deleted() || rec.expires_unix_ms() == 0 || RecordLive(rec, ctx_.now.wall_ms)) {
    return true;
  }
  wire::Record tombstone;
  tombstone.set_key(key);
  tombstone.set_version(rec.version() + 1);
  tombstone.set_writer(rec.writer());
  tombstone.set_deleted(true);
  tombstone.set_expired(true);
  // Kept on the tombstone (identical on every holder) so the purge counts its grace period
  // from the expiry, not from the original write.
  tombstone.set_expires_unix_ms(rec.expires_unix_ms());
  bool stored = false;
  // Every holder stores this same tombstone right after the record: watchers see an expire
  // event linked to the record's version.
  const ChangeLink link{ChangeLink::Kind::kGiven, rec.version(), /*published=*/true};
  Status s = ctx_.records.StoreIfNewer(key_id, tombstone, &stored, nullptr, link);
  if (s.code() == Status::Code::kInvalidArgument) {
    // Outside the limits (a record of an older build with a longer time to live): trying
    // again would not change that. Reads treat the record as absent all the same.
    ctx_.Log(LogLevel::kWarn, "cannot expire a key, as its tombstone is refused: " + s.message());
    return true;
  }
  if (!s.ok()) {
    ctx_.Log(LogLevel::kError, "cannot store the tombstone of an expired key (tried again in " +
                                   std::to_string(kRetryMs / 1000) + " s): " + s.message());
    return false;
  }
  if (stored) ++ctx_.counters.keys_expired;
  return true;
}

void ExpirySweeper::ScanSlice() {
  ExpiryIndex& index = ctx_.records.expiry();
  if (!pass_open_) {
    pass_open_ = true;
    pass_origin_ = cursor_;
    pass_refusals_ = index.refusals();
  }
  const uint64_t now = ctx_.now.wall_ms;
  std::vector<std::pair<Id, std::string>> due;
  size_t visited = 0;
  const Id start = cursor_;
  Id last = cursor_;
  // Vnodes share the store: each expires the keys it accounts for (its watchers see them).
  const Id from = ctx_.ring.AttributedRangeStart();
  const Id to = ctx_.ring.self.id;
  // (cursor, cursor] is the whole ring, starting after the cursor.
  bool stopped = false;
  Status s = ctx_.store()->Scan(cursor_, cursor_, [&](const Id& id, const wire::Record& rec) {
    // The next slice starts after `last`: a slice never ends between two records of one key
    // id (keys whose SHA-1s collide), or the second would be skipped.
    if (visited >= kScanSlice && id != last) {
      stopped = true;
      return false;
    }
    ++visited;
    last = id;
    if (rec.deleted() || rec.expires_unix_ms() == 0 || !Id::InHalfOpen(id, from, to)) return true;
    // As at start-up (ObserveAllVersions). A due key too: should its expiry fail below, the
    // index still holds it for the next sweep.
    index.Note(rec.expires_unix_ms(), id, rec.key());
    if (rec.expires_unix_ms() <= now) due.emplace_back(id, rec.key());
    return true;
  });
  if (!s.ok()) return;
  ++ctx_.counters.expiry_scan_slices;
  cursor_ = last;
  // Noted above. After a store failure (logged) the key is tried again after kRetryMs, and
  // the rest stay noted (as room allowed) for the next sweep.
  for (const auto& [id, key] : due) {
    if (Expire(id, key)) continue;
    index.Note(now + kRetryMs, id, key);
    break;
  }
  // The pass is whole once a slice reached the end of the store (it went round to where it
  // began) or passed the pass's origin.
  const bool ran_out = !stopped;
  if (!ran_out && !(start != last && Id::InHalfOpen(pass_origin_, start, last))) return;
  pass_open_ = false;
  // Every record with an expiry the pass saw is indexed (or expired), and so is every one
  // written since it began, unless the index refused one meanwhile.
  if (index.refusals() == pass_refusals_) index.EndOverflow();
}

}  // namespace chord
