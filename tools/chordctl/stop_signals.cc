#include "tools/chordctl/stop_signals.h"

#include <algorithm>
#include <thread>

namespace chord::ctl {
namespace {

constexpr auto kSleepSlice = std::chrono::milliseconds(50);

volatile sig_atomic_t g_stop = 0;

void OnStopSignal(int) { g_stop = 1; }

}  // namespace

StopSignals::StopSignals() {
  g_stop = 0;
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a sleep ends at once
  for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &action, &old_[i]);
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
}

bool StopRequested() { return g_stop != 0; }

void SleepUntil(std::chrono::steady_clock::time_point deadline) {
  while (g_stop == 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(deadline - now, kSleepSlice));
  }
}

}  // namespace chord::ctl
