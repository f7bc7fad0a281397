// Anti-entropy over fixed arcs: a ring range (from, to] is cut at the LedgerStore's arc
// boundaries into pieces (LedgerStore::Piece); both ends of a comparison compute the digest of
// every piece from their ledgers (only the two edge pieces are scanned), and only the records
// of the pieces whose digests differ are read, a bounded page at a time. Pure functions over a
// Store; called from the core's thread.
#ifndef CHORD_NODE_CORE_RANGE_DIGEST_H_
#define CHORD_NODE_CORE_RANGE_DIGEST_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "node/storage/ledger_store.h"
#include "node/storage/store.h"
#include "protocol/base/status.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"

namespace chord {

// Every piece index of (from, to]: 0 .. PieceCount - 1.
std::vector<uint32_t> AllPieces(const Id& from, const Id& to);

// The digest of every piece of (from, to] by a scan of the whole range (the ledger's answer
// without the ledger; for tests and checks).
[[nodiscard]] Result<std::vector<uint64_t>> ScanPieceDigests(Store* store, const Id& from,
                                                             const Id& to);

// A page of the records of some pieces of a range.
struct PiecePage {
  StorePage page;
  std::optional<Id> last;  // the last id visited: a next page continues after it
};

// The records of the `wanted` pieces of (from, to] (indexes out of range and duplicates are
// ignored) that `keep` accepts (all when empty), in range order, continuing after `after` when
// given (it must lie in the range), until the next one would go over `limits` (the first is
// always taken) or `max_visited` records were looked at; page.more says it stopped early. A
// page never ends between two records of one key id (keys whose SHA-1s collide): the next one
// continues after `last`.
[[nodiscard]] Result<PiecePage> ReadPieces(Store* store, const Id& from, const Id& to,
                                           std::vector<uint32_t> wanted,
                                           const std::optional<Id>& after, const PageLimits& limits,
                                           size_t max_visited, const Store::Filter& keep = nullptr);

}  // namespace chord

#endif  // CHORD_NODE_CORE_RANGE_DIGEST_H_
