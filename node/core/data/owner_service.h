// OwnerService: serves get/put/del requests addressed to this node itself (marked `direct`):
// by the coordinating node that found this node to be the key's owner, by a node reading the
// copy this node holds as a replica, or by the DataService for a client's request of a key this
// node owns. The owner answers only for keys in (predecessor,
// self] and once its hand-over has arrived, else NOT_OWNER naming the node it believes is
// right; reads come from the local record (asking the replicas when it holds none), writes
// go to the WriteCoordinator. Answers go to the requester's OpRef: a DataOp of this node, or
// a remote requester (kDirect). Called by the ChordNode and the DataService; node's thread.
#ifndef CHORD_NODE_CORE_DATA_OWNER_SERVICE_H_
#define CHORD_NODE_CORE_DATA_OWNER_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "node/core/kept_record.h"
#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "node/core/replication/replication.h"
#include "protocol/chord.pb.h"

namespace chord {

class OwnerService {
 public:
  OwnerService(NodeContext& ctx, Replication& replication) : ctx_(ctx), replication_(replication) {}
  OwnerService(const OwnerService&) = delete;
  OwnerService& operator=(const OwnerService&) = delete;

  // A direct request (from another node, or a client's get of a key this node owns, handed on
  // by the DataService): served, then answered to `from`. `key_id`: the key's SHA-1 when the
  // caller has it already. `decline_miss`: a get of a key this node holds no record of is not
  // served (false is returned, nothing is answered), so that the caller can serve it as a
  // DataOp, which retries while the replicas do not answer. A write's key and value may be
  // moved out of `request` into the record stored (a get is left as it was).
  [[nodiscard]] bool HandleDirect(ReplyToken from, wire::Envelope& request,
                                  std::optional<Id> key_id = std::nullopt,
                                  bool decline_miss = false);
  // Serves a direct get, put or delete; the DataResponse goes to `requester`. With
  // `take_fields`, a write's key, value and writer are moved out of `request`, not copied;
  // without it, `request` is left as it was (a DataOp keeps it for its retries).
  void Serve(wire::Envelope& request, OpRef requester, std::optional<Id> key_id = std::nullopt,
             bool take_fields = false);
  // The answer to a HandleDirect request is ready.
  void OnDataDone(OpRef op, wire::DataResponse&& response);
  // Conditional writes waiting for their replicas' answer (ConditionRead).
  size_t in_flight() const { return condition_reads_.size(); }
  // The replicas answered a conditional write's read (OpKind::kConditionRead): the newest
  // version they hold (NOT_FOUND, with a version for a tombstone), or UNAVAILABLE.
  void OnConditionRead(OpRef op, wire::DataResponse&& newest);

 private:
  struct Requester {
    ReplyToken from = 0;
    uint64_t request_id = 0;
    size_t held_bytes = 0;  // charged to ctx_.owned() until answered
  };

  // Why this node, a replica, refuses an owner's condition read of `key_id` (empty: it does
  // not); see ReplicaReads. Holds the predecessor when it confirms it.
  std::string RefuseConditionRead(const wire::GetRequest& get, const Id& key_id);
  // Reads the local copy (owner or replica) into `record`; a tombstone reads as NOT_FOUND.
  // An answer with code OK takes the record's value (moved: `record` is left without it);
  // with `header_only` the value is not read, and the answer has none.
  wire::DataResponse ReadLocal(const Id& key_id, const std::string& key, bool replica_read,
                               wire::Record* record, Status* status, bool header_only = false);
  // A conditional write or one with a TTL, at the owner: checks the condition against the
  // current record, the newer of `local` (this node's record without its value, read once by
  // ServeWrite; nullopt: none) and `from_replicas` (what the replicas hold, when they were asked;
  // version 0: nothing) (false, with CONFLICT in `resp`, when it does not hold), versions
  // `record` above it, and sets its expiry.
  bool Conditioned(const wire::Envelope& request, std::optional<wire::Record> local,
                   wire::Record* record, const std::optional<wire::Record>& from_replicas,
                   wire::DataResponse* resp);
  // Serve's get of a key this node owns: from the local record, or from the replicas when
  // the read needs several of them or this node holds no record.
  void ServeGet(const wire::GetRequest& get, const Id& key_id, OpRef requester);
  // Serve's put or delete of a key this node owns: checked, then to the WriteCoordinator. A
  // conditional write waits for the replicas' newest version first (`from_replicas` once they
  // answered; see ConditionRead).
  void ServeWrite(wire::Envelope& request, const Id& key_id, OpRef requester, bool take_fields,
                  std::optional<wire::Record> from_replicas = std::nullopt);
  // Whether this node may still decide for `key_id` as its owner (not leaving, owning it, its
  // hand-over arrived); if not, `requester` is answered (SHUTTING_DOWN or NOT_OWNER).
  [[nodiscard]] bool StillOwner(const Id& key_id, OpRef requester);
  // Keeps a conditional write (ConditionRead) and asks every replica for the key.
  void AskReplicasFirst(wire::Envelope& request, const Id& key_id, OpRef requester,
                        bool take_fields);
  // An answer with `code` and `error` and nothing else.
  void Refuse(OpRef requester, wire::Code code, std::string error);
  // NOT_OWNER, with a hint where a better node is known.
  wire::DataResponse NotOwner(const Id& key_id);
  void Answer(OpRef requester, wire::DataResponse&& response);

  // The direct request HandleDirect is serving now (id 0: none), and whether Serve answered it.
  struct Serving {
    uint64_t id = 0;
    Requester requester;
    bool answered = false;
    bool decline_miss = false;  // HandleDirect's `decline_miss`
    bool declined = false;      // ... and Serve declined it
  };

  // A conditional write, waiting for the replicas' newest version. The owner's own record may
  // be missing (a new owner not handed every key, a write at consistency ONE or QUORUM that
  // missed it) or older than theirs (an owner that was paused while its successor took the
  // arc over and decided meanwhile, and runs again before it hears so): deciding against it
  // could let an if-absent put overwrite an acknowledged value, or a compare-and-set of an old
  // version replace the writes decided meanwhile. So every replica is asked for the newest
  // version it holds first, and the write is decided when they answer, against the newest of
  // theirs and whatever this node stored meanwhile (another conditional write of the key
  // decided first included).
  struct ConditionRead {
    wire::Envelope request;
    Id key_id;
    OpRef requester;
  };

  NodeContext& ctx_;
  Replication& replication_;
  Serving serving_;
  std::unordered_map<uint64_t, Requester> requesters_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, ConditionRead> condition_reads_;
  uint64_t next_condition_read_ = 1;
  // The record a get's local read (ReadLocal) fills (one Use per read; the answer takes its
  // value).
  KeptRecord read_;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_DATA_OWNER_SERVICE_H_
