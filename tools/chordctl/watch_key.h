// `chordctl watch-key KEY`: follows one key's changes and prints one line per event, in
// version order and without gaps: "put VERSION VALUE", "delete VERSION", "expire VERSION",
// and "current VERSION VALUE|(absent)" at the start, "resync VERSION VALUE|(absent)" when
// the ring could not prove that nothing was missed (the current state replaces the changes
// in between). It long-polls the key's owner (found with a lookup through --node or any
// node seen since) and, when the owner changes or dies, looks it up again and resumes after
// the last version printed. Called by chordctl's main only.
#ifndef CHORD_TOOLS_CHORDCTL_WATCH_KEY_H_
#define CHORD_TOOLS_CHORDCTL_WATCH_KEY_H_

#include <cstdint>
#include <string>

#include "protocol/chord.pb.h"
#include "tools/chordctl/commands.h"

namespace chord::ctl {

inline constexpr uint64_t kMaxWatchKeyEvents = 1'000'000'000;
inline constexpr uint64_t kMaxWatchKeyGiveUpS = 7 * 24 * 3600;

struct WatchKeyOptions {
  uint64_t from_version = 0;     // resume after this version (0: start with the current state)
  uint64_t count = 0;            // stop after this many events (0: until a stop signal)
  uint32_t wait_ms = 2000;       // how long one poll waits at the owner
  uint64_t give_up_s = 60;       // exit 3 when no node has answered for this long
};

// The line for `e` (without the newline); JSON with options.json.
std::string WatchEventLine(const wire::WatchEvent& e, bool json);
// Exit 0 after `count` events or a stop signal; 2 for a bad key; 3 when no node answers.
int RunWatchKey(const CtlOptions& options, const std::string& key, const WatchKeyOptions& watch);

}  // namespace chord::ctl

#endif  // CHORD_TOOLS_CHORDCTL_WATCH_KEY_H_
