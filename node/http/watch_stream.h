// WatchStream: one GET /v1/watch/{key} of the HTTP API. A thread follows the key the way
// `chordctl watch-key` does: it looks the key's owner up through this node, long-polls the
// owner's Watch for the changes after the last version it passed on (following NOT_OWNER
// hints and looking the owner up again when it fails), and posts each event, as the JSON line
// of `watch-key --json`, to the loop. Stop() makes it finish its current poll and exit; the
// destructor joins it. Construct and destroy on the loop thread.
#ifndef CHORD_NODE_HTTP_WATCH_STREAM_H_
#define CHORD_NODE_HTTP_WATCH_STREAM_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "node/http/loop_mailbox.h"

namespace chord {

class WatchStream {
 public:
  // `on_event(type, version, json)` runs on the loop for every event; `on_end(sentence)` once
  // at the end: the sentence is empty after Stop(), else why the watch cannot go on (refused,
  // or no node answered for give_up_ms). The stream may be destroyed from on_end.
  using EventFn =
      std::function<void(const std::string& type, uint64_t version, const std::string& json)>;
  using EndFn = std::function<void(const std::string& sentence)>;

  struct Options {
    std::string via;  // this node's address: lookups go through it
    std::string key;
    uint64_t after_version = 0;
    bool start = true;  // begin with the key's current state, not the changes after a version
    uint32_t wait_ms = 1'000;  // one long poll at the owner
    uint64_t timeout_ms = 5'000;
    uint64_t give_up_ms = 30'000;
    std::string resume_hint = "from_version=";  // for the give-up sentence
  };

  WatchStream(Options options, LoopMailbox* mailbox, EventFn on_event, EndFn on_end);
  ~WatchStream();
  WatchStream(const WatchStream&) = delete;
  WatchStream& operator=(const WatchStream&) = delete;

  void Stop() { stop_ = true; }

 private:
  void Run();

  const Options options_;
  LoopMailbox* mailbox_;
  EventFn on_event_;
  EndFn on_end_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace chord

#endif  // CHORD_NODE_HTTP_WATCH_STREAM_H_
