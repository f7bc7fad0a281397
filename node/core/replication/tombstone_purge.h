// TombstonePurge: erasing tombstones older than the grace period from a range. With replicas
// the owner asks them first (Purge: erase where still that tombstone at that version) and
// erases its own only once all of them confirmed; if one misses the purge, the next digest
// comparison sends it the tombstone again (never the deleted value), and the purge is
// retried. Started by AntiEntropy after a round in which every replica matched; the node's
// thread only. A round reads only the arcs whose ledger counts tombstones, and at most a
// bounded number of records; the next round continues after the last one it looked at.
//
// A member that left this node's replica group (its replicas and, for the range it may take
// over, its predecessor) without being seen alive since (gone from the successor list, or a
// predecessor whose range this node took over) is "missing": it may come back with live
// copies of keys whose tombstones a purge would erase. While any member is missing, nothing
// is purged here; a missing member is forgotten when it is back in the group (the next clean
// round includes it, and its stale copies lose to the kept tombstones; a round in flight when
// it came back, which compared without it, purges nothing: AntiEntropy checks returns()) or
// after
// kForgetMissingMs (or 10 grace periods, if longer): a node down longer than that must be
// restarted with an empty data directory.
#ifndef CHORD_NODE_CORE_REPLICATION_TOMBSTONE_PURGE_H_
#define CHORD_NODE_CORE_REPLICATION_TOMBSTONE_PURGE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "protocol/chord.pb.h"

namespace chord {

class TombstonePurge {
 public:
  explicit TombstonePurge(NodeContext& ctx) : ctx_(ctx) {}

  static constexpr uint64_t kForgetMissingMs = 24ull * 3600 * 1000;

  // The replica group at the start of an anti-entropy round (its replicas and this node's
  // predecessor); called before Start, with the ring's successor list and predecessor.
  void NoteGroup(const std::vector<NodeRef>& replicas, const RingState& ring);
  // Whether a member of the group is missing (so nothing may be purged).
  bool MembersMissing();
  size_t missing() const { return missing_.size(); }
  // How many times a missing member was seen back. A round that started before a return
  // compared without that member, which may hold live copies of what the round's tombstones
  // deleted: its purge must wait for a round that includes it.
  uint64_t returns() const { return returns_; }
  // Purges the expired tombstones of `range` (a page of them) on `replicas`, then here;
  // nothing while a member is missing.
  void Start(const KeyRange& range, const std::vector<NodeRef>& replicas);
  void OnRpc(OpRef op, const wire::Envelope* response);
  void HandlePurge(ReplyToken from, const wire::Envelope& request);

 private:
  struct PurgeOp {
    std::vector<wire::Record> tombstones;
    size_t pending = 0;
    bool all_ok = true;
  };
  void EraseHere(const std::vector<wire::Record>& tombstones);

  NodeContext& ctx_;
  std::unordered_map<uint64_t, PurgeOp> ops_;
  std::vector<std::string> replicas_;        // processes of the last group's replicas
  std::optional<NodeRef> predecessor_;       // the last group's predecessor
  std::map<std::string, uint64_t> missing_;  // process -> since when (mono ms)
  uint64_t returns_ = 0;
  uint64_t next_id_ = 1;
  std::optional<Id> after_;  // where the next look for tombstones continues
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_TOMBSTONE_PURGE_H_
