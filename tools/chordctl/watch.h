// Watch: `chordctl watch`, a live view of the ring refreshed every --interval-ms: a header
// with the time, totals and the check verdict, then one line per ring position with a bar
// proportional to its primary key count, the count, the change since the previous refresh and
// the replica count. On a terminal it redraws in place (ANSI home/clear, cursor hidden and
// restored on exit); otherwise it prints plain frames separated by a blank line. SIGINT,
// SIGTERM and SIGHUP end it cleanly with exit 0. Called by chordctl's main.
#ifndef CHORD_TOOLS_CHORDCTL_WATCH_H_
#define CHORD_TOOLS_CHORDCTL_WATCH_H_

#include <cstdint>
#include <map>
#include <string>

#include "tools/chordctl/commands.h"
#include "tools/chordctl/ring_survey.h"

namespace chord::ctl {

inline constexpr uint64_t kDefaultWatchIntervalMs = 1000;
inline constexpr uint64_t kMaxWatchIntervalMs = 3600 * 1000;
// Each status call of a refresh waits at most this long unless --timeout-ms is given, so that
// a node that stops answering shows as Down within a few seconds.
inline constexpr uint64_t kWatchDefaultTimeoutMs = 2000;
// Bar width when stdout is not a terminal (or its width is unknown).
inline constexpr int kWatchPlainBarWidth = 40;

struct WatchOptions {
  uint64_t interval_ms = kDefaultWatchIntervalMs;
  uint64_t count = 0;  // frames to print; 0 = until a signal
};

// One frame's inputs besides the survey.
struct WatchFrameContext {
  std::string time;  // "2024-05-01 12:00:03"
  uint64_t interval_ms = kDefaultWatchIntervalMs;
  int bar_width = kWatchPlainBarWidth;                        // cells for the largest key count
  const std::map<std::string, uint64_t>* previous = nullptr;  // addr -> keys last frame
  std::string error;  // set when no node answered this refresh
};

// The text of one frame (lines ended by '\n', no control sequences). `survey` may be null
// when context.error says why there is none.
std::string WatchFrame(const RingSurvey* survey, const WatchFrameContext& context);

// Exit 0 after --count frames or on a signal; 3 when --node is unreachable at the start.
int RunWatch(const CtlOptions& options, const WatchOptions& watch);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_WATCH_H_
