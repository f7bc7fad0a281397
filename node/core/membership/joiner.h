// Joiner: a new node's way into the ring (Zave's join). It looks up, through a bootstrap
// member, the node p whose successor range holds our id, asks p itself for its successor
// list, and adopts it with p as predecessor; then it stabilizes at once and asks p to do the
// same, so that both sides learn of us without waiting a period. A failed attempt is retried
// every join_retry_ms through the next bootstrap address (members heard from on the way are
// added to them). Owned by Membership; the node's thread only.
#ifndef CHORD_NODE_CORE_MEMBERSHIP_JOINER_H_
#define CHORD_NODE_CORE_MEMBERSHIP_JOINER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "node/core/completions.h"
#include "node/core/lookup.h"
#include "node/core/membership/ring_updates.h"
#include "node/core/membership/stabilizer.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "protocol/chord.pb.h"

namespace chord {

class Joiner {
 public:
  Joiner(NodeContext& ctx, RingUpdates& updates, LookupService& lookups, Stabilizer& stabilizer)
      : ctx_(ctx), updates_(updates), lookups_(lookups), stabilizer_(stabilizer) {}

  // Joins through `bootstraps` (the node is kJoining); `joined` gets `true` once it is a
  // member.
  void Start(const std::vector<std::string>& bootstraps, OpRef joined);
  void OnLookupDone(OpRef op, const LookupOutcome& outcome);
  void OnRpc(OpRef op, const wire::Envelope* response);
  void OnTimer(OpRef op);

 private:
  enum Step : uint8_t { kLookup = 1, kGetState = 2, kRetry = 3 };

  void Attempt();
  void Retry(const std::string& why);
  // Adds a member heard from during a join attempt to the addresses joins go through.
  void Remember(const std::string& addr);
  OpRef Ref(Step step) const { return OpRef{OpKind::kJoin, step, 0, attempt_}; }

  NodeContext& ctx_;
  RingUpdates& updates_;
  LookupService& lookups_;
  Stabilizer& stabilizer_;
  std::vector<std::string> bootstraps_;
  size_t attempts_ = 0;
  uint64_t attempt_ = 0;  // answers to an earlier attempt are ignored
  std::string via_;       // the bootstrap address of the current attempt
  NodeRef predecessor_;   // p, once the lookup found it
  OpRef joined_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_MEMBERSHIP_JOINER_H_
