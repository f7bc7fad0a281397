// Last-writer-wins order between two versions of one key's record: the higher version wins;
// equal versions are ordered by the writer's id, then tombstone over value — except a
// tombstone left by expiry, which loses to a value (its version, the expired record's + 1,
// may also be the one its writer gave a later put) — then by value bytes, so that every
// replica picks the same winner. Pure functions; any thread.
#ifndef CHORD_NODE_CORE_RECORD_ORDER_H_
#define CHORD_NODE_CORE_RECORD_ORDER_H_

#include <cstdint>

#include "protocol/chord.pb.h"

namespace chord {

// True when `a` outranks `b` (a replica holding `b` must take `a`).
inline bool RecordNewer(const wire::Record& a, const wire::Record& b) {
  if (a.version() != b.version()) return a.version() > b.version();
  if (a.writer() != b.writer()) return a.writer() > b.writer();
  if (a.deleted() != b.deleted()) return a.deleted() ? !a.expired() : b.expired();
  return a.value() > b.value();
}

// The wall-clock milliseconds inside a hybrid-logical-clock version (see
// ChordNode::NextVersion): the upper 48 bits.
inline uint64_t VersionWallMs(uint64_t version) { return version >> 16; }

}  // namespace chord

#endif  // CHORD_NODE_CORE_RECORD_ORDER_H_
