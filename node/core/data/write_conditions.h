// Write conditions: the pure rules the key's owner applies to a compare-and-set (a put with
// if_absent or if_version, a delete with if_version) and to a put's time to live, decided
// against the owner's current record of the key. A record reads as absent when there is none,
// when it is a tombstone, or when its expiry time has passed; an absent key is at version 0
// for a condition. Pure functions; any thread (the OwnerService and the DataService use them).
#ifndef CHORD_NODE_CORE_DATA_WRITE_CONDITIONS_H_
#define CHORD_NODE_CORE_DATA_WRITE_CONDITIONS_H_

#include <cstdint>
#include <string>

#include "protocol/chord.pb.h"
#include "protocol/limits.h"

namespace chord {

// What a write asks of the current record.
struct WriteCondition {
  bool if_absent = false;
  uint64_t if_version = 0;  // 0: no version condition
  bool any() const { return if_absent || if_version != 0; }
};

// The outcome of checking a condition.
struct ConditionOutcome {
  bool holds = true;
  uint64_t current_version = 0;  // the current live version, 0 when the key is absent
  std::string error;             // when it does not hold: one sentence for the client
};

// The condition a put or delete request carries (none for a get).
WriteCondition ConditionOf(const wire::Envelope& request);
// True when `rec` (a stored record) reads as a live value at wall-clock time `now_wall_ms`:
// not a tombstone and not expired.
bool RecordLive(const wire::Record& rec, uint64_t now_wall_ms);
// Decides `cond` against `current` (nullptr: no record held). if_absent holds iff the key is
// absent; if_version V holds iff a live record is at exactly version V.
ConditionOutcome CheckCondition(const WriteCondition& cond, const wire::Record* current,
                                uint64_t now_wall_ms);
// What is wrong with `ttl_ms` as a put's time to live (one sentence), or "" (0 = none is fine).
std::string TtlProblem(uint64_t ttl_ms);
// What is wrong with the conditions of a put/delete request (both if_absent and if_version,
// or a bad ttl), or "".
std::string ConditionProblem(const wire::Envelope& request);
// The expiry time of a value written at `version` with `ttl_ms` (0 when ttl_ms is 0).
uint64_t ExpiryOf(uint64_t version, uint64_t ttl_ms);

}  // namespace chord

#endif  // CHORD_NODE_CORE_DATA_WRITE_CONDITIONS_H_
