// ChordNode: one member of the Chord ring, as a pure state machine. It keeps the successor
// list, predecessor and finger table (ring maintenance as corrected by Zave, see
// shared/RING.md), answers lookups iteratively, and serves get/put/delete for the keys it
// owns through a Store. It does no I/O and reads no clock: messages, timers and randomness
// come from the Environment. Call it from one thread only (the loop or the simulator).
#ifndef CHORD_NODE_CORE_CHORD_NODE_H_
#define CHORD_NODE_CORE_CHORD_NODE_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "node/core/environment.h"
#include "node/core/node_config.h"
#include "node/core/node_metrics.h"
#include "node/core/node_ref.h"
#include "node/core/status.h"
#include "node/storage/store.h"
#include "protocol/chord.pb.h"
#include "protocol/id.h"

namespace chord {

// What an iterative lookup found.
struct LookupResult {
  NodeRef owner;                    // first node clockwise from the target
  std::vector<NodeRef> successors;  // the nodes after the owner, as the last hop knew them
  NodeRef predecessor;              // the node just before the owner
  int hops = 0;                     // lookup RPCs answered
  int timeouts = 0;                 // peers that did not answer
};

struct NodeCounters {
  uint64_t stabilize_rounds = 0;
  uint64_t successor_changes = 0;
  uint64_t predecessor_changes = 0;
  uint64_t lookups = 0;
  uint64_t lookup_hops = 0;
  uint64_t rpc_timeouts = 0;
  uint64_t keys_sent = 0;
  uint64_t keys_received = 0;
  uint64_t bytes_sent = 0;           // record bytes of hand-overs (join / leave)
  uint64_t writes_replicated = 0;    // writes this node coordinated as owner
  uint64_t anti_entropy_rounds = 0;  // digest comparisons with one replica
  uint64_t anti_entropy_clean = 0;   // ... that found nothing to repair
  uint64_t anti_entropy_bytes = 0;   // digest, pull and push message bytes sent and received
  uint64_t keys_repaired = 0;        // records sent or taken by anti-entropy / read repair
  uint64_t keys_dropped = 0;         // records erased once their holders confirmed them
  uint64_t tombstones_purged = 0;
};

class ChordNode {
 public:
  enum class State { kIdle, kJoining, kJoined, kLeaving, kLeft };
  using LookupCallback = std::function<void(Result<LookupResult>)>;

  ChordNode(Environment* env, Store* store, NodeConfig config, NodeRef self);
  ~ChordNode();
  ChordNode(const ChordNode&) = delete;
  ChordNode& operator=(const ChordNode&) = delete;

  // Starts a new ring of one (no bootstrap) or joins the ring that `bootstrap_addr` is in.
  // A failed join is retried every join_retry_ms until it succeeds or the node leaves; with
  // several bootstrap addresses the attempts go through them in turn.
  void Start(const std::string& bootstrap_addr = "");
  void Start(const std::vector<std::string>& bootstrap_addrs);
  // Graceful leave: stop maintenance, hand every record to the successor, tell the
  // neighbours, then call `done` (always called, also when the hand-off failed).
  void Leave(std::function<void()> done);

  // Simulator and test seam: become a joined member at once with the given routing state, as
  // if join and stabilization had already converged (fingers[i] = successor(self + 2^i),
  // nullopt where that is this node). Used to build rings of thousands of nodes quickly.
  void InstallRoutingState(std::vector<NodeRef> successors, std::optional<NodeRef> predecessor,
                           const std::vector<std::optional<NodeRef>>& fingers);
  // Virtual nodes: every ring position of this process, this one included, all sharing one
  // Store. Used to tell replica copies from keys a sibling owns. Call before Start.
  void SetProcessVnodes(std::vector<NodeRef> vnodes);

  // Stops (false) or restarts (true) the periodic stabilize / check-predecessor /
  // fix-fingers round. A stopped node still answers requests and runs lookups.
  void SetMaintenance(bool enabled);

  // Input from the environment.
  void OnRequest(ReplyToken from, const wire::Envelope& request);
  void OnResponse(const wire::Envelope& response);
  void OnSendFailed(uint64_t request_id);

  // An iterative lookup of the successor of `target`. With verify_owner, the owner is pinged
  // and dead owners are skipped along the successor list (lookups of the CLI and the
  // simulator); without it the caller contacts the owner itself.
  void Lookup(const Id& target, bool verify_owner, LookupCallback done);

  // Read-only views for status, tests and the simulator.
  const NodeRef& self() const { return self_; }
  State state() const { return state_; }
  bool joined() const { return state_ == State::kJoined; }
  const std::optional<NodeRef>& predecessor() const { return predecessor_; }
  const std::vector<NodeRef>& successors() const { return successors_; }
  // The node's successor: the head of its list, or itself when it is alone.
  const NodeRef& successor() const { return successors_.empty() ? self_ : successors_.front(); }
  const std::optional<NodeRef>& finger(int i) const { return fingers_[i]; }
  const NodeCounters& counters() const { return counters_; }
  const NodeMetrics& metrics() const { return metrics_; }
  const NodeConfig& config() const { return config_; }
  // True when this node is responsible for `key_id`: it lies in (predecessor, self].
  bool Owns(const Id& key_id) const;
  // Live records this node owns as primary; live records it holds for other owners (with
  // virtual nodes: those between the previous vnode of this process and this one); all
  // records held, tombstones included.
  uint64_t PrimaryKeyCount() const;
  uint64_t ReplicaKeyCount() const;
  uint64_t StoredKeyCount() const { return store_->Count(); }
  // The other members of the replica set of this node's range: up to R-1 distinct processes
  // from the successor list, skipping this process's other vnodes.
  std::vector<NodeRef> ReplicaTargets() const;

 private:
  using ResponseFn = std::function<void(const wire::Envelope* response)>;  // null: failed
  struct PendingCall {
    ResponseFn on_done;
    TimerId timer = 0;
    RpcTypeMetrics* metrics = nullptr;  // entry of metrics_.rpc for the request's type
    uint64_t sent_ms = 0;
  };
  struct LookupState;
  struct DataOp;
  struct WriteOp;
  struct SentRecord {
    Id id;
    std::string key;
    uint64_t version;
  };

  // --- RPC plumbing
  void Call(const NodeRef& to, wire::Envelope request, uint64_t timeout_ms, ResponseFn on_done);
  void Reply(ReplyToken to, uint64_t request_id, wire::Envelope reply);
  void FinishCall(uint64_t request_id, const wire::Envelope* response);

  // --- ring maintenance
  void Join();
  void JoinThrough(const NodeRef& p, const std::string& bootstrap_addr);
  void RetryJoin(const std::string& bootstrap_addr, const std::string& why);
  // Adds a member heard from during a join attempt to the addresses joins go through.
  void RememberBootstrap(const std::string& addr);
  void ScheduleTick();
  void Tick();
  void Stabilize();
  void StabilizeFromSuccessor(int attempts_left, bool head_retried);
  void StabilizeFromCandidate(const NodeRef& candidate);
  void FinishStabilize();
  void CheckPredecessor();
  void FixFingers();
  void Rectify(const NodeRef& n, bool wants_keys);
  void SetSuccessors(std::vector<NodeRef> list);
  void SetPredecessor(std::optional<NodeRef> p);
  // Where the records this vnode accounts for begin: the previous ring position of this
  // process (itself with one vnode, making (start, self] the whole ring). Every record of
  // the shared store falls to exactly one vnode of the process.
  Id AttributedRangeStart() const;
  // Where this node's range (start, self] begins; nullopt: the whole ring.
  std::optional<Id> RangeStart() const;
  // Stores `rec` unless the record already there outranks it (RecordNewer); then `*stored` is
  // false and `*kept` (if given) is that record.
  Status StoreIfNewer(const Id& key_id, const wire::Record& rec, bool* stored = nullptr,
                      wire::Record* kept = nullptr);
  void MarkDead(const NodeRef& n);
  // [head] + list, cut where it wraps back to this node, without duplicates, at most S long.
  std::vector<NodeRef> BuildSuccessorList(
      const NodeRef& head, const google::protobuf::RepeatedPtrField<wire::NodeInfo>& rest) const;
  // When `target` falls within the span of our successor list, sets the node just before
  // its owner and the owner followed by the rest of the list, and returns true.
  bool OwnerFromSuccessors(const Id& target, NodeRef* predecessor,
                           std::vector<NodeRef>* owners) const;
  // The longest prefix of `candidates` that is a well-ordered successor list for this node:
  // strictly clockwise, never reaching or passing this node, at most S long.
  std::vector<NodeRef> OrderedSuccessorList(const std::vector<NodeRef>& candidates) const;
  // Up to `max` known nodes strictly between this node and `target`, closest to it first.
  std::vector<NodeRef> ClosestPreceding(const Id& target, int max) const;

  // --- lookups
  void LookupStep(std::shared_ptr<LookupState> st);
  void LookupVerify(std::shared_ptr<LookupState> st, std::vector<NodeRef> owners, size_t index,
                    bool retried);

  // --- key transfer
  void PushMisplacedKeys(bool announce);
  // The records a hand-over to `to` covers, (from, to]; false when there are none to send.
  bool HandOverRange(const NodeRef& to, bool for_leave, Id* from_id, Id* to_id) const;
  void SendTransferBatch(const NodeRef& to, bool for_leave, std::function<void(bool ok)> done,
                         std::optional<Id> resume_after = std::nullopt);
  void LeaveHandOff(std::function<void()> done, int attempts_left);
  void LeaveNotify(std::function<void()> done);

  // --- data operations
  void StartDataOp(ReplyToken from, const wire::Envelope& request);
  void RunDataOp(std::shared_ptr<DataOp> op);
  void SendDataOp(std::shared_ptr<DataOp> op, const NodeRef& owner);
  void RetryDataOp(std::shared_ptr<DataOp> op, const std::string& why);
  void FinishDataOp(std::shared_ptr<DataOp> op, wire::DataResponse response);
  using DataDone = std::function<void(wire::DataResponse)>;
  // Serves a request addressed to this node as the key's owner (or, for a get with
  // from_replica, as a holder of a copy).
  void ApplyDirect(const wire::Envelope& request, DataDone done);

  // --- replication (chord_node_replication.cc)
  // A hybrid logical clock: wall milliseconds << 16, above every version seen.
  uint64_t NextVersion();
  void ObserveVersion(uint64_t version) { clock_ = std::max(clock_, version); }
  void CoordinateWrite(std::shared_ptr<WriteOp> w);
  void ReadFromReplicas(std::shared_ptr<DataOp> op, std::vector<NodeRef> holders);
  void ReadRepair(const wire::Record& rec);
  // The owner holds no record for `key`: asks its replica set and answers with the newest
  // version any of them holds, else with `not_found`.
  void ReadMissFromReplicas(const std::string& key, wire::DataResponse not_found, DataDone done);
  void AntiEntropyRound();
  void SyncWithReplica(const NodeRef& target, const Id& from, const Id& to,
                       std::shared_ptr<const std::vector<uint64_t>> digests,
                       std::function<void(bool clean)> done);
  void PullDifferences(const NodeRef& target, const Id& from, const Id& to, uint32_t buckets,
                       std::vector<uint32_t> differing, std::optional<Id> after,
                       std::shared_ptr<std::vector<wire::Record>> theirs, int pages_left,
                       std::function<void(bool ok)> done);
  void PushDifferences(const NodeRef& target, const Id& from, const Id& to, uint32_t buckets,
                       std::vector<uint32_t> differing, std::vector<wire::Record> theirs,
                       std::function<void(bool ok)> done);
  void PurgeTombstones(const Id& from, const Id& to, std::vector<NodeRef> targets);
  void CollectGarbage(int ranges_left);
  void DropRange(const Id& from, const Id& to, std::vector<NodeRef> holders,
                 std::function<void(bool ok)> done);
  // Sends `records` to `to` with a Replicate request; ok when stored (or outranked) there.
  void SendRecords(const NodeRef& to, std::vector<wire::Record> records,
                   std::function<void(bool ok)> done);
  // Live (not deleted) records in (from, to].
  uint64_t CountLive(const Id& from, const Id& to) const;
  void HandleReplicate(ReplyToken from, const wire::Envelope& req);
  void HandleSyncDigest(ReplyToken from, const wire::Envelope& req);
  void HandleSyncPull(ReplyToken from, const wire::Envelope& req);
  void HandlePurge(ReplyToken from, const wire::Envelope& req);
  void HandleReplicaSet(ReplyToken from, const wire::Envelope& req);

  // --- request handlers
  void HandleGetState(ReplyToken from, const wire::Envelope& req);
  void HandleNotify(ReplyToken from, const wire::Envelope& req);
  void HandleFindNextHop(ReplyToken from, const wire::Envelope& req);
  void HandleTransfer(ReplyToken from, const wire::Envelope& req);
  void HandleLeave(ReplyToken from, const wire::Envelope& req);
  void HandleLookup(ReplyToken from, const wire::Envelope& req);
  void HandleStatus(ReplyToken from, const wire::Envelope& req);
  void HandleListKeys(ReplyToken from, const wire::Envelope& req);

  void Log(LogLevel level, const std::string& message);

  Environment* env_;
  Store* store_;
  NodeConfig config_;
  NodeRef self_;
  State state_ = State::kIdle;

  std::optional<NodeRef> predecessor_;
  std::vector<NodeRef> successors_;  // never contains self_; empty: alone
  std::array<std::optional<NodeRef>, Id::kBits> fingers_;
  int next_finger_ = 1;

  bool maintenance_ = true;
  bool stabilizing_ = false;
  bool stabilize_again_ = false;  // a StabilizeNow arrived during a round
  bool checking_predecessor_ = false;
  bool fixing_fingers_ = false;
  bool transferring_ = false;
  bool awaiting_transfer_ = false;  // joined, but the successor has not handed our keys over
  std::optional<Id> range_floor_;   // start of our range while the predecessor is unknown
  std::deque<Id> departed_;         // nodes that told us they left (bounded)
  uint64_t clock_ = 0;              // hybrid logical clock for record versions
  uint64_t next_anti_entropy_ms_ = 0;
  bool anti_entropy_running_ = false;
  bool collecting_garbage_ = false;
  std::optional<Id> gc_cursor_;  // where the clean-up walk of foreign ranges continues
  TimerId tick_timer_ = 0;
  std::vector<std::string> bootstraps_;
  std::vector<NodeRef> process_vnodes_;  // ring positions of this process (this one included)
  size_t join_attempts_ = 0;

  uint64_t next_request_id_ = 1;
  std::unordered_map<uint64_t, PendingCall> pending_;
  NodeCounters counters_;
  NodeMetrics metrics_;
  // Guards callbacks scheduled on the environment against running after destruction.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_CHORD_NODE_H_
