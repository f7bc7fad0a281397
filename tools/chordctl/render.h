// chordctl output: the JSON documents of `lookup --json`, `status --json` and `ring --json`
// (their fields are the contract of DESIGN.md section 5: add, never rename) and the
// readable text forms of the same answers (the ring table is in ring_table.h). Pure
// functions; called by chordctl commands.
#ifndef CHORD_TOOLS_CHORDCTL_RENDER_H_
#define CHORD_TOOLS_CHORDCTL_RENDER_H_

#include <nlohmann/json.hpp>
#include <string>

#include "protocol/chord.pb.h"
#include "tools/client/ring_walk.h"

namespace chord::ctl {

// {"id": 40 lowercase hex, "addr": HOST:PORT}, or null for an unset NodeInfo.
nlohmann::json NodeJson(const wire::NodeInfo& info);
nlohmann::json LookupJson(const std::string& key, const wire::LookupResponse& lookup);
nlohmann::json StatusJson(const wire::StatusResponse& status);
nlohmann::json RingJson(const RingView& view);

// Serializes for stdout; never throws (invalid UTF-8 in keys is replaced).
std::string DumpJson(const nlohmann::json& doc);

// "key K -> owner ID ADDR (N hops)".
std::string LookupText(const std::string& key, const wire::LookupResponse& lookup);
// One `name: value` line per field.
std::string StatusText(const wire::StatusResponse& status);

// `key` quoted for an error sentence, shortened when long and with control bytes escaped.
std::string QuoteKey(const std::string& key);
// Escapes backslash, tab, newline and carriage return so a field fits on one TSV line.
std::string EscapeTsv(const std::string& field);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_RENDER_H_
