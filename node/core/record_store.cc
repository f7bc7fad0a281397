#include "node/core/record_store.h"

#include "node/core/record_order.h"

namespace chord {

Status RecordStore::StoreIfNewer(const Id& key_id, const wire::Record& rec, bool* stored,
                                 wire::Record* kept) {
  clock_->Observe(rec.version());
  if (stored != nullptr) *stored = false;
  wire::Record old;
  Status s = store_->Get(key_id, rec.key(), &old);
  if (s.ok()) {
    // Last writer wins, with a tie-break every node applies alike.
    if (!RecordNewer(rec, old)) {
      if (kept != nullptr) *kept = std::move(old);
      return Status::Ok();
    }
  } else if (!s.IsNotFound()) {
    return s;
  }
  s = store_->Put(key_id, rec);
  if (s.ok() && stored != nullptr) *stored = true;
  return s;
}

Result<uint64_t> RecordStore::EraseIfUnchanged(const std::vector<RecordStamp>& stamps,
                                               bool tombstones_only) {
  StoreBatch batch;
  for (const RecordStamp& r : stamps) {
    wire::Record current;
    // A record that cannot be read is left alone; the next round tries again.
    if (!store_->Get(r.key_id, r.key, &current).ok()) continue;
    if (current.version() != r.version || (tombstones_only && !current.deleted())) continue;
    batch.Erase(r.key_id, r.key);
  }
  Status s = store_->Write(batch);
  if (!s.ok()) return s;
  return static_cast<uint64_t>(batch.size());
}

Result<StorePage> RecordStore::ReadPage(const KeyRange& range, const std::optional<Id>& after,
                                        const PageLimits& limits, const Store::Filter& keep) {
  // (a, a] would be the whole ring: a resumed scan that reached the end has nothing left.
  if (after && *after == range.to) return StorePage{};
  return store_->ReadPage(after ? *after : range.from, range.to, limits, keep);
}

uint64_t RecordStore::CountLive(const Id& from, const Id& to) const {
  uint64_t n = 0;
  Status s = store_->Scan(from, to, [&n](const Id&, const wire::Record& rec) {
    if (!rec.deleted()) ++n;
    return true;
  });
  return s.ok() ? n : 0;
}

Status RecordStore::ObserveAllVersions() {
  return store_->Scan(Id(), Id(), [this](const Id&, const wire::Record& rec) {
    clock_->Observe(rec.version());
    return true;
  });
}

std::vector<RecordStamp> StampsOf(const StorePage& page) {
  std::vector<RecordStamp> out;
  out.reserve(page.records.size());
  for (const auto& [id, rec] : page.records)
    out.push_back(RecordStamp{id, rec.key(), rec.version()});
  return out;
}

}  // namespace chord
