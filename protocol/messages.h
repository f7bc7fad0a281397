// Typed builders of the Envelopes that nodes and clients send, so that no caller assembles a
// message body field by field inline. Requests get their request id from whoever sends them.
// Pure functions; any thread.
#ifndef CHORD_PROTOCOL_MESSAGES_H_
#define CHORD_PROTOCOL_MESSAGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/chord.pb.h"
#include "protocol/id.h"
#include "protocol/node_ref.h"

namespace chord::msg {

// --- ring maintenance
wire::Envelope GetState();
wire::Envelope Ping();
wire::Envelope StabilizeNow();
wire::Envelope Notify(const NodeRef& self, bool want_keys);
wire::Envelope FindNextHop(const Id& target);
wire::Envelope Leave(const NodeRef& self, const std::optional<NodeRef>& predecessor,
                     const std::vector<NodeRef>& successors);
wire::Envelope Transfer(const NodeRef& from, std::vector<wire::Record> records, bool last);

// --- data
wire::Envelope Put(std::string_view key, std::string_view value);
wire::Envelope Get(std::string_view key);
wire::Envelope Delete(std::string_view key);
wire::Envelope Lookup(std::string_view key);
// A get of the copy a replica holds (answered even by a node that does not own the key).
// `for_condition`: the asking owner decides a conditional write on the answer, so a member
// that owns the key itself refuses it; `asker` (the owner, to its first replica only) asks
// that replica to confirm that the owner's process is its predecessor.
wire::Envelope ReplicaGet(std::string_view key, bool for_condition = false,
                          const NodeRef* asker = nullptr);
// The same get, put or delete marked `direct`: for the key's owner itself, never routed on.
wire::Envelope AsDirect(wire::Envelope request);
// The key of a get, put or delete request; empty for any other body.
const std::string& DataKey(const wire::Envelope& request);
bool IsDirect(const wire::Envelope& request);
// Whether a request is a get that needs several replicas to answer (quorum, all, -r N > 1).
bool ReadsSeveral(const wire::Envelope& request);
// The `suspect` of a get, put or delete request (empty when none).
const std::string& Suspect(const wire::Envelope& request);

// --- replication
wire::Envelope Replicate(const NodeRef& from, std::vector<wire::Record> records);
// A Replicate of one record (copied once).
wire::Envelope ReplicateOne(const NodeRef& from, const wire::Record& record);
wire::Envelope SyncDigest(const NodeRef& from, const Id& from_id, const Id& to_id,
                          const std::vector<uint64_t>& digests);
wire::Envelope SyncPull(const Id& from_id, const Id& to_id, uint32_t buckets,
                        const std::vector<uint32_t>& wanted, uint64_t max_bytes,
                        const std::optional<Id>& after);
// Tombstones to erase where they are still at these versions (keys and versions only).
wire::Envelope Purge(const std::vector<wire::Record>& tombstones);
wire::Envelope ReplicaSet();

// --- answers with simple bodies
// Takes `response` over (swapped in: it is left empty).
wire::Envelope Data(wire::DataResponse&& response);
wire::Envelope Error(wire::Code code, std::string sentence);
// The empty answer of the same type as `request` (ping, notify, leave, stabilize_now,
// merge_hint).
wire::Envelope EmptyAnswer(const wire::Envelope& request);

}  // namespace chord::msg

#endif  // CHORD_PROTOCOL_MESSAGES_H_
