// RingSurvey: everything chordctl knows about a ring at one moment, for `ring`, `check`,
// `ring --svg` and `watch`. It walks the successor pointers from a start node (WalkRing), then
// asks every node that some predecessor or successor-list pointer names but the walk did not
// meet (and any extra address the caller remembers) whether it answers: those that do join the
// ring order, those that do not are the Down positions. Blocking; each status call is bounded
// by the client timeout and the probes run in parallel, a few at a time. Called by chordctl's
// commands and watch loop.
#ifndef CHORD_TOOLS_CHORDCTL_RING_SURVEY_H_
#define CHORD_TOOLS_CHORDCTL_RING_SURVEY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"
#include "tools/client/ring_walk.h"

namespace chord::ctl {

// How a ring position looks from outside.
enum class NodeState {
  kUp,       // answers, joined, not leaving
  kJoining,  // answers but has not finished joining
  kLeaving,  // answers and is handing its keys over before it exits
  kDown,     // named by a pointer (or remembered by the caller) but does not answer
};

// "Up", "Joining", "Leaving", "Down".
const char* NodeStateName(NodeState state);

// One ring position: a vnode that answered, or an address that did not.
struct SurveyNode {
  Id id;
  std::string addr;
  NodeState state = NodeState::kUp;
  std::optional<wire::StatusResponse> status;  // set unless kDown
  std::string down_reason;                     // kDown: why the status call failed
  // kDown: who still points at it: "successor of A", "predecessor of B", "in the successor
  // list of C".
  std::vector<std::string> named_by;

  bool answers() const { return state != NodeState::kDown; }
  // It answered with key counts (false: Down, or its store could not be read).
  bool counted() const { return status && status->store_error().empty(); }
  uint64_t keys() const { return status ? status->keys() : 0; }
  uint64_t replica_keys() const { return status ? status->replica_keys() : 0; }
};

struct RingSurvey {
  std::string via;                     // the node the walk started from
  RingView walk;                       // the raw walk from `via` (what `ring --json` shows)
  std::vector<SurveyNode> nodes;       // every position met, Down ones included, by id
  std::vector<std::string> malformed;  // pointers whose id could not be read, as sentences

  // Indexes into `nodes` of the positions that answer, in ring order (ascending id).
  std::vector<size_t> Answering() const;
  size_t CountState(NodeState state) const;
  // Over the counted positions.
  uint64_t TotalKeys() const;
  uint64_t TotalReplicaKeys() const;
  // Positions that answer but could not read their stores to count.
  size_t Uncounted() const;
  // The fraction of the ring nodes[i] owns: (previous answering position, it]. 0 for a Down
  // position, 1 for the only answering one.
  double Share(size_t i) const;
  // The answering position before nodes[i] in ring order (wrapping); nullopt when none
  // answers.
  std::optional<size_t> AnsweringPredecessor(size_t i) const;
};

// At most this many addresses are probed in one survey (bounds a survey of a huge or
// confused ring), and at most kMaxParallelProbes at once.
inline constexpr size_t kMaxSurveyProbes = 4096;
inline constexpr size_t kMaxParallelProbes = 16;

// Walks from the first of `starts` that answers (the others are fall-backs, e.g. nodes met in
// an earlier survey), then probes every address a pointer names that the walk did not meet,
// plus `remembered`. Fails, with the first start's error, only when no start answers.
Result<RingSurvey> SurveyRing(const std::vector<std::string>& starts,
                              const std::vector<std::string>& remembered, uint64_t timeout_ms);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_RING_SURVEY_H_
