// FollowKey: a key's changes as they happen, the way `chordctl watch-key` and the HTTP API's
// /v1/watch/{key} follow them: look the owner up through a contact, long-poll the owner's Watch
// for the changes after the last version passed on (`start`: the key's current state first),
// follow NOT_OWNER hints, and look the owner up again (through the contacts, the owners met
// remembered as further contacts) when it fails or dies. Blocking; one thread.
#ifndef CHORD_TOOLS_CLIENT_KEY_WATCHER_H_
#define CHORD_TOOLS_CLIENT_KEY_WATCHER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "protocol/chord.pb.h"
#include "tools/client/data_requests.h"

namespace chord {

struct KeyWatchOptions {
  std::vector<std::string> contacts;  // nodes to look the owner up through (at least one)
  std::string key;
  uint64_t after_version = 0;
  // Start with the key's current state (a `current` event) instead of the changes after
  // after_version. A resume after version 0 (the key was absent) sets after_version 0 and
  // start false.
  bool start = true;
  uint32_t wait_ms = 10'000;  // one long poll at the owner
  uint64_t timeout_ms = 5'000;
  uint64_t give_up_ms = 60'000;  // no node answered for this long: end
  // How the user resumes from a version, for the give-up sentence (the version follows).
  std::string resume_hint = "--from-version ";
};

// Calls `on_event` for every event, in order, until it returns false or `keep_going` does
// (asked before every call to a node). Returns kOk then; otherwise why it ended, as one
// sentence: kUsage when the owner refused the watch as invalid, kUnavailable when it was
// forbidden or no node answered for give_up_ms.
AnswerProblem FollowKey(const KeyWatchOptions& options,
                        const std::function<bool(const wire::WatchEvent&)>& on_event,
                        const std::function<bool()>& keep_going);

}  // namespace chord

#endif  // CHORD_TOOLS_CLIENT_KEY_WATCHER_H_
