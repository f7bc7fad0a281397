// LedgerStore: a Store that keeps a ledger of what it holds, so that counts and anti-entropy
// digests of a ring range cost the same with a thousand records as with millions. The ring is
// cut into kArcs fixed arcs (by the top kArcBits bits of the key id); each arc keeps its live
// records, its tombstones and the sum (mod 2^64) of RecordDigest over its records. Every write
// through this Store updates the arc of the record (the replaced record's share taken out, the
// new one's added); PutReplacing and WriteReplacing take the replaced records from the caller
// (RecordStore has just read them), so the hot write path does no extra read (the inner
// store is told whether each key had a record: Store::PutKnowing, WriteKnowing). A ring range
// (from, to] is cut at arc boundaries into pieces: whole arcs come from the ledger, the (at
// most two) partial edge pieces are scanned, a bounded amount of work. One LedgerStore wraps
// the process's Store and is shared by every vnode's core; it is filled once, from the first
// full scan (Fill). Not thread-safe: called from the core's thread only.
#ifndef CHORD_NODE_STORAGE_LEDGER_STORE_H_
#define CHORD_NODE_STORAGE_LEDGER_STORE_H_

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "node/storage/store.h"
#include "protocol/base/status.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"

namespace chord {

// 64-bit summary of one record (key id, key, version, writer, tombstone flag); digests add
// these up (mod 2^64), so that they do not depend on order. It must not depend on the value:
// the records a write replaces are read without it (Store::GetHeader).
uint64_t RecordDigest(const Id& key_id, const wire::Record& record);
// The two parts of RecordDigest: the key's (the same for every record of the key), and the
// whole digest from it.
uint64_t KeyDigest(const Id& key_id, std::string_view key);
uint64_t RecordDigest(uint64_t key_digest, const wire::Record& record);

// What a part of the ring holds.
struct LedgerTally {
  uint64_t live = 0;        // records that are not tombstones
  uint64_t tombstones = 0;  // deleted (or expired) records
  uint64_t digest = 0;      // sum of RecordDigest, mod 2^64

  void Add(const LedgerTally& o) {
    live += o.live;
    tombstones += o.tombstones;
    digest += o.digest;
  }
};

// One piece of a ring range cut at arc boundaries: the ids in (from, to] (none when from ==
// to) of arc `arc`; `whole_arc` when that is the entire arc.
struct RangePiece {
  Id from;
  Id to;
  uint32_t arc = 0;
  bool whole_arc = false;
  bool empty() const { return from == to; }
};

class LedgerStore : public Store {
 public:
  static constexpr int kArcBits = 12;
  static constexpr uint32_t kArcs = 1u << kArcBits;
  // Pieces a range can have at most: every arc, the first one cut in two.
  static constexpr uint32_t kMaxPieces = kArcs + 1;

  // The arc that holds `id`, and the last id of arc `arc`.
  static uint32_t ArcOf(const Id& id);
  static Id ArcLast(uint32_t arc);
  // The ring range (from, to] (from == to: the whole ring) cut at arc boundaries, clockwise
  // from `from`: how many pieces, piece `index` (< PieceCount), and the piece holding `id`
  // (which must lie in the range). Both ends of a range compute the same pieces.
  static uint32_t PieceCount(const Id& from, const Id& to);
  static RangePiece Piece(const Id& from, const Id& to, uint32_t index);
  static uint32_t PieceIndex(const Id& from, const Id& to, const Id& id);

  // `inner` must outlive this store.
  explicit LedgerStore(Store* inner) : inner_(inner) {}
  LedgerStore(const LedgerStore&) = delete;
  LedgerStore& operator=(const LedgerStore&) = delete;

  Store* inner() const { return inner_; }

  // Store: reads forward to the inner store; Put, Erase and Write first read the records
  // they replace (use PutReplacing / WriteReplacing where the caller has them).
  [[nodiscard]] Status Put(const Id& key_id, const wire::Record& record) override;
  [[nodiscard]] Status Get(const Id& key_id, std::string_view key, wire::Record* out) override {
    return inner_->Get(key_id, key, out);
  }
  [[nodiscard]] Status GetHeader(const Id& key_id, std::string_view key,
                                 wire::Record* out) override {
    return inner_->GetHeader(key_id, key, out);
  }
  [[nodiscard]] Status Erase(const Id& key_id, std::string_view key) override;
  [[nodiscard]] Status Write(const StoreBatch& batch) override;
  [[nodiscard]] Status Scan(const Id& from, const Id& to, const Visitor& visit) override {
    return inner_->Scan(from, to, visit);
  }
  uint64_t Count() override { return inner_->Count(); }
  uint64_t FreeHeldBytes() override { return inner_->FreeHeldBytes(); }
  [[nodiscard]] Status PutMeta(std::string_view name, std::string_view value) override {
    return inner_->PutMeta(name, value);
  }
  [[nodiscard]] Status GetMeta(std::string_view name, std::string* value) override {
    return inner_->GetMeta(name, value);
  }
  [[nodiscard]] Status EraseMeta(std::string_view name) override { return inner_->EraseMeta(name); }
  [[nodiscard]] Status ScanMeta(std::string_view prefix, const MetaVisitor& visit) override {
    return inner_->ScanMeta(prefix, visit);
  }

  // Puts `record`, which replaces `before` (nullptr: the key had no record); `before` may lack
  // its value (read with GetHeader).
  [[nodiscard]] Status PutReplacing(const Id& key_id, const wire::Record& record,
                                    const wire::Record* before);
  // Applies `batch`, whose entry i replaces before[i] (nullptr: none). Sizes must match.
  [[nodiscard]] Status WriteReplacing(const StoreBatch& batch,
                                      const std::vector<const wire::Record*>& before);

  // Whether the ledger has been filled. Until then writes leave it alone, and Fill (one full
  // scan, which calls `also` with every record, so that a caller's own start-up scan is the
  // same pass) fills it. Range queries fill it first if needed.
  bool filled() const { return filled_; }
  [[nodiscard]] Status Fill(const Visitor& also = nullptr);

  // What (from, to] holds (from == to: the whole ring): whole arcs from the ledger, edge
  // pieces scanned.
  [[nodiscard]] Result<LedgerTally> Tally(const Id& from, const Id& to);
  // The digest of each piece of (from, to], in piece order.
  [[nodiscard]] Result<std::vector<uint64_t>> PieceDigests(const Id& from, const Id& to);
  // What arc `arc` holds, from the ledger.
  LedgerTally ArcTally(uint32_t arc) const;
  // Every record's share, from the ledger.
  const LedgerTally& totals() const { return totals_; }

 private:
  // Adds `record` of `key_id` to the ledger or takes it out; `key_digest`: KeyDigest of them.
  void Account(const Id& key_id, uint64_t key_digest, const wire::Record& record, bool add);
  [[nodiscard]] Status EnsureFilled();
  // What piece `p` holds: from the ledger when it is a whole arc, else by a scan.
  [[nodiscard]] Result<LedgerTally> PieceTally(const RangePiece& p);

  Store* inner_;
  bool filled_ = false;
  std::array<uint64_t, kArcs> live_{};
  std::array<uint64_t, kArcs> tombstones_{};
  std::array<uint64_t, kArcs> digests_{};
  LedgerTally totals_;
};

}  // namespace chord

#endif  // CHORD_NODE_STORAGE_LEDGER_STORE_H_
