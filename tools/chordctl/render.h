// chordctl output: the readable text forms of lookup, status and ring answers (the ring table is in
// ring_table.h). Pure functions; called by chordctl commands.
#ifndef CHORD_TOOLS_CHORDCTL_RENDER_H_
#define CHORD_TOOLS_CHORDCTL_RENDER_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// One record as `chordctl dump` lists it.
struct DumpRecord {
  std::string key;
  std::string value;
  uint64_t expires_unix_ms = 0;  // 0: never
};
// What dump prints for `records` at `now_unix_ms` (chordctl's clock): one TSV line per key,
// sorted by key bytes, key<TAB>value escaped, and <TAB>expiry for a key with one; a record past
// its expiry (not yet swept by its node) is left out, and of two records of one key only the
// first in (value, expiry) order is kept. Sets *listed to the lines written.
std::string DumpText(std::vector<DumpRecord> records, uint64_t now_unix_ms, size_t* listed);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_RENDER_H_
