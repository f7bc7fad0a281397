// Bucketed digests of a ring range, for anti-entropy: the range (from, to] is cut into equal
// arcs and each arc is summarised by an order-independent hash of its records (key id,
// version, writer, tombstone flag). Two stores whose digests agree hold the same versions;
// where they differ only the records of those arcs are exchanged. Pure functions over a Store;
// called from the core's thread.
#ifndef CHORD_NODE_CORE_RANGE_DIGEST_H_
#define CHORD_NODE_CORE_RANGE_DIGEST_H_

#include <cstdint>
#include <vector>

#include "node/storage/store.h"
#include "protocol/base/status.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"

namespace chord {

// Which of `buckets` equal arcs of (from, to] holds `id` (from == to: the whole ring).
// `id` must lie in the range.
uint32_t DigestBucket(const Id& from, const Id& to, uint32_t buckets, const Id& id);

// 64-bit summary of one record; digests add these up (mod 2^64).
uint64_t RecordDigest(const Id& key_id, const wire::Record& record);

// The digests of every arc of (from, to] over the records of `store`.
[[nodiscard]] Result<std::vector<uint64_t>> ComputeRangeDigests(Store* store, const Id& from,
                                                                const Id& to, uint32_t buckets);

}  // namespace chord

#endif  // CHORD_NODE_CORE_RANGE_DIGEST_H_
