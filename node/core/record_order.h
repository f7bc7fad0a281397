// Last-writer-wins order between two versions of one key's record: the higher version wins;
// at equal versions a tombstone left by expiry loses to any other record, whoever wrote either
// (its version, the expired record's + 1, may also be one that its writer, or another
// coordinator whose clock is behind, gave a later write); then the writer's id decides, then
// tombstone over value, then the value bytes, so that every replica picks the same winner
// (a total order). Pure functions; any thread.
#ifndef CHORD_NODE_CORE_RECORD_ORDER_H_
#define CHORD_NODE_CORE_RECORD_ORDER_H_

#include <cstdint>

#include "protocol/chord.pb.h"

namespace chord {

// True when `a` outranks `b` (a replica holding `b` must take `a`).
inline bool RecordNewer(const wire::Record& a, const wire::Record& b) {
  if (a.version() != b.version()) return a.version() > b.version();
  const bool a_expiry = a.deleted() && a.expired();
  const bool b_expiry = b.deleted() && b.expired();
  if (a_expiry != b_expiry) return b_expiry;
  if (a.writer() != b.writer()) return a.writer() > b.writer();
  if (a.deleted() != b.deleted()) return a.deleted();
  return a.value() > b.value();
}

// The wall-clock milliseconds inside a hybrid-logical-clock version (see
// ChordNode::NextVersion): the upper 48 bits.
inline uint64_t VersionWallMs(uint64_t version) { return version >> 16; }

}  // namespace chord

#endif  // CHORD_NODE_CORE_RECORD_ORDER_H_
