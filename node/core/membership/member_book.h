// MemberBook: the ring members this node has heard from (successors, predecessors, notifiers, the
// addresses it joined through), at most kMaxMembers. When it is full, a newcomer (heard from for
// less than kEstablishedMs, first to last time) takes the place of the least recently heard from
// newcomer once kNewcomerSlots places are newcomers', else of the least recently heard from
// established member: churn during a partition (short lives on new addresses) can push out at most
// kNewcomerSlots of the long-standing members across the cut at a time (one that stays
// kEstablishedMs frees its place for the next), and a current neighbour is pushed out only when
// every other entry is one (so new neighbours find a place, pushing out members gone for good). It
// is kept in the store's meta value "members", so a restarted node remembers them (as established
// members: they were kept by an earlier life).
// Nothing in Zave's protocol ever contacts a member that has been dropped as dead; after a
// partition both sides have dropped each other, so the RingMerger probes the members of this
// book that are not among the node's current neighbours, now and then. The node's thread.
#ifndef CHORD_NODE_CORE_MEMBERSHIP_MEMBER_BOOK_H_
#define CHORD_NODE_CORE_MEMBERSHIP_MEMBER_BOOK_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "node/core/node_context.h"
#include "protocol/node_ref.h"

namespace chord {

class MemberBook {
 public:
  static constexpr size_t kMaxMembers = 64;
  // How long a member must have been heard from (first to last time) to be established.
  static constexpr uint64_t kEstablishedMs = 10 * 60 * 1000;
  // Places newcomers may fill by pushing out established members.
  static constexpr size_t kNewcomerSlots = 16;
  static_assert(kNewcomerSlots < kMaxMembers);

  explicit MemberBook(NodeContext& ctx) : ctx_(ctx) {}

  // Reads the members kept by an earlier life of this node (if any).
  void Load();
  // Writes the book to the store if it changed since the last save.
  void SaveIfChanged();
  // `n` answered or was adopted just now.
  void Saw(const NodeRef& n);
  void SawAll(const std::vector<NodeRef>& list) {
    for (const NodeRef& n : list) Saw(n);
  }
  // `n` is not a ring position (an address that answers as another one).
  void Forget(const NodeRef& n);
  // A member that is neither a successor, the predecessor nor a finger, picked at random;
  // nullopt when there is none.
  std::optional<NodeRef> PickForgotten();
  std::vector<NodeRef> members() const;

 private:
  struct Entry {
    NodeRef node;
    uint64_t first_ms = 0;  // first heard from in this life
    uint64_t seen_ms = 0;   // last heard from
    bool kept = false;      // loaded from an earlier life's book
    bool established() const { return kept || seen_ms - first_ms >= kEstablishedMs; }
  };

  NodeContext& ctx_;
  std::vector<Entry> entries_;
  bool dirty_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_MEMBERSHIP_MEMBER_BOOK_H_
