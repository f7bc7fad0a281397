#include "node/core/range_digest.h"

#include <algorithm>
#include <numeric>

namespace chord {

std::vector<uint32_t> AllPieces(const Id& from, const Id& to) {
  std::vector<uint32_t> all(LedgerStore::PieceCount(from, to));
  std::iota(all.begin(), all.end(), 0u);
  return all;
}

Result<std::vector<uint64_t>> ScanPieceDigests(Store* store, const Id& from, const Id& to) {
  std::vector<uint64_t> digests(LedgerStore::PieceCount(from, to), 0);
  Status s = store->Scan(from, to, [&](const Id& id, const wire::Record& rec) {
    digests[LedgerStore::PieceIndex(from, to, id)] += RecordDigest(id, rec);
    return true;
  });
  if (!s.ok()) return s;
  return digests;
}

Result<PiecePage> ReadPieces(Store* store, const Id& from, const Id& to,
                             std::vector<uint32_t> wanted, const std::optional<Id>& after,
                             const PageLimits& limits, size_t max_visited,
                             const Store::Filter& keep) {
  const uint32_t n = LedgerStore::PieceCount(from, to);
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  const uint32_t first = after ? LedgerStore::PieceIndex(from, to, *after) : 0;
  PiecePage out;
  StorePage& page = out.page;
  size_t visited = 0;
  for (uint32_t index : wanted) {
    if (index >= n || index < first || page.more) continue;
    RangePiece piece = LedgerStore::Piece(from, to, index);
    if (index == first && after) piece.from = *after;
    if (piece.empty()) continue;
    Status s = store->Scan(piece.from, piece.to, [&](const Id& id, const wire::Record& rec) {
      // The next page continues after `last`: a page never ends between two records of one
      // key id (keys whose SHA-1s collide), or the second would be skipped.
      const bool same_id = out.last && *out.last == id;
      if (visited >= max_visited && !same_id) {
        page.more = true;
        return false;
      }
      ++visited;
      if (keep && !keep(id, rec)) {
        out.last = id;
        return true;
      }
      const size_t size = Store::RecordBytes(rec);
      if (!page.records.empty() && !same_id &&
          (page.bytes + size > limits.max_bytes || page.records.size() >= limits.max_records)) {
        page.more = true;
        return false;
      }
      page.bytes += size;
      page.records.emplace_back(id, rec);
      out.last = id;
      return true;
    });
    if (!s.ok()) return s;
  }
  return out;
}

}  // namespace chord
