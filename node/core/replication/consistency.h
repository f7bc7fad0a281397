// Consistency levels: how many members of a key's replica set (R processes: the owner and
// the next distinct processes of its successor list) must store a write or answer a read
// (README "Consistency levels"). ONE = 1, QUORUM = R / 2 + 1, ALL = R; a request's
// `required` (1..R) overrides the level. Writes default to QUORUM, reads to ONE. Pure
// functions, used by the WriteCoordinator and the OwnerService; any thread.
#ifndef CHORD_NODE_CORE_REPLICATION_CONSISTENCY_H_
#define CHORD_NODE_CORE_REPLICATION_CONSISTENCY_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol/chord.pb.h"

namespace chord {

struct Needed {
  uint32_t count = 1;       // members that must store the write / answer the read
  bool hints_count = true;  // whether a copy kept as a hint counts (not for ALL)
  std::string problem;      // a sentence when the request asks for something impossible
};

// A write with `replicas` (R) copies whose replica set has `set_size` distinct processes now
// (the owner included). DEFAULT is QUORUM of R, but capped at a quorum of `set_size` when the
// ring itself is smaller than R (a ring of one keeps accepting writes); an explicit level or
// count is never capped: it fails unless it reaches its count.
Needed WritesNeeded(wire::Consistency level, uint32_t required, int replicas, size_t set_size);
// A read: DEFAULT and ONE read the owner's copy alone (count 1).
Needed ReadsNeeded(wire::Consistency level, uint32_t required, int replicas);
// How a request's level is named in answers: "consistency all", "required 2", ...
std::string LevelName(wire::Consistency level, uint32_t required, bool write);

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_CONSISTENCY_H_
