// ReplicaServer: what a node answers as a member of other nodes' replica sets: stores
// replicated records by last-writer-wins (Replicate), compares its copy of a range with the
// owner's digests (SyncDigest), serves the records of differing arcs a page at a time
// (SyncPull), and tells who holds copies of the range it owns (ReplicaSet). A Replicate with
// `hint_for` is a hinted hand-off: its records go to the HintStore (not the records), for a
// member this node knows (member book or ring pointers), and are refused when the store is
// full. Called by the ChordNode on the node's thread.
#ifndef CHORD_NODE_CORE_REPLICATION_REPLICA_SERVER_H_
#define CHORD_NODE_CORE_REPLICATION_REPLICA_SERVER_H_

#include "node/core/membership/membership.h"
#include "node/core/node_context.h"
#include "node/core/replication/hint_store.h"
#include "node/core/replication/replication_policy.h"
#include "protocol/chord.pb.h"

namespace chord {

class ReplicaServer {
 public:
  ReplicaServer(NodeContext& ctx, ReplicationPolicy& policy, HintStore& hints,
                const Membership& membership)
      : ctx_(ctx), policy_(policy), hints_(hints), membership_(membership) {}

  void HandleReplicate(ReplyToken from, const wire::Envelope& request);
  void HandleSyncDigest(ReplyToken from, const wire::Envelope& request);
  void HandleSyncPull(ReplyToken from, const wire::Envelope& request);
  void HandleReplicaSet(ReplyToken from, const wire::Envelope& request);

 private:
  bool leaving() const {
    return ctx_.ring.state == NodeState::kLeaving || ctx_.ring.state == NodeState::kLeft;
  }

  void HandleHint(ReplyToken from, const wire::Envelope& request);
  // Whether `n` is a ring member this node knows of (and not this process).
  bool KnownMember(const NodeRef& n) const;

  NodeContext& ctx_;
  ReplicationPolicy& policy_;
  HintStore& hints_;
  const Membership& membership_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_REPLICA_SERVER_H_
