#include "node/storage/ledger_store.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string_view>
#include <unordered_map>

namespace chord {
namespace {

// SplitMix64 finaliser: spreads every input bit over the output.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Eight bytes as a little-endian number: the same value on every host.
uint64_t Word(const char* p) {
  uint64_t w = 0;
  std::memcpy(&w, p, 8);
  if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
  return w;
}

// Fewer than eight bytes, the same way (a byte loop: a memcpy of a length not known at compile
// time is a library call).
uint64_t ShortWord(const char* p, size_t n) {
  uint64_t w = 0;
  for (size_t k = 0; k < n; ++k) w |= static_cast<uint64_t>(static_cast<uint8_t>(p[k])) << (8 * k);
  return w;
}

// Eight bytes a step (every write digests the record it replaces and the new one), then
// Mix spreads the result.
uint64_t Fold(std::string_view bytes) {
  constexpr uint64_t kOdd = 0x9e3779b97f4a7c15ULL;
  uint64_t h = bytes.size() * kOdd;
  size_t i = 0;
  const auto step = [&h](uint64_t w) {
    h = (h ^ w) * kOdd;
    h ^= h >> 29;
  };
  for (; i + 8 <= bytes.size(); i += 8) step(Word(bytes.data() + i));
  if (i < bytes.size()) step(ShortWord(bytes.data() + i, bytes.size() - i));
  return Mix(h);
}

uint64_t Minus(uint64_t a, uint64_t b) { return a - std::min(a, b); }

}  // namespace

uint64_t KeyDigest(const Id& key_id, std::string_view key) {
  const auto& id = key_id.bytes();
  return Fold(std::string_view(reinterpret_cast<const char*>(id.data()), id.size())) ^ Fold(key);
}

uint64_t RecordDigest(uint64_t key_digest, const wire::Record& record) {
  const uint64_t h = Mix(key_digest ^ record.version());
  return Mix(h ^ Fold(record.writer()) ^ (record.deleted() ? 0x5bd1e995ULL : 0));
}

uint64_t RecordDigest(const Id& key_id, const wire::Record& record) {
  return RecordDigest(KeyDigest(key_id, record.key()), record);
}

// --- arcs and pieces ----------------------------------------------------------------------

uint32_t LedgerStore::ArcOf(const Id& id) {
  const auto& b = id.bytes();
  return (static_cast<uint32_t>(b[0]) << 4) | (static_cast<uint32_t>(b[1]) >> 4);
}

Id LedgerStore::ArcLast(uint32_t arc) {
  std::array<uint8_t, Id::kBytes> b;
  b.fill(0xff);
  arc %= kArcs;
  b[0] = static_cast<uint8_t>(arc >> 4);
  b[1] = static_cast<uint8_t>(((arc & 0xfu) << 4) | 0xfu);
  return Id(b);
}

uint32_t LedgerStore::PieceCount(const Id& from, const Id& to) {
  const uint32_t a = ArcOf(from);
  const uint32_t b = ArcOf(to);
  if (a == b) return from < to ? 1 : kMaxPieces;  // inside one arc, or round the ring
  return (b + kArcs - a) % kArcs + 1;
}

RangePiece LedgerStore::Piece(const Id& from, const Id& to, uint32_t index) {
  const uint32_t n = PieceCount(from, to);
  const uint32_t a = ArcOf(from);
  RangePiece p;
  p.arc = (a + index) % kArcs;
  p.from = index == 0 ? from : ArcLast(p.arc + kArcs - 1);
  p.to = index + 1 == n ? to : ArcLast(p.arc);
  p.whole_arc = p.from == ArcLast(p.arc + kArcs - 1) && p.to == ArcLast(p.arc);
  return p;
}

uint32_t LedgerStore::PieceIndex(const Id& from, const Id& to, const Id& id) {
  const uint32_t a = ArcOf(from);
  const uint32_t j = (ArcOf(id) + kArcs - a) % kArcs;
  // Round the ring, the first arc is cut in two: ids up to `from` belong to the last piece.
  if (j == 0 && PieceCount(from, to) == kMaxPieces) {
    const Id last = ArcLast(a);
    const bool first_piece = !(from == last) && Id::InHalfOpen(id, from, last);
    return first_piece ? 0 : kMaxPieces - 1;
  }
  return j;
}

// --- writes -------------------------------------------------------------------------------

void LedgerStore::Account(const Id& key_id, uint64_t key_digest, const wire::Record& record,
                          bool add) {
  if (!filled_) return;  // Fill will count it
  const uint32_t arc = ArcOf(key_id);
  const uint64_t digest = RecordDigest(key_digest, record);
  uint64_t& count = record.deleted() ? tombstones_[arc] : live_[arc];
  uint64_t& total = record.deleted() ? totals_.tombstones : totals_.live;
  if (add) {
    ++count;
    ++total;
    digests_[arc] += digest;
    totals_.digest += digest;
  } else {
    count = Minus(count, 1);
    total = Minus(total, 1);
    digests_[arc] -= digest;
    totals_.digest -= digest;
  }
}

Status LedgerStore::PutReplacing(const Id& key_id, const wire::Record& record,
                                 const wire::Record* before) {
  Status s = inner_->PutKnowing(key_id, record, before != nullptr);
  if (!s.ok()) return s;
  if (!filled_) return s;  // Fill will count it
  // The record replaced is of the same key: the key's part of the digest is computed once.
  const uint64_t key_digest = KeyDigest(key_id, record.key());
  if (before != nullptr) {
    Account(key_id, before->key() == record.key() ? key_digest : KeyDigest(key_id, before->key()),
            *before, false);
  }
  Account(key_id, key_digest, record, true);
  return s;
}

Status LedgerStore::Put(const Id& key_id, const wire::Record& record) {
  wire::Record before;  // only what it says of itself counts (RecordDigest)
  Status s = inner_->GetHeader(key_id, record.key(), &before);
  if (!s.ok() && !s.IsNotFound()) return s;
  return PutReplacing(key_id, record, s.ok() ? &before : nullptr);
}

Status LedgerStore::Erase(const Id& key_id, std::string_view key) {
  StoreBatch batch;
  batch.Erase(key_id, key);
  return Write(batch);
}

Status LedgerStore::WriteReplacing(const StoreBatch& batch,
                                   const std::vector<const wire::Record*>& before) {
  if (before.size() != batch.size()) {
    return Status::InvalidArgument("a batch's replaced records do not match its entries");
  }
  std::vector<bool> existed(before.size());
  for (size_t i = 0; i < before.size(); ++i) existed[i] = before[i] != nullptr;
  Status s = inner_->WriteKnowing(batch, existed);
  if (!s.ok() || !filled_) return s;  // unfilled: Fill will count it
  const auto& entries = batch.entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    const Id& id = entries[i].key_id;
    if (before[i] != nullptr) Account(id, KeyDigest(id, before[i]->key()), *before[i], false);
    if (entries[i].record) {
      Account(id, KeyDigest(id, entries[i].record->key()), *entries[i].record, true);
    }
  }
  return s;
}

Status LedgerStore::Write(const StoreBatch& batch) {
  // Entries apply in order: an entry replaces the key's latest earlier entry, if any, else
  // the stored record.
  const auto& entries = batch.entries();
  std::vector<wire::Record> held(entries.size());
  std::vector<const wire::Record*> before(entries.size(), nullptr);
  std::unordered_map<std::string_view, size_t> latest;
  for (size_t i = 0; i < entries.size(); ++i) {
    auto [it, first] = latest.try_emplace(entries[i].key, i);
    if (!first) {
      const auto& earlier = entries[it->second].record;
      before[i] = earlier ? &*earlier : nullptr;
      it->second = i;
      continue;
    }
    Status s = inner_->GetHeader(entries[i].key_id, entries[i].key, &held[i]);
    if (s.ok()) {
      before[i] = &held[i];
    } else if (!s.IsNotFound()) {
      return s;
    }
  }
  return WriteReplacing(batch, before);
}

// --- the ledger ---------------------------------------------------------------------------

Status LedgerStore::Fill(const Visitor& also) {
  live_.fill(0);
  tombstones_.fill(0);
  digests_.fill(0);
  totals_ = LedgerTally{};
  filled_ = false;
  Status s = inner_->Scan(Id(), Id(), [&](const Id& id, const wire::Record& rec) {
    const uint32_t arc = ArcOf(id);
    const uint64_t digest = RecordDigest(id, rec);
    ++(rec.deleted() ? tombstones_[arc] : live_[arc]);
    ++(rec.deleted() ? totals_.tombstones : totals_.live);
    digests_[arc] += digest;
    totals_.digest += digest;
    return also ? also(id, rec) : true;
  });
  filled_ = s.ok();
  return s;
}

Status LedgerStore::EnsureFilled() { return filled_ ? Status::Ok() : Fill(); }

LedgerTally LedgerStore::ArcTally(uint32_t arc) const {
  arc %= kArcs;
  return LedgerTally{live_[arc], tombstones_[arc], digests_[arc]};
}

Result<LedgerTally> LedgerStore::PieceTally(const RangePiece& p) {
  if (p.whole_arc) return ArcTally(p.arc);
  LedgerTally t;
  if (p.empty()) return t;
  Status s = inner_->Scan(p.from, p.to, [&t](const Id& id, const wire::Record& rec) {
    ++(rec.deleted() ? t.tombstones : t.live);
    t.digest += RecordDigest(id, rec);
    return true;
  });
  if (!s.ok()) return s;
  return t;
}

Result<LedgerTally> LedgerStore::Tally(const Id& from, const Id& to) {
  if (Status s = EnsureFilled(); !s.ok()) return s;
  if (from == to) return totals_;
  LedgerTally t;
  const uint32_t n = PieceCount(from, to);
  for (uint32_t i = 0; i < n; ++i) {
    auto piece = PieceTally(Piece(from, to, i));
    if (!piece.ok()) return piece.status();
    t.Add(*piece);
  }
  return t;
}

Result<std::vector<uint64_t>> LedgerStore::PieceDigests(const Id& from, const Id& to) {
  if (Status s = EnsureFilled(); !s.ok()) return s;
  const uint32_t n = PieceCount(from, to);
  std::vector<uint64_t> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    auto piece = PieceTally(Piece(from, to, i));
    if (!piece.ok()) return piece.status();
    out.push_back(piece->digest);
  }
  return out;
}

}  // namespace chord
