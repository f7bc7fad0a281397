#include "node/core/record_store.h"

#include <cstdlib>
#include <string_view>
#include <unordered_set>

#include "node/core/data/write_conditions.h"
#include "node/core/record_order.h"
#include "protocol/limits.h"

namespace chord {

bool RecordStore::VersionPlausible(uint64_t version) const {
  return VersionWallMs(version) <= now_->wall_ms + config_->max_clock_skew_ms;
}

std::string RecordStore::RecordProblem(const wire::Record& rec) const {
  if (std::string p = KeyProblem(rec.key()); !p.empty()) return p;
  if (std::string p = ValueProblem(rec.value().size(), config_->max_value_bytes); !p.empty()) {
    return p;
  }
  if (!VersionPlausible(rec.version())) {
    return "the record's version lies " +
           std::to_string(VersionWallMs(rec.version()) - now_->wall_ms) +
           " ms ahead of this node's clock; versions are refused more than " +
           std::to_string(config_->max_clock_skew_ms) + " ms ahead";
  }
  if (rec.expired() && !rec.deleted()) return "the record is marked expired but is not a tombstone";
  if (rec.expires_unix_ms() > VersionWallMs(rec.version()) + kMaxTtlMs) {
    return "the record's expiry lies more than " + std::to_string(kMaxTtlMs) +
           " ms after its version's time";
  }
  if (!rec.writer().empty() && rec.writer().size() != static_cast<size_t>(Id::kBytes)) {
    return "the record's writer is not a 20-byte id";
  }
  return "";
}

bool RecordStore::ExpiresLaterHere(const wire::Record& expiry, const wire::Record& held) const {
  return expiry.deleted() && expiry.expired() && !held.deleted() && held.expires_unix_ms() != 0 &&
         expiry.version() == held.version() + 1 && expiry.writer() == held.writer() &&
         now_->wall_ms < held.expires_unix_ms();
}

Status RecordStore::StoreIfNewer(const Id& key_id, const wire::Record& rec, bool* stored,
                                 wire::Record* kept, const ChangeLink& link, bool new_version) {
  if (stored != nullptr) *stored = false;
  if (std::string problem = RecordProblem(rec); !problem.empty()) {
    return Status::InvalidArgument(std::move(problem));
  }
  clock_->Observe(rec.version());
  // The record replaced is read without its value: its version, writer and tombstone flag
  // decide, unless all three are the incoming record's (the same write again, as anti-entropy
  // and hand-overs bring), where the value does (RecordNewer).
  const KeptRecord::Use replaced(&replaced_);
  wire::Record& old = *replaced;
  bool whole = false;
  Status s = store_->GetHeader(key_id, rec.key(), &old);
  if (s.ok() && old.version() == rec.version() && old.writer() == rec.writer() &&
      old.deleted() == rec.deleted()) {
    s = store_->Get(key_id, rec.key(), &old);
    whole = true;
  }
  if (s.ok()) {
    // Last writer wins, with a tie-break every node applies alike.
    const bool same_version_other_writer =
        new_version && old.version() == rec.version() && old.writer() != rec.writer();
    // Every node expires a record by its own clock (its ExpirySweeper): the expiry of this
    // very record from a node whose clock is ahead (by anti-entropy, a repair, a clean-up
    // walk) waits until this node's clock has reached it too.
    if (!RecordNewer(rec, old) || same_version_other_writer || ExpiresLaterHere(rec, old)) {
      // The record kept goes back whole (a replica sends it to the owner).
      if (kept == nullptr) return Status::Ok();
      if (!whole) return store_->Get(key_id, rec.key(), kept);
      *kept = std::move(old);
      return Status::Ok();
    }
  } else if (!s.IsNotFound()) {
    return s;
  }
  s = Replace(key_id, rec, s.ok() ? &old : nullptr, link);
  if (s.ok() && stored != nullptr) *stored = true;
  return s;
}

Status RecordStore::StoreStamped(const Id& key_id, wire::Record* rec, const Id& writer,
                                 const ChangeLink& link) {
  const KeptRecord::Use replaced(&replaced_);
  wire::Record& old = *replaced;
  Status s = store_->GetHeader(key_id, rec->key(), &old);  // as in StoreIfNewer
  if (!s.ok() && !s.IsNotFound()) return s;
  const bool found = s.ok();
  // A value past its expiry that the sweeper has not turned into its tombstone yet (version
  // + 1) reads as that tombstone, and this write replaces it: versioned above the tombstone
  // (Replace shows the expiry first to watchers).
  const bool over_expiry = found && !old.deleted() && old.expires_unix_ms() != 0 &&
                           old.expires_unix_ms() <= now_->wall_ms;
  if (found) clock_->Observe(over_expiry ? old.version() + 1 : old.version());
  rec->set_version(NextVersion(nullptr));
  rec->set_writer(reinterpret_cast<const char*>(writer.bytes().data()), Id::kBytes);
  if (std::string problem = RecordProblem(*rec); !problem.empty()) {
    return Status::InvalidArgument(std::move(problem));
  }
  return Replace(key_id, *rec, found ? &old : nullptr, link);
}

Status RecordStore::Replace(const Id& key_id, const wire::Record& rec, const wire::Record* old,
                            const ChangeLink& link) {
  Status s = store_->PutReplacing(key_id, rec, old);
  if (!s.ok()) return s;
  if (!rec.deleted() && rec.expires_unix_ms() != 0) {
    expiry_.Note(rec.expires_unix_ms(), key_id, rec.key());
  } else if (old != nullptr && old->expires_unix_ms() != 0) {
    expiry_.Forget(key_id, rec.key());  // deleted, or written again without an expiry
  }
  if (watches_->Watched(rec.key())) {
    uint64_t prev_local = old != nullptr ? old->version() : 0;
    // A value past its expiry, not swept yet, is replaced: watchers see its expiry first, the
    // event every holder's sweeper makes of it (ExpirySweeper; published, as it needs no
    // answer from the replicas), and this change follows on from that. The owner's clock
    // decides whether the value had expired (its own writes); a replica follows the owner
    // (the link the owner sent names the expiry's version), not its own clock, so that both
    // keep one history. (At the tombstone's very version, a clock one tick behind, the change
    // follows the value itself.)
    const bool expired_value = old != nullptr && !old->deleted() && old->expires_unix_ms() != 0 &&
                               rec.version() > old->version() + 1;
    const bool show_expiry = expired_value && (link.kind == ChangeLink::Kind::kGiven
                                                   ? link.prev == old->version() + 1
                                                   : link.kind == ChangeLink::Kind::kLocal &&
                                                         old->expires_unix_ms() <= now_->wall_ms);
    if (show_expiry) {
      wire::Record expiry;
      expiry.set_key(rec.key());
      expiry.set_version(old->version() + 1);
      expiry.set_deleted(true);
      expiry.set_expired(true);
      expiry.set_writer(old->writer());
      watches_->OnStored(expiry, old->version(), ChangeLink{ChangeLink::Kind::kLocal, 0, true},
                         now_->mono_ms);
      prev_local = old->version() + 1;
    }
    watches_->OnStored(rec, prev_local, link, now_->mono_ms);
  }
  return s;
}

Result<uint64_t> RecordStore::EraseIfUnchanged(const std::vector<RecordStamp>& stamps,
                                               bool tombstones_only) {
  StoreBatch batch;
  std::vector<wire::Record> current(stamps.size());
  std::vector<const wire::Record*> before;
  std::unordered_set<std::string_view> erased;
  for (size_t i = 0; i < stamps.size(); ++i) {
    const RecordStamp& r = stamps[i];
    // A record that cannot be read is left alone; the next round tries again.
    if (!store_->Get(r.key_id, r.key, &current[i]).ok()) continue;
    // Another writer's record of the same version (which wins the tie) was not the one sent.
    if (current[i].version() != r.version ||
        (!r.writer.empty() && current[i].writer() != r.writer) ||
        (tombstones_only && !current[i].deleted())) {
      continue;
    }
    // The same key twice: the second finds it erased.
    if (!erased.insert(r.key).second) continue;
    batch.Erase(r.key_id, r.key);
    before.push_back(&current[i]);
  }
  Status s = store_->WriteReplacing(batch, before);
  if (!s.ok()) return s;
  // A watched key's changes end with the record erased: a watcher starting now would find the
  // key absent (version 0) and the log's changes leading nowhere from there (a resync, then
  // again, at once, for ever).
  if (watches_->watched_keys() > 0) {
    for (std::string_view key : erased) watches_->Forget(std::string(key));
  }
  return static_cast<uint64_t>(batch.size());
}

Result<StorePage> RecordStore::ReadPage(const KeyRange& range, const std::optional<Id>& after,
                                        const PageLimits& limits, const Store::Filter& keep) {
  // (a, a] would be the whole ring: a resumed scan that reached the end has nothing left.
  if (after && *after == range.to) return StorePage{};
  return store_->ReadPage(after ? *after : range.from, range.to, limits, keep);
}

Result<LedgerTally> RecordStore::Tally(const Id& from, const Id& to) const {
  return store_->Tally(from, to);
}

namespace {

constexpr const char* kVersionLeaseMeta = "version-lease";

}  // namespace

uint64_t RecordStore::NextVersion(const std::function<void(const std::string&)>& log) {
  uint64_t v = clock_->Next(now_->wall_ms);
  if (v < version_lease_) return v;
  // The stored lease is shared by the vnodes of a process (one store): it only ever grows, so
  // it is written only over one read. Versions continue above it (a start-up that could not
  // read it, or another vnode's).
  std::string text;
  Status s = store_->GetMeta(kVersionLeaseMeta, &text);
  if (s.ok()) {
    const uint64_t stored = std::strtoull(text.c_str(), nullptr, 10);
    if (stored >= v) {
      clock_->Observe(stored);
      v = clock_->Next(now_->wall_ms);
    }
  }
  const uint64_t lease = v + (kVersionLeaseMs << 16);  // v is above `stored` by now
  if (s.ok() || s.IsNotFound()) s = store_->PutMeta(kVersionLeaseMeta, std::to_string(lease));
  if (!s.ok()) {
    // Tried again at the next version; said once until it works again.
    if (!lease_failing_ && log) log("cannot keep the lease of write versions: " + s.message());
    lease_failing_ = true;
    return v;
  }
  lease_failing_ = false;
  version_lease_ = lease;
  return v;
}

Status RecordStore::ObserveAllVersions(const KeyRange& expiries) {
  std::string lease;
  Status lease_read = store_->GetMeta(kVersionLeaseMeta, &lease);
  if (lease_read.ok()) {
    clock_->Observe(std::strtoull(lease.c_str(), nullptr, 10));
  } else if (lease_read.IsNotFound()) {
    lease_read = Status::Ok();
  }
  auto observe = [this, &expiries](const Id& id, const wire::Record& rec) {
    clock_->Observe(rec.version());
    if (!rec.deleted() && rec.expires_unix_ms() != 0 &&
        Id::InHalfOpen(id, expiries.from, expiries.to)) {
      expiry_.Note(rec.expires_unix_ms(), id, rec.key());
    }
    return true;
  };
  Status scanned = store_->filled() ? store_->Scan(Id(), Id(), observe) : store_->Fill(observe);
  return scanned.ok() ? lease_read : scanned;
}

std::vector<RecordStamp> StampsOf(const StorePage& page) {
  std::vector<RecordStamp> out;
  out.reserve(page.records.size());
  for (const auto& [id, rec] : page.records)
    out.push_back(RecordStamp{id, rec.key(), rec.version(), rec.writer()});
  return out;
}

}  // namespace chord
