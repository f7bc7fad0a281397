// Last-writer-wins order between two versions of one key's record: the higher version wins;
// at equal versions a tombstone left by expiry loses to any other record, whoever wrote either
// (its version, the expired record's + 1, may also be one that its writer, or another
// coordinator whose clock is behind, gave a later write); then the writer's id decides, then
// tombstone over value, then the value bytes, so that every replica picks the same winner
// (a total order). Pure functions; any thread.
#ifndef CHORD_NODE_CORE_RECORD_ORDER_H_
#define CHORD_NODE_CORE_RECORD_ORDER_H_

#include <cstdint>
#include <string_view>

#include "protocol/chord.pb.h"

namespace chord {

// What the order reads of one version of a record: a stored record's fields, or what a
// replica's answer to a read of its copy says of the record it holds.
struct RecordRank {
  uint64_t version = 0;
  bool expiry = false;  // a tombstone left by expiry
  std::string_view writer;
  bool deleted = false;
  std::string_view value;
};

// True when `a` outranks `b`.
inline bool RankNewer(const RecordRank& a, const RecordRank& b) {
  if (a.version != b.version) return a.version > b.version;
  if (a.expiry != b.expiry) return b.expiry;
  if (a.writer != b.writer) return a.writer > b.writer;
  if (a.deleted != b.deleted) return a.deleted;
  return a.value > b.value;
}

inline RecordRank RankOf(const wire::Record& r) {
  return {r.version(), r.deleted() && r.expired(), r.writer(), r.deleted(), r.value()};
}

// True when `a` outranks `b` (a replica holding `b` must take `a`).
inline bool RecordNewer(const wire::Record& a, const wire::Record& b) {
  return RankNewer(RankOf(a), RankOf(b));
}

// The wall-clock milliseconds inside a hybrid-logical-clock version (see
// ChordNode::NextVersion): the upper 48 bits.
inline uint64_t VersionWallMs(uint64_t version) { return version >> 16; }

}  // namespace chord

#endif  // CHORD_NODE_CORE_RECORD_ORDER_H_
