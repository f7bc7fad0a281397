// Stabilizer: the stabilization round of Zave's corrected protocol (shared/RING.md), one at a
// time. Step 1 asks the successor for its predecessor and list and adopts [successor] + its
// list; a successor that does not answer (asked twice) or is leaving is dropped and the next
// one asked. Step 2, when the successor's predecessor lies between us, asks that candidate
// for its list and adopts it only if it answers, merged with what the old head just told us.
// Then it notifies the successor. Every update is applied from one answer, so the steps are
// atomic in Zave's sense. Owned by Membership; the node's thread only.
#ifndef CHORD_NODE_CORE_MEMBERSHIP_STABILIZER_H_
#define CHORD_NODE_CORE_MEMBERSHIP_STABILIZER_H_

#include <cstdint>

#include "node/core/membership/ring_updates.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "protocol/chord.pb.h"
#include "protocol/node_ref.h"

namespace chord {

class Stabilizer {
 public:
  Stabilizer(NodeContext& ctx, RingUpdates& updates) : ctx_(ctx), updates_(updates) {}

  // Starts a round unless one is running.
  void Run();
  // Someone asked for a round now (StabilizeNow): runs one, or another one right after the
  // current round, whose answers may predate the news.
  void RunSoon();
  void OnRpc(OpRef op, const wire::Envelope* response);
  bool running() const { return running_; }

 private:
  enum Step : uint8_t { kFromSuccessor = 1, kFromCandidate = 2 };

  void FromSuccessor(int attempts_left, bool head_retried);
  void OnSuccessorState(const wire::Envelope* response);
  void FromCandidate(const NodeRef& candidate);
  void OnCandidateState(const wire::Envelope* response);
  void Finish();
  // Drops the head of the successor list and carries on with the next entry.
  void DropHead(bool dead);

  NodeContext& ctx_;
  RingUpdates& updates_;
  bool running_ = false;
  bool again_ = false;
  uint64_t round_ = 0;  // answers to an earlier round are ignored
  // The step in progress.
  NodeRef asked_;
  int attempts_left_ = 0;
  bool head_retried_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_MEMBERSHIP_STABILIZER_H_
