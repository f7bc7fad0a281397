// WriteCoordinator: a put or delete at the key's owner. The record arrives with the version
// the coordinating node gave it where the ring first accepted it (a record without one is
// versioned here). The owner stores it by last-writer-wins, sends it to the other members of
// the replica set in parallel and answers once each has answered: a silent member is
// presumed dead and does not block the write; a member that is leaving is replaced by the
// next distinct process of the successor list. A version is never minted again here: a
// write that loses to a newer record (held here or by a replica, whose newer records the
// owner then takes) is answered OK with `superseded_by`, and only the coordinator, while its
// client still waits, may retry it under a new version. So a copy of a write that arrives
// late can never outrank one acknowledged after it. A write that waits for replicas is a
// WriteOp owned here, whose answer goes to the requester's OpRef as a completion; one settled
// within Start (no other member, a refusal) is answered by Start's caller. Started by the
// OwnerService; node's thread.
//
// Consistency (README "Consistency levels"): the write needs `Needed.count` stores among the
// replica set, the owner's own included; the answer carries `acks` and `required`, and a
// write that fell short is answered UNAVAILABLE (and stays where it was stored: nothing is
// rolled back). Hinted hand-off: a member that does not answer is replaced by the next live
// process of the successor list not yet asked, sent the record with `hint_for` naming the
// member; its OK counts toward the count unless the level is ALL (sloppy quorum).
#ifndef CHORD_NODE_CORE_REPLICATION_WRITE_COORDINATOR_H_
#define CHORD_NODE_CORE_REPLICATION_WRITE_COORDINATOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "node/core/replication/replication_policy.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"

namespace chord {

class WriteCoordinator {
 public:
  WriteCoordinator(NodeContext& ctx, ReplicationPolicy& policy) : ctx_(ctx), policy_(policy) {}
  WriteCoordinator(const WriteCoordinator&) = delete;
  WriteCoordinator& operator=(const WriteCoordinator&) = delete;

  // Writes `record` (key and value, or a tombstone, with its version and writer, or none).
  // `level` and `required` are the request's consistency (see consistency.h). Returns true
  // when the write is settled within this call (no other member to wait for, refused, or
  // outranked here), with its answer built in `*answer` (empty on entry): the caller delivers
  // it to `requester`, and no WriteOp was kept. Otherwise returns false, and the answer
  // reaches `requester` as a completion.
  [[nodiscard]] bool Start(const Id& key_id, wire::Record&& record, OpRef requester,
                           wire::Consistency level, uint32_t required, wire::DataResponse* answer);
  void OnRpc(OpRef op, const wire::Envelope* response);
  size_t in_flight() const { return ops_.size(); }

 private:
  struct WriteOp {
    Id key_id;
    wire::Record record;
    OpRef requester;
    size_t pending = 0;
    uint64_t superseded_by = 0;  // a newer version found here or on a replica
    // A holder kept a record that outranks this write: a newer version, or the same version
    // from another writer. The coordinator must stamp it again (superseded_by in the answer),
    // also when that version equals this write's.
    bool outranked = false;
    bool logged = false;  // stored here, so its own change is in the watch log
    std::string failed;                            // why a replica could not store it
    std::vector<NodeRef> sent_to;                  // by the index of the OpRef of each request
    std::vector<std::optional<NodeRef>> hint_for;  // by index: the member a hint stands for
    uint32_t needed = 1;                           // stores the write needs (consistency.h)
    bool hints_count = true;
    uint32_t acks = 0;    // members of the replica set that stored it (the owner included)
    uint32_t hinted = 0;  // copies kept as hints for members that did not answer
    // The request's level and -w count, for a failed write's sentence (LevelName).
    wire::Consistency level = wire::CONSISTENCY_DEFAULT;
    uint32_t required = 0;
    bool chain_broken = false;  // a replica held a change of the watched key we lack
  };

  // Whether `process` has been asked for this write (this node counts as asked).
  bool Asked(const WriteOp& w, std::string_view process) const;
  // The replication message of write `w`'s record: a hint for `hint_for` when set, else
  // linked to the key's change before it when the key is watched.
  wire::Envelope ReplicateRequest(const WriteOp& w, const std::optional<NodeRef>& hint_for) const;
  // Sends write `id`'s record to `target` (as a hint for `hint_for` when set).
  void SendTo(uint64_t id, const NodeRef& target,
              const std::optional<NodeRef>& hint_for = std::nullopt);
  // Sends write `id`'s record to each of `targets` in one message held once (its first
  // sending, to the replica set).
  void SendToAll(uint64_t id, const std::vector<NodeRef>& targets);
  // A member did not answer: its copy goes to the next live process not yet asked, as a hint
  // naming it; false if there is none.
  bool SendHint(uint64_t id, const NodeRef& member);
  // A leaving member is replaced by the next process not yet asked; false if there is none.
  bool Replace(uint64_t id);
  // A replica held newer records than the write: take them (the owner must not serve older).
  void TakeNewer(uint64_t id, const wire::ReplicateResponse& answer);
  // Builds in `*resp` (empty) the answer of a write whose members have all answered (or that
  // was outranked here).
  void Settled(const WriteOp& w, wire::DataResponse* resp);
  void Failed(wire::Code code, std::string why, wire::DataResponse* resp);
  // The write is over: its change is published to the key's watchers.
  void Close(const WriteOp& w);
  // Closes the WriteOp `id`, forgets it and posts `response` to its requester.
  void Answer(uint64_t id, wire::DataResponse&& response);

  NodeContext& ctx_;
  ReplicationPolicy& policy_;
  std::unordered_map<uint64_t, WriteOp> ops_;
  uint64_t next_id_ = 1;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REPLICATION_WRITE_COORDINATOR_H_
