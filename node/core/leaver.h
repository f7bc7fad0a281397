// Leaver: a graceful leave. The node stops maintenance, waits while it holds its predecessor
// for a conditional write (RingState::PredecessorHeld), pings its successor (so that a dead
// one costs an RPC timeout, not a transfer's), hands every record it accounts for to it (or
// to the next successor if that fails), then tells its successor and predecessor that it is
// leaving, and finishes when both answered or timed out. Owned by the ChordNode; the node's
// thread only.
#ifndef CHORD_NODE_CORE_LEAVER_H_
#define CHORD_NODE_CORE_LEAVER_H_

#include <cstdint>

#include "node/core/hand_over.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "protocol/chord.pb.h"

namespace chord {

class Leaver {
 public:
  Leaver(NodeContext& ctx, HandOver& hand_over) : ctx_(ctx), hand_over_(hand_over) {}

  // Starts the leave; `left` gets `true` when it is done (also when the hand-off failed).
  void Start(OpRef left);
  void OnRpc(OpRef op, const wire::Envelope* response);
  void OnHandOverDone(OpRef op, bool ok);
  void OnTimer(OpRef op);

 private:
  enum Step : uint8_t { kPing = 1, kHandOver = 2, kNotify = 3, kWaitForHold = 4 };

  // Tries the head of the successor list, while attempts are left.
  void HandOff();
  // That successor is gone or refused: try the next one on the list.
  void NextSuccessor();
  void NotifyNeighbours();
  void Done();

  NodeContext& ctx_;
  HandOver& hand_over_;
  OpRef left_;
  int attempts_left_ = 0;
  NodeRef target_;
  int notices_pending_ = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_LEAVER_H_
