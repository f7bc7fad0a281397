// RingFeed: the HTTP API's view of the whole ring. A thread walks the ring from this node
// (WalkRing, as `chordctl ring` does) when a GET /v1/ring asks, and about every poll_ms while
// anyone follows /v1/ring/events; each walk comes back to the loop as the JSON of
// `chordctl ring --json`, and, for followers, as events for what changed since the walk
// before: a node that appeared (join), one that disappeared or stopped answering (down), a
// state that changed (Up/Joining/Leaving). Loop thread, except the walker.
#ifndef CHORD_NODE_HTTP_RING_FEED_H_
#define CHORD_NODE_HTTP_RING_FEED_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "node/http/loop_mailbox.h"

namespace chord {

// One event of /v1/ring/events: `name` and its one-line JSON `data`.
struct RingEvent {
  std::string name;
  std::string data;
};

class RingFeed {
 public:
  // `on_walk(ok, ring_json_or_error, events)` runs on the loop after every walk; `events`
  // are the changes since the previous successful walk (empty for the first).
  using WalkFn =
      std::function<void(bool ok, const std::string& body, const std::vector<RingEvent>& events)>;

  RingFeed(std::string start_addr, uint64_t timeout_ms, uint64_t poll_ms, LoopMailbox* mailbox,
           WalkFn on_walk);
  ~RingFeed();  // stops and joins the walker
  RingFeed(const RingFeed&) = delete;
  RingFeed& operator=(const RingFeed&) = delete;

  // Asks for a walk as soon as the walker is free.
  void WalkNow();
  // Whether to keep walking every poll_ms (someone follows the events).
  void SetPolling(bool polling);
  // Makes the walker stop at its next status call, without waiting for it (loop thread).
  void RequestStop();
  // RequestStop, then joins the walker.
  void Stop();

 private:
  struct Seen {
    std::string addr;
    std::string state;
  };
  void Run();
  // The events between the walk before (`before`) and this one.
  static std::vector<RingEvent> Diff(const std::map<std::string, Seen>& before,
                                     const std::map<std::string, Seen>& now,
                                     const std::vector<std::string>& problems, uint64_t at_ms);

  const std::string start_addr_;
  const uint64_t timeout_ms_;
  const uint64_t poll_ms_;
  LoopMailbox* mailbox_;
  WalkFn on_walk_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool walk_requested_ = false;        // guarded by mu_
  bool polling_ = false;               // guarded by mu_
  bool stop_ = false;                  // guarded by mu_
  std::atomic<bool> stopping_{false};  // read by the walk between status calls
  std::map<std::string, Seen> last_;   // walker thread only: id -> node, of the last walk
  bool have_last_ = false;             // walker thread only
  std::thread thread_;
};

}  // namespace chord

#endif  // CHORD_NODE_HTTP_RING_FEED_H_
