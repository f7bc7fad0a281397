// WatchService: serves WatchRequests, the long polls of `chordctl watch-key` (and any client
// that follows a key). The key's owner answers with the changes after the watcher's version
// that its WatchLog can prove complete, at once when it has some, else when one is published
// or after the request's wait; a watcher that the log cannot serve without a gap gets one
// RESYNC event with the current state. A node that is not the owner still answers from its
// log (a former owner or a replica has the changes up to the hand-over), and otherwise
// answers NOT_OWNER, naming a better node: the watcher then looks the owner up again and
// resumes from the last version it saw. Waiting watchers are Waiters owned here, at most
// kMaxWaiting; a Waiter whose key is no longer owned is answered at the next round. Called
// by the ChordNode (requests, timers, after every step, rounds); the node's thread only.
#ifndef CHORD_NODE_CORE_WATCH_WATCH_SERVICE_H_
#define CHORD_NODE_CORE_WATCH_WATCH_SERVICE_H_

#include <cstdint>
#include <string>
#include <unordered_map>

#include "node/core/node_context.h"
#include "node/core/op_ref.h"
#include "protocol/chord.pb.h"

namespace chord {

class WatchService {
 public:
  static constexpr size_t kMaxWaiting = 1024;
  static constexpr uint32_t kMaxWaitMs = 30'000;
  static constexpr size_t kMaxEventsPerAnswer = 256;

  explicit WatchService(NodeContext& ctx) : ctx_(ctx) {}
  WatchService(const WatchService&) = delete;
  WatchService& operator=(const WatchService&) = delete;

  void HandleRequest(ReplyToken from, const wire::Envelope& request);
  // A Waiter's wait is over: answered with no events (the watcher asks again).
  void OnTimer(OpRef op);
  // After every step: Waiters whose keys have new published changes are answered.
  void Wake();
  // The periodic round: forgets idle keys, answers Waiters of keys this node no longer owns.
  void Round();
  size_t waiting() const { return waiters_.size(); }

 private:
  struct Waiter {
    ReplyToken from = 0;
    uint64_t request_id = 0;
    std::string key;
    uint64_t after = 0;
  };

  // Whether this node owns `key_id` and may serve it (joined, its hand-over received).
  bool Serving(const Id& key_id) const;
  // Fills `resp` with what a watcher of `key` that has seen `after` gets now; false when
  // there is nothing (the watcher waits, or is sent elsewhere).
  bool Collect(const std::string& key, uint64_t after, bool serving, wire::WatchResponse* resp);
  // One event with the key's current state (CURRENT or RESYNC).
  void AddCurrent(const std::string& key, wire::WatchEvent::Type type, wire::WatchResponse* resp);
  void NotOwner(const Id& key_id, wire::WatchResponse* resp) const;
  void Reply(ReplyToken from, uint64_t request_id, wire::WatchResponse resp);
  // Answers Waiter `id` with `resp` and forgets it.
  void Release(uint64_t id, wire::WatchResponse resp);

  NodeContext& ctx_;
  std::unordered_map<uint64_t, Waiter> waiters_;
  std::unordered_multimap<std::string, uint64_t> by_key_;
  uint64_t next_id_ = 1;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_WATCH_WATCH_SERVICE_H_
