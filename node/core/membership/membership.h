// Membership: ring maintenance of one ring position, Zave's corrected protocol
// (shared/RING.md): joining (Joiner), the periodic round (Stabilizer, the predecessor
// liveness check, FingerFixer, and RingMerger's probes of remembered members that heal
// partitions), rectify on notify, and the answers other nodes need for theirs (GetState,
// Notify, Leave notices, StabilizeNow, MergeHint). Changes to the successor list and
// predecessor go through RingUpdates, which tells the data layer. Called by the ChordNode on
// the node's thread.
#ifndef CHORD_NODE_CORE_MEMBERSHIP_MEMBERSHIP_H_
#define CHORD_NODE_CORE_MEMBERSHIP_MEMBERSHIP_H_

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "node/core/completions.h"
#include "node/core/lookup.h"
#include "node/core/membership/finger_fixer.h"
#include "node/core/membership/joiner.h"
#include "node/core/membership/member_book.h"
#include "node/core/membership/neighbour_notices.h"
#include "node/core/membership/ring_merger.h"
#include "node/core/membership/ring_updates.h"
#include "node/core/membership/stabilizer.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "protocol/chord.pb.h"

namespace chord {

class Membership {
 public:
  Membership(NodeContext& ctx, LookupService& lookups)
      : ctx_(ctx),
        book_(ctx),
        updates_(ctx, book_),
        stabilizer_(ctx, updates_),
        joiner_(ctx, updates_, lookups, stabilizer_),
        fingers_(ctx, lookups),
        merger_(ctx, updates_, book_),
        notices_(ctx, updates_, book_, stabilizer_) {
    book_.Load();
  }
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  void set_listener(MembershipListener* listener) { updates_.set_listener(listener); }

  // Creates a ring of one (no bootstraps) or starts joining; `joined` gets `true` when
  // this node is a member.
  void Start(const std::vector<std::string>& bootstraps, OpRef joined);
  // The periodic round: stabilize, check the predecessor, refresh a finger, now and then
  // probe a remembered member (partition healing) and keep the remembered members.
  void Round();
  // A coordinator could not reach `suspect`: if it is our predecessor, check it now.
  void Suspect(const Id& suspect);

  std::vector<NodeRef> known_members() const { return book_.members(); }
  uint64_t ring_merges() const { return merger_.merges(); }

  void OnRpc(OpRef op, const wire::Envelope* response);
  void OnLookupDone(OpRef op, const LookupOutcome& outcome);
  void OnTimer(OpRef op);

  void HandleGetState(ReplyToken from, const wire::Envelope& request);
  void HandleNotify(ReplyToken from, const wire::Envelope& request) {
    notices_.HandleNotify(from, request);
  }
  // `verified`: the connection's certificate shows the notice comes from the leaver itself.
  void HandleLeave(ReplyToken from, const wire::Envelope& request, bool verified) {
    notices_.HandleLeave(from, request, verified);
  }
  void HandleStabilizeNow(ReplyToken from, const wire::Envelope& request);
  void HandleMergeHint(ReplyToken from, const wire::Envelope& request) {
    merger_.HandleMergeHint(from, request);
  }

 private:
  enum Step : uint8_t { kPing = 1 };

  void CheckPredecessor();
  void OnPredecessorPing(const wire::Envelope* response);

  NodeContext& ctx_;
  MemberBook book_;
  RingUpdates updates_;
  Stabilizer stabilizer_;
  Joiner joiner_;
  FingerFixer fingers_;
  RingMerger merger_;
  NeighbourNotices notices_;
  uint64_t rounds_ = 0;
  bool checking_predecessor_ = false;
  NodeRef pinged_predecessor_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_MEMBERSHIP_MEMBERSHIP_H_
