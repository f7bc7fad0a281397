// CounterLog: the increments of shared counters that a ring acknowledged, as chord-lancheck's
// `count` writers make them by compare-and-set while faults are injected, and the check that
// compare-and-set held. An increment reads a counter (value n at version v) and puts n + 1
// only if the key is still at v (only if it is absent, for the first). So no two acknowledged
// increments of one counter may write the same value (both would have started from the same
// state: one update lost), and once the ring has healed every counter must read at least the
// highest value acknowledged on it, at a version no older than that write's. One line per
// acknowledged increment, tab-separated: key, version read (0: absent), value written, version
// written, milliseconds since the run began. Pure data and text; any thread.
#ifndef CHORD_TOOLS_LANCHECK_COUNTER_LOG_H_
#define CHORD_TOOLS_LANCHECK_COUNTER_LOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/base/status.h"
#include "tools/lancheck/ack_log.h"

namespace chord::lancheck {

struct Increment {
  std::string key;
  uint64_t from_version = 0;  // the version the put was conditional on; 0: on the key's absence
  uint64_t value = 0;         // the counter's value the put wrote
  uint64_t version = 0;       // the version the ring acknowledged it with
  uint64_t at_ms = 0;
};

std::string FormatIncrement(const Increment& inc);
// Parses the lines of an increment log; InvalidArgument naming the first bad line.
Result<std::vector<Increment>> ParseIncrementLog(const std::string& text);
// Checks the acknowledged increments of every counter against each other (Verdict::doubled)
// and against what the counter reads now (lost: missing, not a number, or below the highest
// acknowledged value; stale: a version older than that write's; unreadable: no node answered).
Verdict VerifyCounters(const std::vector<Increment>& incs, const ReadFn& read);

}  // namespace chord::lancheck

#endif  // CHORD_TOOLS_LANCHECK_COUNTER_LOG_H_
