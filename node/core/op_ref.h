// OpRef: names an operation in flight inside a ChordNode and the step it is at. Every pending
// RPC, armed timer and child operation carries the OpRef of the operation waiting for it,
// instead of a closure: when the answer comes, the node hands it to the part that owns that
// kind of operation, which finds the operation by id (an operation that is gone by then is
// simply not found). Plain value type; any thread.
#ifndef CHORD_NODE_CORE_OP_REF_H_
#define CHORD_NODE_CORE_OP_REF_H_

#include <compare>
#include <cstdint>

namespace chord {

// Who owns an operation (and so who gets its answers). The part that handles each kind is
// named after it.
enum class OpKind : uint8_t {
  kNone,              // nobody waits: the answer is dropped (fire-and-forget)
  kNode,              // the ChordNode itself: its round timer, the join and leave it started
  kExternalLookup,    // a lookup started through ChordNode::StartLookup (its driver)
  kLookup,            // one iterative lookup (LookupService)
  kClientLookup,      // a client's Lookup request (LookupService)
  kJoin,              // joining the ring (Joiner)
  kStabilize,         // a stabilization round (Stabilizer)
  kCheckPredecessor,  // the predecessor liveness ping (Membership)
  kRectify,           // a notify that needs the current predecessor pinged (Membership)
  kFixFingers,        // refreshing one finger (Membership)
  kMerge,             // asking a remembered member whether it is another ring's (RingMerger)
  kHandOver,          // handing records over on a join or a leave (HandOver)
  kLeave,             // a graceful leave (Leaver)
  kDataOp,            // a client's get/put/del routed to its owner (DataService)
  kDirect,            // a get/put/del addressed to this node as owner or replica (OwnerService)
  kWrite,             // a write this node coordinates as owner (WriteCoordinator)
  kReplicaRead,       // reading the copies of a key on its replicas (ReplicaReads)
  kRepair,            // records offered to a replica; answers are counted (ReplicaReads)
  kAntiEntropy,       // one anti-entropy round of the owner's range (AntiEntropy)
  kPurge,             // purging expired tombstones everywhere (AntiEntropy)
  kCleanup,           // the clean-up walk over ranges this node copies (Cleanup)
  kWatch,             // a watcher waiting for a change of its key (WatchService)
  kQuorumRead,        // a read that needs several replicas to answer (QuorumRead)
  kHint,              // delivering hinted records to the member they are for (HintDeliverer)
  kConditionRead,     // a conditional write's read of the replicas before the owner decides
                      // (OwnerService)
};

struct OpRef {
  OpKind kind = OpKind::kNone;
  uint8_t step = 0;    // which step of the operation (each part numbers its own)
  uint16_t index = 0;  // which target of a fan-out, where a step sends to several
  uint64_t id = 0;     // which operation of that kind

  OpRef WithStep(uint8_t s, uint16_t i = 0) const { return OpRef{kind, s, i, id}; }
  friend auto operator<=>(const OpRef&, const OpRef&) = default;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_OP_REF_H_
