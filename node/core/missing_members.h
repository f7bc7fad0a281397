// MissingMembers: who may hold stale copies of this node's records (the tombstone purge's
// missing members, see TombstonePurge). A hand-over batch carries them, and its receiver,
// which takes over some of those records, counts them missing too. Implemented by
// TombstonePurge; called by HandOver on the node's thread.
#ifndef CHORD_NODE_CORE_MISSING_MEMBERS_H_
#define CHORD_NODE_CORE_MISSING_MEMBERS_H_

#include <cstdint>
#include <vector>

#include "protocol/node_ref.h"

namespace chord {

// One missing member and how long it has been missing.
struct MissingMember {
  NodeRef member;
  uint64_t missing_for_ms = 0;
};

// What a hand-over carries.
struct MissingList {
  std::vector<MissingMember> members;
  // The sender could not remember every missing member: nothing is purged for this long.
  uint64_t overflow_ms_left = 0;
};

class MissingMembers {
 public:
  virtual ~MissingMembers() = default;
  // Who is missing now.
  virtual MissingList Missing() const = 0;
  // What a hand-over's sender counted missing; each member counts as missing for as long as
  // it did there (so a name handed on does not start its day again).
  virtual void NoteHandedOver(const MissingList& list) = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_MISSING_MEMBERS_H_
