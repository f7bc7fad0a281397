// RingUpdates: the one place where a node's successor list and predecessor change after it
// has joined. It logs each change, counts it, remembers the nodes it adopts (MemberBook),
// and tells the MembershipListener (the
// replication policy), so that ring maintenance never needs to know what the data layer does
// about a new predecessor. Used by the membership parts on the node's thread.
#ifndef CHORD_NODE_CORE_MEMBERSHIP_RING_UPDATES_H_
#define CHORD_NODE_CORE_MEMBERSHIP_RING_UPDATES_H_

#include <optional>
#include <vector>

#include "node/core/membership/member_book.h"
#include "node/core/node_context.h"
#include "protocol/node_ref.h"

namespace chord {

// What ring maintenance tells the data layer.
class MembershipListener {
 public:
  virtual ~MembershipListener() = default;
  // The predecessor changed (to the value now in the ring state, possibly none).
  virtual void OnPredecessorChanged() = 0;
  // Our predecessor notified us; `adopted`: it has just become our predecessor; `wants_keys`:
  // it has just joined and waits for its keys.
  virtual void OnNotifiedByPredecessor(bool wants_keys, bool adopted) = 0;
};

class RingUpdates {
 public:
  RingUpdates(NodeContext& ctx, MemberBook& book) : ctx_(ctx), book_(book) {}
  void set_listener(MembershipListener* listener) { listener_ = listener; }

  void SetSuccessors(std::vector<NodeRef> list);
  // Sets the predecessor; with none, `floor` is where our range starts meanwhile (as far as
  // we know). The listener hears of the change with both in place.
  void SetPredecessor(std::optional<NodeRef> p, std::optional<Id> floor = std::nullopt);
  void NotifiedByPredecessor(bool wants_keys, bool adopted) {
    if (listener_ != nullptr) listener_->OnNotifiedByPredecessor(wants_keys, adopted);
  }

 private:
  NodeContext& ctx_;
  MemberBook& book_;
  MembershipListener* listener_ = nullptr;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_MEMBERSHIP_RING_UPDATES_H_
