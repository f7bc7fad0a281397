// StopSignals: while one lives, SIGINT, SIGTERM and SIGHUP ask a long-running chordctl
// command (watch, watch-key) to stop instead of killing it; the old handlers come back when
// it goes out of scope. One at a time; chordctl's main thread only.
#ifndef CHORD_TOOLS_CHORDCTL_STOP_SIGNALS_H_
#define CHORD_TOOLS_CHORDCTL_STOP_SIGNALS_H_

#include <signal.h>

#include <array>
#include <chrono>

namespace chord::ctl {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

// Whether a stop signal arrived since the StopSignals was made.
bool StopRequested();
// Sleeps until `deadline` or a stop signal, whichever comes first.
void SleepUntil(std::chrono::steady_clock::time_point deadline);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_STOP_SIGNALS_H_
