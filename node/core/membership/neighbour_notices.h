// NeighbourNotices: what a node does when its neighbours tell it something. A Notify ("I might
// be your predecessor") is rectify: a notifier between the predecessor and us is adopted, but
// only once it has answered us itself (a notify could name anyone); one outside is kept out
// unless the current predecessor does not answer as a member or a leaver. A Leave notice makes us
// forget the leaver, take over its range start or merge its successor list into ours; a notice that
// does not come verifiably from the leaver (no certificate says so) is acted on only if the leaver
// no longer says it is a member. Owned by Membership; the node's thread only.
#ifndef CHORD_NODE_CORE_MEMBERSHIP_NEIGHBOUR_NOTICES_H_
#define CHORD_NODE_CORE_MEMBERSHIP_NEIGHBOUR_NOTICES_H_

#include <cstdint>
#include <deque>
#include <unordered_map>

#include "node/core/membership/member_book.h"
#include "node/core/membership/ring_updates.h"
#include "node/core/membership/stabilizer.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "protocol/chord.pb.h"
#include "protocol/node_ref.h"

namespace chord {

class NeighbourNotices {
 public:
  NeighbourNotices(NodeContext& ctx, RingUpdates& updates, MemberBook& book, Stabilizer& stabilizer)
      : ctx_(ctx), updates_(updates), book_(book), stabilizer_(stabilizer) {}

  void HandleNotify(ReplyToken from, const wire::Envelope& request);
  // `verified`: the connection's certificate shows the notice comes from the leaver itself.
  void HandleLeave(ReplyToken from, const wire::Envelope& request, bool verified);
  void OnRpc(OpRef op, const wire::Envelope* response);

 private:
  enum Step : uint8_t { kPingPredecessor = 1, kConfirmNotifier = 2, kConfirmLeaver = 3 };
  struct Check {
    NodeRef asked;
    NodeRef candidate;       // kPingPredecessor: who replaces `asked` if it is dead
    bool wants_keys = false;
    wire::LeaveRequest leave;  // kConfirmLeaver
    Step step = kPingPredecessor;
  };

  void Rectify(const NodeRef& n, bool wants_keys);
  void Ask(Step step, Check check);
  void OnPredecessorPing(const Check& check, const wire::Envelope* response);
  void OnNotifierState(const Check& check, const wire::Envelope* response);
  void OnLeaverState(const Check& check, const wire::Envelope* response);
  // `verified`: the notice is the leaver's own (its certificate), not only confirmed by its
  // silence.
  void ApplyLeave(const NodeRef& leaver, const wire::LeaveRequest& leave, bool verified);
  // The leaver's successor list merged into ours (it was our successor).
  void TakeLeaverSuccessors(const NodeRef& leaver, const wire::LeaveRequest& leave);

  NodeContext& ctx_;
  RingUpdates& updates_;
  MemberBook& book_;
  Stabilizer& stabilizer_;
  std::unordered_map<uint64_t, Check> checks_;
  uint64_t next_check_ = 1;
  // Nodes that told us they left, with when (mono ms): their notifies sent before the leave
  // and arriving after it are ignored for kDepartedForgetRpcs RPC timeouts. Not for ever: a
  // node back on its address may notify us without asking for keys (its join went through
  // another node), and the confirmation of a notifier (it answers as a member) keeps a node
  // that is gone out anyway. Bounded.
  struct Departed {
    Id id;
    uint64_t at_ms = 0;
  };
  static constexpr uint64_t kDepartedForgetRpcs = 4;
  std::deque<Departed> departed_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_MEMBERSHIP_NEIGHBOUR_NOTICES_H_
