// chordctl output: the readable text forms of lookup, status and ring answers (the ring table is in
// ring_table.h). Pure functions; called by chordctl commands.
#ifndef CHORD_TOOLS_CHORDCTL_RENDER_H_
#define CHORD_TOOLS_CHORDCTL_RENDER_H_

#include <nlohmann/json.hpp>
#include <string>

#include "protocol/chord.pb.h"
#include "tools/client/data_requests.h"
#include "tools/client/ring_walk.h"
#include "tools/client/wire_json.h"

namespace chord::ctl {

// The JSON documents (NodeJson, LookupJson, StatusJson, RingJson, WatchEventJson, DumpJson)
// are in tools/client/wire_json.h, shared with the node's HTTP API.

// "key K -> owner ID ADDR (N hops)".
std::string LookupText(const std::string& key, const wire::LookupResponse& lookup);
// One `name: value` line per field.
std::string StatusText(const wire::StatusResponse& status);

// Escapes backslash, tab, newline and carriage return so a field fits on one TSV line.
std::string EscapeTsv(const std::string& field);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_RENDER_H_
