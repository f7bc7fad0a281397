#include "node/core/data/owner_service.h"

#include <optional>
#include <string>
#include <utility>

#include "node/core/replication/consistency.h"
#include "protocol/limits.h"
#include "protocol/messages.h"

namespace chord {

void OwnerService::HandleDirect(ReplyToken from, const wire::Envelope& request) {
  const uint64_t id = next_id_++;
  requesters_[id] = Requester{from, request.request_id()};
  Serve(request, OpRef{OpKind::kDirect, 0, 0, id});
}

void OwnerService::OnDataDone(OpRef op, wire::DataResponse response) {
  auto it = requesters_.find(op.id);
  if (it == requesters_.end()) return;
  const Requester r = it->second;
  requesters_.erase(it);
  ctx_.out.Reply(r.from, r.request_id, msg::Data(std::move(response)));
}

void OwnerService::Answer(OpRef requester, wire::DataResponse response) {
  ctx_.completions.Post(requester, std::move(response));
}

wire::DataResponse OwnerService::ReadLocal(const Id& key_id, const std::string& key,
                                           bool replica_read, wire::Record* record,
                                           Status* status) {
  wire::DataResponse resp;
  ctx_.self().ToWire(resp.mutable_owner());
  *status = ctx_.store()->Get(key_id, key, record);
  if (status->ok() && !record->deleted()) {
    resp.set_code(wire::OK);
    resp.set_value(record->value());
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
  return resp;
}

wire::DataResponse OwnerService::NotOwner(const Id& key_id) {
  const RingState& ring = ctx_.ring;
  wire::DataResponse resp;
  ring.self.ToWire(resp.mutable_owner());
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

void OwnerService::Serve(const wire::Envelope& request, OpRef requester) {
  const RingState& ring = ctx_.ring;
  const std::string& key = msg::DataKey(request);
  wire::DataResponse resp;
  ctx_.self().ToWire(resp.mutable_owner());
  if (!KeyProblem(key).empty() ||
      (request.has_put() && request.put().value().size() > ctx_.config.max_value_bytes)) {
    resp.set_code(wire::INVALID);
    resp.set_error("the key or value is outside the size limits");
    return Answer(requester, std::move(resp));
  }
  const Id key_id = Id::Sha1(key);
  wire::Record rec;
  Status s;
  if (request.has_get() && request.get().from_replica()) {
    // A read of our copy, by a node whose owner did not answer. A node still waiting for its
    // hand-over may lack keys: it must not answer "not found".
    if ((!ring.joined() && ring.state != NodeState::kLeaving) || ring.awaiting_transfer) {
      resp.set_code(wire::UNAVAILABLE);
      resp.set_error(ring.self.addr + " has not joined the ring yet");
      return Answer(requester, std::move(resp));
    }
    return Answer(requester, ReadLocal(key_id, key, /*replica_read=*/true, &rec, &s));
  }
  if (ring.state == NodeState::kLeaving || ring.state == NodeState::kLeft) {
    resp.set_code(wire::SHUTTING_DOWN);
    resp.set_error("the owner " + ring.self.addr + " is leaving the ring");
    return Answer(requester, std::move(resp));
  }
  if (!ring.Owns(key_id) || ring.awaiting_transfer) return Answer(requester, NotOwner(key_id));
  if (request.has_get()) {
    const auto& get = request.get();
    const Needed needed =
        ReadsNeeded(get.consistency(), get.required(), replication_.policy().replicas());
    if (!needed.problem.empty()) {
      resp.set_code(wire::INVALID);
      resp.set_error(needed.problem);
      return Answer(requester, std::move(resp));
    }
    if (needed.count > 1) {
      // Several members must answer: the newest version among them wins, the others are
      // repaired (QuorumRead).
      s = ctx_.store()->Get(key_id, key, &rec);
      if (!s.ok() && !s.IsNotFound()) {
        resp.set_code(wire::UNAVAILABLE);
        resp.set_error("the owner could not read the key: " + s.message());
        return Answer(requester, std::move(resp));
      }
      std::optional<wire::Record> own;
      if (s.ok()) own = std::move(rec);
      return replication_.quorum_reads().Start(
          key, std::move(own), needed.count,
          LevelName(get.consistency(), get.required(), /*write=*/false), requester);
    }
    resp = ReadLocal(key_id, key, /*replica_read=*/false, &rec, &s);
    resp.set_acks(s.ok() || s.IsNotFound() ? 1 : 0);
    resp.set_required(1);
    if (s.ok() && replication_.policy().ShouldRepairRead()) replication_.reads().Repair(rec);
    // No copy here at all: a new owner may not have received every key yet (with vnodes a
    // join hand-over is partial). The replicas decide; the newest version they hold wins.
    if (s.IsNotFound() && replication_.policy().replicated()) {
      return replication_.reads().ReadMiss(key, std::move(resp), requester);
    }
    return Answer(requester, std::move(resp));
  }
  // A write: this node, the owner, versions it and waits for the replica set.
  wire::Record record;
  record.set_key(key);
  wire::Consistency level = wire::CONSISTENCY_DEFAULT;
  uint32_t required = 0;
  if (request.has_put()) {
    level = request.put().consistency();
    required = request.put().required();
    record.set_value(request.put().value());
    record.set_version(request.put().version());
    record.set_writer(request.put().writer());
  } else {
    level = request.del().consistency();
    required = request.del().required();
    record.set_deleted(true);
    record.set_version(request.del().version());
    record.set_writer(request.del().writer());
  }
  replication_.writes().Start(key_id, std::move(record), requester, level, required);
}

}  // namespace chord
