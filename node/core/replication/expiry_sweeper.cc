#include "node/core/replication/expiry_sweeper.h"

#include <utility>
#include <vector>

#include "node/core/data/write_conditions.h"

namespace chord {

void ExpirySweeper::Sweep() {
  for (const ExpiryIndex::Entry& e :
       ctx_.records.expiry().TakeDue(ctx_.now.wall_ms, kMaxPerSweep)) {
    Expire(e.key_id, e.key);
  }
  if (ctx_.records.expiry().overflowed()) ScanSlice();
}

void ExpirySweeper::Expire(const Id& key_id, const std::string& key) {
  wire::Record rec;
  if (!ctx_.store()->Get(key_id, key, &rec).ok()) return;
  // Gone, a tombstone already, or written again since with a later (or no) expiry.
  if (rec.deleted() || rec.expires_unix_ms() == 0 || RecordLive(rec, ctx_.now.wall_ms)) return;
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
  if (!s.ok()) {
    ctx_.Log(LogLevel::kError, "cannot store the tombstone of an expired key: " + s.message());
    return;
  }
  if (stored) ++ctx_.counters.keys_expired;
}

void ExpirySweeper::ScanSlice() {
  const uint64_t now = ctx_.now.wall_ms;
  std::vector<std::pair<Id, std::string>> due;
  size_t visited = 0;
  Id last = cursor_;
  // Vnodes share the store: each expires the keys it accounts for (its watchers see them).
  const Id from = ctx_.ring.AttributedRangeStart();
  const Id to = ctx_.ring.self.id;
  // (cursor, cursor] is the whole ring, starting after the cursor.
  Status s = ctx_.store()->Scan(cursor_, cursor_, [&](const Id& id, const wire::Record& rec) {
    if (visited++ >= kScanSlice) return false;
    last = id;
    if (!rec.deleted() && rec.expires_unix_ms() != 0 && rec.expires_unix_ms() <= now &&
        Id::InHalfOpen(id, from, to)) {
      due.emplace_back(id, rec.key());
    }
    return true;
  });
  if (!s.ok()) return;
  cursor_ = last;
  for (const auto& [id, key] : due) Expire(id, key);
}

}  // namespace chord
