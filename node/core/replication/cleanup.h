// Cleanup: the walk that drops copies this process no longer has to hold. After each
// anti-entropy round it visits a few of the ranges this node holds records of but does not
// own, one owner's range at a time (continuing where the last round stopped): it looks the
// range's owner up, asks it for its replica set, and if this process is not in it, first
// sends its copies to every holder and erases them here only once all of them confirmed
// (where still unchanged), a page at a time. A record a holder refused (outside its limits)
// is kept here; the rest of its page is erased and the walk goes on after it. Started by
// AntiEntropy; the node's thread only.
#ifndef CHORD_NODE_CORE_REPLICATION_CLEANUP_H_
#define CHORD_NODE_CORE_REPLICATION_CLEANUP_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "node/core/completions.h"
#include "node/core/lookup.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "node/core/record_store.h"
#include "node/core/replication/replication_policy.h"
#include "protocol/chord.pb.h"

namespace chord {

class Cleanup {
 public:
  Cleanup(NodeContext& ctx, ReplicationPolicy& policy, LookupService& lookups)
      : ctx_(ctx), policy_(policy), lookups_(lookups) {}

  // Examines up to `ranges` foreign ranges, unless a walk is under way.
  void Run(int ranges);
  bool running() const { return running_; }
  void OnLookupDone(OpRef op, const LookupOutcome& outcome);
  void OnRpc(OpRef op, const wire::Envelope* response);

 private:
  enum Step : uint8_t { kFindOwner = 1, kReplicaSet = 2, kDrop = 3 };

  // Visits the next foreign range, if any is left for this round.
  void Next();
  void OnReplicaSet(const wire::Envelope* response);
  // Sends our copies of (from, to] to every holder (a page at a time, the next one after the
  // last page of the same range that every holder answered).
  void Drop(const Id& from, const Id& to, std::vector<NodeRef> holders);
  void OnDropped(const wire::Envelope* response);
  // The range is done: continue after `cursor`, or stop this round (nullopt).
  void Advance(const std::optional<Id>& cursor);
  OpRef Ref(Step step) const { return OpRef{OpKind::kCleanup, step, 0, walk_}; }

  NodeContext& ctx_;
  ReplicationPolicy& policy_;
  LookupService& lookups_;
  bool running_ = false;
  uint64_t walk_ = 0;  // answers to an earlier range are ignored
  int ranges_left_ = 0;
  std::optional<Id> cursor_;  // where the walk continues
  // The range being examined.
  Id key_id_;
  NodeRef owner_;
  std::vector<NodeRef> holders_;
  Id from_;  // where the range begins
  std::vector<RecordStamp> sent_;
  std::vector<bool> refused_;  // by position in sent_: some holder refused it
  // Where the next page of the range (from, to] begins: after the last record of a page that
  // every holder answered.
  struct Resume {
    Id from;
    Id to;
    Id after;
  };
  std::optional<Resume> resume_;
  size_t pending_ = 0;
  bool all_ok_ = true;
  bool all_answered_ = true;  // every holder answered OK (some may have refused records)
  bool more_ = false;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_CLEANUP_H_
