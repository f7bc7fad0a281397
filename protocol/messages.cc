#include "protocol/messages.h"

#include <utility>

namespace chord::msg {

wire::Envelope GetState() {
  wire::Envelope e;
  e.mutable_get_state();
  return e;
}

wire::Envelope Ping() {
  wire::Envelope e;
  e.mutable_ping();
  return e;
}

wire::Envelope StabilizeNow() {
  wire::Envelope e;
  e.mutable_stabilize_now();
  return e;
}

wire::Envelope Notify(const NodeRef& self, bool want_keys) {
  wire::Envelope e;
  self.ToWire(e.mutable_notify()->mutable_node());
  e.mutable_notify()->set_want_keys(want_keys);
  return e;
}

wire::Envelope FindNextHop(const Id& target) {
  wire::Envelope e;
  e.mutable_find_next_hop()->set_target(target.ToBytes());
  return e;
}

wire::Envelope Leave(const NodeRef& self, const std::optional<NodeRef>& predecessor,
                     const std::vector<NodeRef>& successors) {
  wire::Envelope e;
  auto* l = e.mutable_leave();
  self.ToWire(l->mutable_node());
  if (predecessor) predecessor->ToWire(l->mutable_predecessor());
  for (const NodeRef& s : successors) s.ToWire(l->add_successors());
  return e;
}

wire::Envelope Transfer(const NodeRef& from, std::vector<wire::Record> records, bool last) {
  wire::Envelope e;
  auto* t = e.mutable_transfer();
  from.ToWire(t->mutable_from());
  for (auto& r : records) *t->add_records() = std::move(r);
  t->set_last(last);
  return e;
}

wire::Envelope Put(std::string_view key, std::string_view value) {
  wire::Envelope e;
  e.mutable_put()->set_key(std::string(key));
  e.mutable_put()->set_value(std::string(value));
  return e;
}

wire::Envelope Get(std::string_view key) {
  wire::Envelope e;
  e.mutable_get()->set_key(std::string(key));
  return e;
}

wire::Envelope Delete(std::string_view key) {
  wire::Envelope e;
  e.mutable_del()->set_key(std::string(key));
  return e;
}

wire::Envelope Lookup(std::string_view key) {
  wire::Envelope e;
  e.mutable_lookup()->set_key(std::string(key));
  return e;
}

wire::Envelope ReplicaGet(std::string_view key, bool for_condition, const NodeRef* asker) {
  wire::Envelope e = Get(key);
  e.mutable_get()->set_direct(true);
  e.mutable_get()->set_from_replica(true);
  if (for_condition) e.mutable_get()->set_for_condition(true);
  if (asker != nullptr) asker->ToWire(e.mutable_get()->mutable_asker());
  return e;
}

wire::Envelope AsDirect(wire::Envelope request) {
  if (request.has_put()) {
    request.mutable_put()->set_direct(true);
  } else if (request.has_get()) {
    request.mutable_get()->set_direct(true);
  } else if (request.has_del()) {
    request.mutable_del()->set_direct(true);
  }
  return request;
}

const std::string& DataKey(const wire::Envelope& request) {
  if (request.has_put()) return request.put().key();
  if (request.has_get()) return request.get().key();
  if (request.has_del()) return request.del().key();
  static const std::string kNone;
  return kNone;
}

bool ReadsSeveral(const wire::Envelope& request) {
  if (!request.has_get()) return false;
  const auto& get = request.get();
  return get.required() > 1 || get.consistency() == wire::CONSISTENCY_QUORUM ||
         get.consistency() == wire::CONSISTENCY_ALL;
}

bool IsDirect(const wire::Envelope& request) {
  if (request.has_put()) return request.put().direct();
  if (request.has_get()) return request.get().direct();
  if (request.has_del()) return request.del().direct();
  return false;
}

const std::string& Suspect(const wire::Envelope& request) {
  if (request.has_put()) return request.put().suspect();
  if (request.has_get()) return request.get().suspect();
  if (request.has_del()) return request.del().suspect();
  static const std::string kNone;
  return kNone;
}

wire::Envelope Replicate(const NodeRef& from, std::vector<wire::Record> records) {
  wire::Envelope e;
  auto* r = e.mutable_replicate();
  from.ToWire(r->mutable_from());
  for (auto& rec : records) *r->add_records() = std::move(rec);
  return e;
}

wire::Envelope ReplicateOne(const NodeRef& from, const wire::Record& record) {
  wire::Envelope e = Replicate(from, {});
  *e.mutable_replicate()->add_records() = record;
  return e;
}

wire::Envelope SyncDigest(const NodeRef& from, const Id& from_id, const Id& to_id,
                          const std::vector<uint64_t>& digests) {
  wire::Envelope e;
  auto* d = e.mutable_sync_digest();
  from.ToWire(d->mutable_from());
  d->set_from_id(from_id.ToBytes());
  d->set_to_id(to_id.ToBytes());
  d->set_buckets(static_cast<uint32_t>(digests.size()));
  for (uint64_t x : digests) d->add_digests(x);
  return e;
}

wire::Envelope SyncPull(const Id& from_id, const Id& to_id, uint32_t buckets,
                        const std::vector<uint32_t>& wanted, uint64_t max_bytes,
                        const std::optional<Id>& after) {
  wire::Envelope e;
  auto* p = e.mutable_sync_pull();
  p->set_from_id(from_id.ToBytes());
  p->set_to_id(to_id.ToBytes());
  p->set_buckets(buckets);
  for (uint32_t b : wanted) p->add_wanted(b);
  p->set_max_bytes(max_bytes);
  if (after) p->set_after_id(after->ToBytes());
  return e;
}

wire::Envelope Purge(const std::vector<wire::Record>& tombstones) {
  wire::Envelope e;
  for (const auto& r : tombstones) {
    wire::Record* out = e.mutable_purge()->add_records();
    out->set_key(r.key());
    out->set_version(r.version());
    out->set_writer(r.writer());  // a holder erases only that writer's tombstone
    out->set_deleted(true);
  }
  return e;
}

wire::Envelope ReplicaSet() {
  wire::Envelope e;
  e.mutable_replica_set();
  return e;
}

wire::Envelope Data(wire::DataResponse&& response) {
  wire::Envelope e;
  e.mutable_data_resp()->Swap(&response);  // taken over, not copied: one message, no temporary
  return e;
}

wire::Envelope Error(wire::Code code, std::string sentence) {
  wire::Envelope e;
  e.mutable_error()->set_code(code);
  e.mutable_error()->set_error(std::move(sentence));
  return e;
}

wire::Envelope EmptyAnswer(const wire::Envelope& request) {
  wire::Envelope e;
  switch (request.body_case()) {
    case wire::Envelope::kPing:
      e.mutable_ping_resp();
      break;
    case wire::Envelope::kNotify:
      e.mutable_notify_resp();
      break;
    case wire::Envelope::kLeave:
      e.mutable_leave_resp();
      break;
    case wire::Envelope::kStabilizeNow:
      e.mutable_stabilize_now_resp();
      break;
    case wire::Envelope::kMergeHint:
      e.mutable_merge_hint_resp();
      break;
    default:
      break;
  }
  return e;
}

}  // namespace chord::msg
