// Durations on the command line: "500ms", "30s", "5m", "1h", "2d", or several joined
// ("1h30m"). Used by chordctl put --ttl and the HTTP API ttl parameter; pure functions, any thread
// (and the wall clock that chordctl dump and load judge expiries by).
#ifndef CHORD_TOOLS_CLIENT_DURATION_H_
#define CHORD_TOOLS_CLIENT_DURATION_H_

#include <cstdint>
#include <string>

#include "protocol/base/status.h"
#include "protocol/limits.h"

namespace chord {

// Milliseconds of `text`, between 1 ms and kMaxTtlMs (the longest TTL a node accepts, about
// ten years); InvalidArgument with one sentence otherwise.
Result<uint64_t> ParseDuration(const std::string& text);

// This machine's wall clock in Unix milliseconds: what a client judges expiries by.
uint64_t UnixNowMs();

}  // namespace chord

#endif  // CHORD_TOOLS_CLIENT_DURATION_H_
