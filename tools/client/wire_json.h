// JSON forms of the protocol's answers, shared by chordctl (`lookup --json`, `status --json`,
// `ring --json`, `watch-key --json`) and the node's HTTP API, which must print the very same
// documents: their fields are the contract of DESIGN.md section 5 (add, never rename). Pure
// functions; any thread.
#ifndef CHORD_TOOLS_CLIENT_WIRE_JSON_H_
#define CHORD_TOOLS_CLIENT_WIRE_JSON_H_

#include <nlohmann/json.hpp>
#include <string>

#include "protocol/chord.pb.h"
#include "tools/client/ring_walk.h"

namespace chord {

// 40 lowercase hex digits for a 20-byte wire id; any other byte string is shown byte by byte
// so that nothing is hidden.
std::string HexOfIdBytes(const std::string& bytes);

// {"id": 40 lowercase hex, "addr": HOST:PORT}, or null for an unset NodeInfo.
nlohmann::json NodeJson(const wire::NodeInfo& info);
// {"key","key_id","owner","hops","timeouts","route":[addr..],"replicas":[node..]}.
nlohmann::json LookupJson(const std::string& key, const wire::LookupResponse& lookup);
nlohmann::json DataCountersJson(const wire::DataCounters& counters);
nlohmann::json StatusJson(const wire::StatusResponse& status);
nlohmann::json RingJson(const RingView& view);
// "put", "delete", "expire", "resync", "current".
const char* WatchEventTypeName(wire::WatchEvent::Type type);
// {"type","version"} and "value" when the event carries one, "deleted" for resync/current.
nlohmann::json WatchEventJson(const wire::WatchEvent& event);

// Serializes on one line (indent < 0) or indented; never throws (invalid UTF-8 is replaced).
std::string DumpJson(const nlohmann::json& doc, int indent = 2);

}  // namespace chord

#endif  // CHORD_TOOLS_CLIENT_WIRE_JSON_H_
