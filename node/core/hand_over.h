// HandOver: moves records between ring neighbours. On a join, the successor sends its new
// predecessor the records that are now on the predecessor's side, (start, predecessor]; on a
// graceful leave, the leaver sends everything it accounts for to its successor. Records go
// in batches of at most transfer_batch_bytes (more only by the other keys of the last one's
// SHA-1, which a batch never splits), one in flight, each continuing after the last key id
// sent; the last one is marked so. After a batch is acknowledged the sent records are
// erased here (where still unchanged) unless copies are kept (a join with replication, where
// the clean-up walk drops them later), except those the receiver refused as outside its
// limits (TransferResponse.refused_at). Every batch also names the members this node counts
// missing (MissingMembers), and the names in a neighbour's batch are noted. It also receives
// hand-overs (Transfer). Owned by the ChordNode; started by the replication policy (joins)
// and the Leaver; the node's thread.
#ifndef CHORD_NODE_CORE_HAND_OVER_H_
#define CHORD_NODE_CORE_HAND_OVER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "node/core/missing_members.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "node/core/record_store.h"
#include "protocol/chord.pb.h"
#include "protocol/node_ref.h"

namespace chord {

class HandOver {
 public:
  // How long records a predecessor refused wait before they are sent to it again.
  static constexpr uint64_t kRefusedRetryMs = 60'000;

  explicit HandOver(NodeContext& ctx) : ctx_(ctx) {}
  HandOver(const HandOver&) = delete;
  HandOver& operator=(const HandOver&) = delete;

  // Hands the records outside (predecessor, self] to the predecessor. With `announce` it is
  // sent even when empty (a new predecessor waits for the last batch before serving its
  // range); otherwise only when there is something to send. `keep_copies`: the records stay
  // here after the predecessor acknowledged them. A no-op while a hand-over runs, and, with
  // copies kept (a join with replication), while the predecessor is held for a conditional
  // write (RingState::PredecessorHeld, keys_held_back_for).
  void ToPredecessor(bool announce, bool keep_copies);
  // Hands everything this ring position accounts for to `to` (a leave); `true` goes to
  // `parent` once `to` has acknowledged the last batch, `false` when a batch failed.
  void ForLeave(const NodeRef& to, OpRef parent);
  bool busy() const { return current_.has_value(); }
  // Who every batch names missing, and who is told what a received batch names; none: no
  // one (set once by the ChordNode, before any hand-over).
  void set_missing_members(MissingMembers* missing) { missing_ = missing; }

  void OnRpc(OpRef op, const wire::Envelope* response);
  void HandleTransfer(ReplyToken from, const wire::Envelope& request);

 private:
  struct Batch {
    uint64_t id = 0;
    NodeRef to;
    bool for_leave = false;
    bool keep_copies = false;
    OpRef parent;
    std::vector<RecordStamp> sent;
    uint64_t bytes = 0;       // of the records
    uint64_t wire_bytes = 0;  // of the whole message (LinkPace)
    size_t pace = 0;          // the peer's LinkPace when it was sent
    bool more = false;
    uint64_t started_ms = 0;
    uint64_t refused = 0;  // records the receiver refused in this hand-over's batches so far
  };
  // The last complete join hand-over left records here that its receiver refused; they are
  // not sent again before `until_ms` (monotonic) while nothing else is left.
  struct RefusedLeft {
    NodeRef to;
    uint64_t records = 0;
    uint64_t until_ms = 0;
  };

  // Sends the next batch of `batch`'s range after `after`.
  void Send(Batch batch, const std::optional<Id>& after);
  // Erases what the acknowledged batch carried, unless copies stay, it came back to us, or
  // the receiver refused it (`answer`); returns how many records were kept as refused.
  uint64_t DropSent(const Batch& batch, const wire::TransferResponse& answer);
  void Finish(const Batch& batch, bool ok);

  NodeContext& ctx_;
  std::optional<Batch> current_;
  std::optional<RefusedLeft> refused_left_;  // not sent again while nothing else is left
  uint64_t next_id_ = 1;
  bool keep_copies_on_join_ = false;
  MissingMembers* missing_ = nullptr;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_HAND_OVER_H_
