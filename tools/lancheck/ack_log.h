// AckLog: the writes a ring acknowledged, as chord-lancheck records them while faults are
// injected, and the check that none was lost: after the ring has healed, every unique key must
// read its value, and every register (a key many writers overwrite) its newest acknowledged
// value, or one written later whose answer was lost (a newer version). One line per
// acknowledged write, tab-separated: key, value, version, milliseconds since the run began.
// Pure data and text; any thread.
#ifndef CHORD_TOOLS_LANCHECK_ACK_LOG_H_
#define CHORD_TOOLS_LANCHECK_ACK_LOG_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/base/status.h"

namespace chord::lancheck {

struct Ack {
  std::string key;
  std::string value;
  uint64_t version = 0;
  uint64_t at_ms = 0;
};

// What a key reads as at the end: nullopt when it does not exist (or could not be read, with
// the reason in *error).
using ReadFn = std::function<std::optional<std::pair<std::string, uint64_t>>(const std::string& key,
                                                                             std::string* error)>;

// Bound on the problems a verdict spells out.
inline constexpr size_t kMaxProblems = 20;

struct Verdict {
  uint64_t keys = 0;        // distinct keys checked
  uint64_t lost = 0;        // acknowledged, now missing (a counter: or below its value)
  uint64_t stale = 0;       // reads an older version than the newest acknowledged one
  uint64_t doubled = 0;     // counters (CounterLog): acknowledged twice with the same value
  uint64_t unreadable = 0;  // could not be read (no node answered): neither lost nor kept
  std::vector<std::string> problems;  // one sentence each, the first few
};

// Whether `s` is a whole decimal number that fits in 64 bits (into *out).
bool ParseU64(const std::string& s, uint64_t* out);
// The non-empty lines of a log, each as its line number (from 1) and its tab-separated cells.
std::vector<std::pair<int, std::vector<std::string>>> TabRows(const std::string& text);

std::string FormatAck(const Ack& ack);
// Parses the lines of an ack log; InvalidArgument naming the first bad line.
Result<std::vector<Ack>> ParseAckLog(const std::string& text);
// The newest acknowledged write of every key (highest version).
std::map<std::string, Ack> NewestByKey(const std::vector<Ack>& acks);
// Reads every key and compares it with its newest acknowledged write.
Verdict Verify(const std::vector<Ack>& acks, const ReadFn& read);

}  // namespace chord::lancheck

#endif  // CHORD_TOOLS_LANCHECK_ACK_LOG_H_
