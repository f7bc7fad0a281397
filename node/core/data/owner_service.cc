#include "node/core/data/owner_service.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "node/core/data/write_conditions.h"
#include "node/core/record_order.h"
#include "node/core/replication/consistency.h"
#include "protocol/limits.h"
#include "protocol/messages.h"

namespace chord {

bool OwnerService::HandleDirect(ReplyToken from, wire::Envelope& request, std::optional<Id> key_id,
                                bool decline_miss) {
  // While the node holds its limit of requests under way as owner, those that an operation
  // may take over (writes, reads of several replicas) are refused at once; a plain read is
  // served from the store, and refused in ServeGet if it would have to ask the replicas.
  if (ctx_.owned().Full() && (!request.has_get() || msg::ReadsSeveral(request))) {
    ctx_.out.Reply(from, request.request_id(), msg::Data(ctx_.Shed(ctx_.owned())));
    return true;
  }
  const uint64_t id = next_id_++;
  // Most direct requests are answered within Serve (Answer), writes settled at once included
  // (R = 1, a refusal); only one that an operation takes over (a write waiting for replicas,
  // a quorum read, a read of the replicas) is remembered, and charged, until it completes.
  serving_ = Serving{id, Requester{from, request.request_id()}, false, decline_miss, false};
  // A conditional write hands the whole request to the read of the replicas that decides it,
  // so what it holds is measured before Serve. Any other write hands only its key, value and
  // writer to the record it stores: their sizes are taken before, and the encoded size of the
  // rest only if an operation takes the request over (most are answered within Serve and
  // never charged).
  const bool hands_over_whole = ConditionOf(request).any();
  const size_t measured_before =
      hands_over_whole ? RequestBudget::CostOf(request)
                       : request.put().key().size() + request.put().value().size() +
                             request.put().writer().size() + request.del().key().size() +
                             request.del().writer().size();
  Serve(request, OpRef{OpKind::kDirect, 0, 0, id}, key_id, /*take_fields=*/true);
  const bool declined = serving_.declined;
  if (!serving_.answered && !declined) {
    // Taken over by an operation: charged until it answers.
    Requester& r = requesters_[id] = serving_.requester;
    r.held_bytes = measured_before + (hands_over_whole ? 0 : RequestBudget::CostOf(request));
    ctx_.owned().Charge(r.held_bytes);
  }
  serving_ = Serving{};
  return !declined;
}

void OwnerService::OnDataDone(OpRef op, wire::DataResponse&& response) {
  auto it = requesters_.find(op.id);
  if (it == requesters_.end()) return;
  const Requester r = it->second;
  requesters_.erase(it);
  ctx_.owned().Release(r.held_bytes);
  ctx_.out.Reply(r.from, r.request_id, msg::Data(std::move(response)));
}

void OwnerService::Answer(OpRef requester, wire::DataResponse&& response) {
  // The answer does not name this node: whoever asked it knows whom it asked (a coordinator
  // that relays it names the node it forwarded to, DataService::OnForwarded).
  // A direct request's answer is queued for its requester at once (nothing of this service
  // runs after it); a DataOp's is a completion, delivered once the current input settles.
  if (requester.kind == OpKind::kDirect && requester.id == serving_.id) {
    serving_.answered = true;
    const Requester& r = serving_.requester;
    return ctx_.out.Reply(r.from, r.request_id, msg::Data(std::move(response)));
  }
  ctx_.completions.Post(requester, std::move(response));
}

wire::DataResponse OwnerService::ReadLocal(const Id& key_id, const std::string& key,
                                           bool replica_read, wire::Record* record, Status* status,
                                           bool header_only) {
  wire::DataResponse resp;
  *status = header_only ? ctx_.store()->GetHeader(key_id, key, record)
                        : ctx_.store()->Get(key_id, key, record);
  // An expired value reads exactly like the tombstone its expiry leaves (at version + 1).
  const bool expired = status->ok() && !record->deleted() && !RecordLive(*record, ctx_.now.wall_ms);
  if (status->ok() && !record->deleted() && !expired) {
    resp.set_code(wire::OK);
    resp.mutable_value()->swap(*record->mutable_value());  // moved, not copied
    if (record->expires_unix_ms() != 0) resp.set_expires_unix_ms(record->expires_unix_ms());
  } else if (status->ok() || status->IsNotFound()) {
    resp.set_code(wire::NOT_FOUND);
    resp.set_error("the key does not exist");
  } else {
    resp.set_code(wire::UNAVAILABLE);
    resp.set_error((replica_read ? ctx_.self().addr : std::string("the owner")) +
                   " could not read the key: " + status->message());
  }
  // A replica tells the version of a tombstone too: it is newer than an older value.
  if (status->ok() && (replica_read || !record->deleted())) resp.set_version(record->version());
  if (status->ok() && replica_read) resp.set_writer(record->writer());
  if (expired) resp.set_version(replica_read ? record->version() + 1 : 0);
  // Its asker orders an expiry below any other record of its version, as the stores do.
  if (replica_read && (expired || (status->ok() && record->deleted() && record->expired()))) {
    resp.set_expired(true);
  }
  return resp;
}

bool OwnerService::Conditioned(const wire::Envelope& request, std::optional<wire::Record> local,
                               wire::Record* record,
                               const std::optional<wire::Record>& from_replicas,
                               wire::DataResponse* resp) {
  bool have = local.has_value();
  wire::Record current = have ? std::move(*local) : wire::Record();
  // A replica answers a record it holds as expired by its own clock as an expiry's tombstone
  // one version above it (same writer): if that is this node's record, this node judges its
  // expiry by its own clock. (A real delete of that version and writer is not an expiry.)
  const bool expired_copy_of_current = have && from_replicas && from_replicas->deleted() &&
                                       from_replicas->expired() && !current.deleted() &&
                                       current.expires_unix_ms() != 0 &&
                                       from_replicas->version() == current.version() + 1 &&
                                       from_replicas->writer() == current.writer();
  if (from_replicas && from_replicas->version() != 0 && !expired_copy_of_current &&
      (!have || RecordNewer(*from_replicas, current))) {
    // Newer than what this node holds, in the stores' order: it decides.
    current = *from_replicas;
    have = true;
  }
  // The coordinator's retry of this very write (its answer was lost): already decided and
  // stored (here, or on the replicas of an owner that has since gone), so it goes on (storing
  // changes nothing) instead of conflicting with itself.
  const bool retry = have && record->version() != 0 && !current.writer().empty() &&
                     current.version() == record->version() &&
                     current.writer() == record->writer() && current.deleted() == record->deleted();
  const ConditionOutcome outcome =
      CheckCondition(ConditionOf(request), have ? &current : nullptr, ctx_.now.wall_ms);
  if (!outcome.holds && !retry) {
    ++ctx_.counters.cas_conflicts;
    resp->set_code(wire::CONFLICT);
    resp->set_version(outcome.current_version);
    resp->set_error(outcome.error);
    return false;
  }
  // The condition held against the record stored here now; the write must outrank it, or the
  // store would keep the old record and the coordinator would have to restamp (turning a
  // decided compare-and-set into a blind retry). So the owner versions it above the current
  // record itself. This is safe: the check and the store (WriteCoordinator::Start stores
  // locally before it returns) run in one step on this node's single thread, so no other
  // write of the key comes between them, and the next conditional write of the key is checked
  // against this one.
  if (ConditionOf(request).any() && !retry && have && record->version() <= current.version()) {
    ctx_.versions.Observe(current.version());
    record->set_version(ctx_.NextVersion());
    record->set_writer(ctx_.self().id.ToBytes());
  }
  if (request.has_put() && request.put().ttl_ms() != 0) {
    if (record->version() == 0) {  // a direct request from a client: versioned here
      if (have) ctx_.versions.Observe(current.version());
      record->set_version(ctx_.NextVersion());
      record->set_writer(ctx_.self().id.ToBytes());
    }
    // Every holder stores the same expiry: it is part of the record.
    record->set_expires_unix_ms(ExpiryOf(record->version(), request.put().ttl_ms()));
  }
  return true;
}

wire::DataResponse OwnerService::NotOwner(const Id& key_id) {
  const RingState& ring = ctx_.ring;
  wire::DataResponse resp;
  resp.set_code(wire::NOT_OWNER);
  resp.set_error(ring.awaiting_transfer ? ring.self.addr + " is still receiving its keys"
                                        : ring.self.addr + " does not own the key");
  // While we wait for our keys (and own the key), there is no better node to name.
  if (!ring.Owns(key_id)) {
    if (Id::InHalfOpen(key_id, ring.self.id, ring.successor().id)) {
      ring.successor().ToWire(resp.mutable_hint());
    } else if (ring.predecessor) {
      ring.predecessor->ToWire(resp.mutable_hint());
    }
  }
  return resp;
}

void OwnerService::Refuse(OpRef requester, wire::Code code, std::string error) {
  wire::DataResponse resp;
  resp.set_code(code);
  resp.set_error(std::move(error));
  Answer(requester, std::move(resp));
}

void OwnerService::Serve(wire::Envelope& request, OpRef requester, std::optional<Id> known_id,
                         bool take_fields) {
  const RingState& ring = ctx_.ring;
  // With `take_fields`, ServeWrite hands the key itself to the record it stores: `key` is not
  // to be used once ServeWrite was called.
  const std::string& key = msg::DataKey(request);
  if (!KeyProblem(key).empty() ||
      (request.has_put() && request.put().value().size() > ctx_.config.max_value_bytes)) {
    return Refuse(requester, wire::INVALID, "the key or value is outside the size limits");
  }
  const Id key_id = known_id ? *known_id : Id::Sha1(key);
  if (request.has_get() && request.get().from_replica()) {
    // A read of our copy, by a node whose owner did not answer. A node still waiting for its
    // hand-over may lack keys: it must not answer "not found".
    if ((!ring.joined() && ring.state != NodeState::kLeaving) || ring.awaiting_transfer) {
      return Refuse(requester, wire::UNAVAILABLE, ring.self.addr + " has not joined the ring yet");
    }
    if (request.get().for_condition()) {
      if (std::string refused = RefuseConditionRead(request.get(), key_id); !refused.empty()) {
        ++ctx_.counters.condition_reads_refused;
        return Refuse(requester, wire::NOT_OWNER, std::move(refused));
      }
    }
    Status s;
    const KeptRecord::Use rec(&read_);
    // A condition is decided on what the record says of itself (version, writer, tombstone,
    // expiry): its value stays here.
    return Answer(requester, ReadLocal(key_id, key, /*replica_read=*/true, rec.get(), &s,
                                       /*header_only=*/request.get().for_condition()));
  }
  // The DataService hands a client's get (and, without copies, a write) here without a DataOp
  // (no retry) only when these checks pass (DataService::OwnedHere): keep the two in step. It takes
  // such a get back (as a DataOp, which retries) when this node holds no record of the key
  // (decline_miss).
  if (!StillOwner(key_id, requester)) return;
  if (request.has_get()) return ServeGet(request.get(), key_id, requester);
  ServeWrite(request, key_id, requester, take_fields);
}

std::string OwnerService::RefuseConditionRead(const wire::GetRequest& get, const Id& key_id) {
  RingState& ring = ctx_.ring;
  if (ring.Owns(key_id)) {
    // The asker decides a conditional write as owner, but this node would decide it too: it
    // took the asker's arc over (the asker paused, or was cut off) and has not taken the asker
    // back as its predecessor. The asker must not decide (ReplicaReads).
    return ring.self.addr + " owns the key itself";
  }
  if (!get.has_asker()) return "";
  // This node is the asker's first replica: the node that takes the asker's arc over when it
  // finds the asker dead. Its predecessor must be of the asker's process (else another node,
  // one that joined between them or took the arc, may own the key); then it does not drop that
  // predecessor for a missed check during the next RPC timeout, and the asker decides within
  // that (ReplicaReads::ReadForCondition). A closer predecessor that notifies is still adopted,
  // but gets its keys only once that hold has ended (HandOver::ToPredecessor); a leave waits
  // for its end too (Leaver).
  if (ring.state == NodeState::kLeaving) return ring.self.addr + " is leaving the ring";
  if (ring.predecessor && ring.keys_held_back_for == ring.predecessor) {
    // Confirming would extend the hold that keeps the predecessor's keys back (if it is a later
    // vnode of the asker's process, for ever): the asker waits for them instead.
    return ring.self.addr + "'s predecessor " + ring.predecessor->addr +
           " is still waiting for its keys";
  }
  const auto asker = NodeRef::FromWire(get.asker());
  if (!asker || !ring.predecessor || !ring.predecessor->SameProcess(*asker)) {
    return ring.self.addr + "'s predecessor is " +
           (ring.predecessor ? ring.predecessor->addr : std::string("unknown")) + ", not the asker";
  }
  ring.predecessor_held_until_ms =
      std::max(ring.predecessor_held_until_ms, ctx_.now.mono_ms + ctx_.config.rpc_timeout_ms);
  return "";
}

bool OwnerService::StillOwner(const Id& key_id, OpRef requester) {
  const RingState& ring = ctx_.ring;
  if (ring.state == NodeState::kLeaving || ring.state == NodeState::kLeft) {
    Refuse(requester, wire::SHUTTING_DOWN, "the owner " + ring.self.addr + " is leaving the ring");
    return false;
  }
  if (!ring.Owns(key_id) || ring.awaiting_transfer) {
    Answer(requester, NotOwner(key_id));
    return false;
  }
  return true;
}

void OwnerService::ServeGet(const wire::GetRequest& get, const Id& key_id, OpRef requester) {
  const std::string& key = get.key();
  const Needed needed =
      ReadsNeeded(get.consistency(), get.required(), replication_.policy().replicas());
  if (!needed.problem.empty()) return Refuse(requester, wire::INVALID, needed.problem);
  Status s;
  if (needed.count > 1) {
    // Several members must answer: the newest version among them wins, the others are
    // repaired (QuorumRead).
    wire::Record rec;
    s = ctx_.store()->Get(key_id, key, &rec);
    if (!s.ok() && !s.IsNotFound()) {
      return Refuse(requester, wire::UNAVAILABLE,
                    "the owner could not read the key: " + s.message());
    }
    std::optional<wire::Record> own;
    if (s.ok()) own = std::move(rec);
    return replication_.quorum_reads().Start(
        key, std::move(own), needed.count,
        LevelName(get.consistency(), get.required(), /*write=*/false), requester);
  }
  // Held to the end of this get, which reads nothing else locally; the answer is built in place.
  const KeptRecord::Use rec(&read_);
  wire::DataResponse resp = ReadLocal(key_id, key, /*replica_read=*/false, rec.get(), &s);
  resp.set_acks(s.ok() || s.IsNotFound() ? 1 : 0);
  resp.set_required(1);
  // No copy here at all: a new owner may not have received every key yet (with vnodes a
  // join hand-over is partial). The replicas decide; the newest version they hold wins.
  if (s.IsNotFound() && replication_.policy().replicated()) {
    if (requester.kind == OpKind::kDirect && requester.id == serving_.id && serving_.decline_miss) {
      serving_.declined = true;  // the DataService serves it as a DataOp instead
      return;
    }
    if (requester.kind == OpKind::kDirect && ctx_.owned().Full()) {
      // Asking the replicas would be taken over and charged: not while the half is full.
      return Answer(requester, ctx_.Shed(ctx_.owned()));
    }
    return replication_.reads().ReadMiss(key, std::move(resp), requester);
  }
  Answer(requester, std::move(resp));
}

void OwnerService::ServeWrite(wire::Envelope& request, const Id& key_id, OpRef requester,
                              bool take_fields, std::optional<wire::Record> from_replicas) {
  // This node, the owner, versions the write and waits for the replica set.
  if (std::string problem = ConditionProblem(request); !problem.empty()) {
    return Refuse(requester, wire::INVALID, std::move(problem));
  }
  if (ConditionOf(request).any()) {
    // A level that cannot be met is refused before the condition is looked at, as an
    // unconditional write's is (WriteCoordinator::Start), not after asking the replicas.
    const bool put = request.has_put();
    const Needed needed =
        WritesNeeded(put ? request.put().consistency() : request.del().consistency(),
                     put ? request.put().required() : request.del().required(),
                     replication_.policy().replicas(), replication_.policy().Targets().size() + 1);
    if (!needed.problem.empty()) return Refuse(requester, wire::INVALID, needed.problem);
  }
  const bool conditioned =
      ConditionOf(request).any() || (request.has_put() && request.put().ttl_ms() != 0);
  // This node's record of the key, read once; a condition reads only what the record says of
  // itself (version, writer, tombstone, expiry), so its value is left out.
  std::optional<wire::Record> local;
  if (conditioned) {
    wire::Record current;
    const Status s = ctx_.store()->GetHeader(key_id, msg::DataKey(request), &current);
    if (!s.ok() && !s.IsNotFound()) {
      return Refuse(requester, wire::UNAVAILABLE,
                    "the owner " + ctx_.self().addr + " could not read the key: " + s.message());
    }
    // Every condition is checked against the replicas' newest version too (ConditionRead).
    if (ConditionOf(request).any() && !from_replicas && replication_.policy().replicated()) {
      return AskReplicasFirst(request, key_id, requester, take_fields);
    }
    if (s.ok()) local = std::move(current);
  }
  wire::Record record;
  if (take_fields) {
    // The request's strings are handed over, not copied or swapped (a swap would first make
    // an empty string in the record to swap with).
    record.set_allocated_key(request.has_put() ? request.mutable_put()->release_key()
                                               : request.mutable_del()->release_key());
  } else {
    record.set_key(msg::DataKey(request));
  }
  wire::Consistency level = wire::CONSISTENCY_DEFAULT;
  uint32_t required = 0;
  if (request.has_put()) {
    level = request.put().consistency();
    required = request.put().required();
    if (take_fields) {
      record.set_allocated_value(request.mutable_put()->release_value());
    } else {
      record.set_value(request.put().value());
    }
    record.set_version(request.put().version());
  } else {
    level = request.del().consistency();
    required = request.del().required();
    record.set_deleted(true);
    record.set_version(request.del().version());
  }
  if (take_fields) {
    record.set_allocated_writer(request.has_put() ? request.mutable_put()->release_writer()
                                                  : request.mutable_del()->release_writer());
  } else {
    record.set_writer(request.has_put() ? request.put().writer() : request.del().writer());
  }
  if (conditioned) {
    wire::DataResponse resp;
    if (!Conditioned(request, std::move(local), &record, from_replicas, &resp)) {
      return Answer(requester, std::move(resp));
    }
  }
  // A write settled at once (a ring without copies, a refusal) is answered here: a direct
  // request's answer is then queued within HandleDirect, without a completion.
  wire::DataResponse answer;
  if (replication_.writes().Start(key_id, std::move(record), requester, level, required, &answer)) {
    Answer(requester, std::move(answer));
  }
}

void OwnerService::AskReplicasFirst(wire::Envelope& request, const Id& key_id, OpRef requester,
                                    bool take_fields) {
  const uint64_t id = next_condition_read_++;
  ConditionRead& pending = condition_reads_[id];
  if (take_fields) {
    pending.request = std::move(request);
  } else {
    pending.request = request;  // a DataOp keeps its request for its retries
  }
  pending.key_id = key_id;
  pending.requester = requester;
  replication_.reads().ReadForCondition(msg::DataKey(pending.request),
                                        OpRef{OpKind::kConditionRead, 0, 0, id});
}

void OwnerService::OnConditionRead(OpRef op, wire::DataResponse&& newest) {
  auto it = condition_reads_.find(op.id);
  if (it == condition_reads_.end()) return;
  ConditionRead pending = std::move(it->second);
  condition_reads_.erase(it);
  if (newest.code() != wire::OK && newest.code() != wire::NOT_FOUND) {
    wire::DataResponse refused;
    refused.set_code(wire::UNAVAILABLE);
    refused.set_error("the condition could not be checked, so nothing was written: " +
                      newest.error());
    refused.set_not_applied(true);  // its coordinator may send it again
    return Answer(pending.requester, std::move(refused));
  }
  // The ring may have changed while the replicas answered.
  if (!StillOwner(pending.key_id, pending.requester)) return;
  wire::Record found;  // what the replicas hold, as far as a condition reads it
  found.set_key(msg::DataKey(pending.request));
  found.set_version(newest.version());
  found.set_deleted(newest.code() == wire::NOT_FOUND);  // a tombstone, or an expired value
  found.set_expired(found.deleted() && newest.expired());
  found.set_expires_unix_ms(newest.expires_unix_ms());
  found.set_writer(newest.writer());
  ServeWrite(pending.request, pending.key_id, pending.requester, /*take_fields=*/true,
             std::move(found));
}

}  // namespace chord
