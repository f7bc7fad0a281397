// AntiEntropy: how the owner of a range keeps its replicas equal to it. A round cuts the
// owner's range at the ledger's fixed arcs into pieces (range_digest.h) and sends the pieces'
// digests, read from the store's ledger (only the two edge pieces are scanned), to each member
// of the replica set (one Session per replica, in parallel); the replica answers with the
// pieces that differ, the owner pulls the replica's records of those pieces (paged), keeps
// what is newer and pushes what the replica lacks or holds older. No step reads more than a
// bounded part of the store: a push that stopped at its bound leaves a cursor for that
// replica, and its next round goes on from there (so a difference behind many matching
// records is reached too). When every replica matched, tombstones
// past their grace period are purged, replicas first. Every round ends with a few steps of
// the clean-up walk. Started by Replication on its period; the node's thread only.
#ifndef CHORD_NODE_CORE_REPLICATION_ANTI_ENTROPY_H_
#define CHORD_NODE_CORE_REPLICATION_ANTI_ENTROPY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "node/core/replication/cleanup.h"
#include "node/core/replication/replication_policy.h"
#include "node/core/replication/tombstone_purge.h"
#include "protocol/chord.pb.h"

namespace chord {

class AntiEntropy {
 public:
  AntiEntropy(NodeContext& ctx, ReplicationPolicy& policy, Cleanup& cleanup, TombstonePurge& purge)
      : ctx_(ctx), policy_(policy), cleanup_(cleanup), purge_(purge) {}

  // Starts a round unless one is running or this node's range is unknown.
  void Round();
  bool running() const { return running_; }
  void OnRpc(OpRef op, const wire::Envelope* response);

 private:
  enum Step : uint8_t { kDigest = 1, kPull = 2, kPush = 3 };
  // The comparison with one replica.
  struct Session {
    NodeRef target;
    std::vector<uint32_t> differing;   // pieces whose digests differ
    std::optional<Id> after;           // where the next pull page continues
    std::vector<wire::Record> theirs;  // the replica's versions of those arcs (no values)
    int pages_left = 0;
    size_t pushed = 0;  // records sent to it
    // When the last pull or push was sent and the bytes of records that push carried, to time
    // the link (LinkPace).
    uint64_t sent_ms = 0;
    uint64_t pushed_bytes = 0;
    uint64_t pull_bytes = 0;  // the page size the last pull asked for (the pull pace then)
    size_t push_pace = 0;     // the LinkPace when the last push was read
    // Where this round's pull and push begin: after the cursor the last push left (none: at
    // the start of the differing pieces).
    std::optional<Id> start;
    // The cursor this round's push leaves once the replica has taken it (none: the next
    // round starts at the beginning).
    std::optional<Id> next;
  };
  // Where a push to one replica stopped at its bound, in the range it was reading.
  struct PushCursor {
    KeyRange range;
    Id after;
  };

  void SendDigests(size_t index, const std::vector<uint64_t>& digests);
  void OnDigests(size_t index, const wire::Envelope* response);
  void Pull(size_t index);
  void OnPulled(size_t index, const wire::Envelope* response);
  void Push(size_t index);
  void OnPushed(size_t index, const wire::Envelope* response);
  // The cursor of replica `index` for this range, if any.
  std::optional<Id> CursorOf(size_t index) const;
  // Keeps `next` as replica `index`'s cursor (none: forgets it).
  void KeepCursor(size_t index, const std::optional<Id>& next);
  // The comparison with replica `index` ended; `clean`: nothing differed.
  void SessionDone(bool clean);
  // Every session ended.
  void Finish();
  OpRef Ref(Step step, size_t index) const {
    return OpRef{OpKind::kAntiEntropy, step, static_cast<uint16_t>(index), round_};
  }

  NodeContext& ctx_;
  ReplicationPolicy& policy_;
  Cleanup& cleanup_;
  TombstonePurge& purge_;
  bool running_ = false;
  uint64_t round_ = 0;
  KeyRange range_;
  uint32_t pieces_ = 0;  // pieces of range_
  std::vector<NodeRef> targets_;
  std::vector<Session> sessions_;
  size_t pending_ = 0;
  bool clean_ = true;
  uint64_t returns_at_start_ = 0;  // TombstonePurge::returns() when the round started
  // By the replica's process; only members of the current replica set are kept.
  std::unordered_map<std::string, PushCursor> push_cursors_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_ANTI_ENTROPY_H_
