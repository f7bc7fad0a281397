// SimNetwork: a deterministic, single-threaded world in which many unmodified ChordNode cores
// run against virtual time. It implements the Environment of every node: messages are
// delivered after a seeded random latency (or lost), timers fire in virtual time, crashed
// nodes stop answering. Same seed and same calls give the same run, event for event. Used by
// the core's unit tests and by chord-sim. Not thread-safe.
#ifndef CHORD_TOOLS_SIM_SIM_NETWORK_H_
#define CHORD_TOOLS_SIM_SIM_NETWORK_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "node/core/chord_node.h"
#include "node/core/environment.h"
#include "node/storage/memory_store.h"

namespace chord::sim {

struct SimOptions {
  uint64_t seed = 1;
  double mean_latency_ms = 50;  // one-way delay, exponentially distributed (ToN V-A)
  double min_latency_ms = 0;    // added to every delay
  double loss = 0;              // probability that a message is dropped
};

class SimNetwork {
 public:
  using ClientCallback = std::function<void(const wire::Envelope* response)>;  // null: none

  explicit SimNetwork(SimOptions options);
  ~SimNetwork();
  SimNetwork(const SimNetwork&) = delete;
  SimNetwork& operator=(const SimNetwork&) = delete;

  // Creates a node listening on `addr` (id = SHA-1 of addr) and starts it: a new ring when
  // `bootstrap` is empty, otherwise a join through it. Returns the node.
  ChordNode* AddNode(const std::string& addr, const NodeConfig& config,
                     const std::string& bootstrap = "");
  // The same with several bootstrap addresses, tried in turn until the join succeeds.
  ChordNode* AddNode(const std::string& addr, const NodeConfig& config,
                     const std::vector<std::string>& bootstraps);
  // The node stops at once, without a word to anyone; its state and keys are gone.
  void Crash(const std::string& addr);
  // Graceful leave; the node is removed once its hand-off finished.
  void Leave(const std::string& addr);

  // Sends a client request to `addr`; `done` gets the response, or null after `timeout_ms`.
  void ClientCall(const std::string& addr, wire::Envelope request, uint64_t timeout_ms,
                  ClientCallback done);

  // Runs events until virtual time `ms` from now has passed (or no event is left).
  void RunFor(uint64_t ms);
  // Runs until `done()` is true, checking after every event; false if `max_ms` passed first.
  bool RunUntil(const std::function<bool()>& done, uint64_t max_ms);

  // Drops every message from one node to another while `cut(from_addr, to_addr)` is true (a
  // network partition); an empty function heals it.
  void SetPartition(std::function<bool(const std::string& from, const std::string& to)> cut) {
    cut_ = std::move(cut);
  }

  // Called after every event with the node the event ran on (null for none), e.g. to
  // re-check that node's invariants.
  void set_after_event(std::function<void(ChordNode* touched)> hook) {
    after_event_ = std::move(hook);
  }
  // Runs `fn` on the simulated clock `delay_ms` from now, on behalf of node `addr` (the
  // event is skipped if that node is gone by then).
  void At(uint64_t delay_ms, const std::string& addr, std::function<void(ChordNode*)> fn);

  uint64_t now_ms() const { return now_ms_; }
  uint64_t events_processed() const { return events_; }
  std::mt19937_64& rng() { return rng_; }

  // The live node on `addr`, or null.
  ChordNode* node(const std::string& addr) const;
  MemoryStore* store(const std::string& addr) const;
  // Number of live nodes (any state).
  size_t live_count() const { return hosts_.size(); }
  // Live nodes (joined or joining), in id order.
  std::vector<ChordNode*> LiveNodes() const;

 private:
  class NodeEnv;
  struct Host {
    std::string addr;
    uint64_t index = 0;
    std::unique_ptr<NodeEnv> env;
    std::unique_ptr<MemoryStore> store;
    std::unique_ptr<ChordNode> node;
  };
  struct Event {
    uint64_t at_ms;
    uint64_t seq;
    TimerId timer;  // 0 for message deliveries
    uint64_t host;  // the node whose timer this is; 0 when not a timer
    std::function<void()> fn;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.at_ms != b.at_ms ? a.at_ms > b.at_ms : a.seq > b.seq;
    }
  };

  TimerId Schedule(uint64_t host, uint64_t delay_ms, std::function<void()> fn);
  // Records that the current event ran on `host` (for the after-event hook).
  void Touch(uint64_t host) { touched_ = host; }
  void Post(uint64_t delay_ms, std::function<void()> fn);
  uint64_t Latency();
  bool Lost();
  // True when a message from host index `from` to `to_addr` is dropped by the partition.
  bool Cut(uint64_t from, const std::string& to_addr) const;
  void RemoveHost(const std::string& addr);
  // Runs the next event due at or before `limit_ms`; false when there is none.
  bool Step(uint64_t limit_ms);

  SimOptions options_;
  std::mt19937_64 rng_;
  uint64_t now_ms_ = 0;
  uint64_t seq_ = 0;
  uint64_t events_ = 0;
  TimerId next_timer_ = 1;
  uint64_t next_host_index_ = 1;
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  std::unordered_set<TimerId> pending_timers_;  // scheduled, not fired, not cancelled
  std::unordered_set<TimerId> cancelled_;       // cancelled, event still queued
  std::map<std::string, std::unique_ptr<Host>> hosts_;
  std::unordered_map<uint64_t, Host*> by_index_;
  // Client calls in flight: token -> callback.
  uint64_t next_client_token_ = 1ull << 62;
  std::unordered_map<uint64_t, ClientCallback> clients_;
  std::function<void(ChordNode*)> after_event_;
  std::function<bool(const std::string&, const std::string&)> cut_;
  uint64_t touched_ = 0;
};

}  // namespace chord::sim

#endif  // CHORD_TOOLS_SIM_SIM_NETWORK_H_
