#include "tools/chordctl/watch_key.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "protocol/limits.h"
#include "tools/chordctl/render.h"
#include "tools/chordctl/stop_signals.h"
#include "tools/client/key_watcher.h"

namespace chord::ctl {
namespace {

bool CarriesState(const wire::WatchEvent& e) {
  return e.type() == wire::WatchEvent::RESYNC || e.type() == wire::WatchEvent::CURRENT;
}

}  // namespace

std::string WatchEventLine(const wire::WatchEvent& e, bool json) {
  const bool has_value = e.type() == wire::WatchEvent::PUT || (CarriesState(e) && !e.deleted());
  if (json) return DumpJson(WatchEventJson(e));
  std::string line = std::string(WatchEventTypeName(e.type())) + " " + std::to_string(e.version());
  if (has_value) line += " " + EscapeTsv(e.value());
  if (CarriesState(e) && e.deleted()) line += " (absent)";
  return line;
}

int RunWatchKey(const CtlOptions& options, const std::string& key, const WatchKeyOptions& watch) {
  if (std::string problem = KeyProblem(key); !problem.empty()) {
    PrintError(problem);
    return kExitUsage;
  }
  StopSignals signals;
  KeyWatchOptions follow;
  follow.contacts = {options.node};
  follow.key = key;
  follow.after_version = watch.from_version;
  follow.start = watch.from_version == 0;
  follow.wait_ms = watch.wait_ms;
  follow.timeout_ms = options.timeout_ms;
  follow.give_up_ms = watch.give_up_s * 1000;
  uint64_t printed = 0;
  AnswerProblem end = FollowKey(
      follow,
      [&](const wire::WatchEvent& e) {
        const std::string line = WatchEventLine(e, options.json) + "\n";
        std::fwrite(line.data(), 1, line.size(), stdout);
        std::fflush(stdout);
        ++printed;
        return watch.count == 0 || printed < watch.count;
      },
      [&] { return !StopRequested() && (watch.count == 0 || printed < watch.count); });
  if (end.kind == AnswerKind::kOk) return kExitOk;
  PrintError(end.sentence);
  return static_cast<int>(end.kind);
}

}  // namespace chord::ctl
