// SimNetwork: a deterministic, single-threaded world in which many unmodified ChordNode cores
// run against virtual time. It is every node's driver: messages are delivered after a seeded
// random latency (or lost, or cut by a partition), each node is ticked when its Ready asks,
// crashed nodes stop answering. Same seed and same calls give the same run, event for event.
// Used by the core's unit tests and by chord-sim. Not thread-safe.
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
#include <vector>

#include "node/core/chord_node.h"
#include "node/core/ready.h"
#include "node/storage/ledger_store.h"
#include "node/storage/memory_store.h"

namespace chord::sim {

struct SimOptions {
  uint64_t seed = 1;
  double mean_latency_ms = 50;  // one-way delay, exponentially distributed (ToN V-A)
  double min_latency_ms = 0;    // added to every delay
  double loss = 0;              // probability that a message is dropped
  // Receives every log line of every node with the virtual time; none when empty.
  std::function<void(uint64_t now_ms, const std::string& addr, const Ready::Log& line)> log;
};

// A `log` sink that prints "t=MS ADDR: line" to stderr.
void PrintNodeLog(uint64_t now_ms, const std::string& addr, const Ready::Log& line);

class SimNetwork {
 public:
  using ClientCallback = std::function<void(const wire::Envelope* response)>;  // null: none
  using LookupCallback = std::function<void(Result<LookupResult>)>;

  explicit SimNetwork(SimOptions options);
  ~SimNetwork();
  SimNetwork(const SimNetwork&) = delete;
  SimNetwork& operator=(const SimNetwork&) = delete;

  // Creates a node listening on `addr` (id = SHA-1 of addr) and starts it: a new ring when
  // `bootstrap` is empty, otherwise a join through it. Returns the node.
  const ChordNode* AddNode(const std::string& addr, const NodeConfig& config,
                           const std::string& bootstrap = "");
  // The same with several bootstrap addresses, tried in turn until the join succeeds.
  const ChordNode* AddNode(const std::string& addr, const NodeConfig& config,
                           const std::vector<std::string>& bootstraps);
  // The node stops at once, without a word to anyone; its state and keys are gone.
  void Crash(const std::string& addr);
  // Graceful leave; the node is removed once its hand-off finished.
  void Leave(const std::string& addr);
  // Makes the node on `addr` a member with this routing state at once (see
  // ChordNode::InstallRoutingState).
  void InstallRoutingState(const std::string& addr, std::vector<NodeRef> successors,
                           std::optional<NodeRef> predecessor,
                           const std::vector<std::optional<NodeRef>>& fingers);
  // Stops or restarts the periodic round of the node on `addr`.
  void SetMaintenance(const std::string& addr, bool enabled);
  // Starts a lookup on the node on `addr` now; `done` gets its result (never called if the
  // node is gone before it finishes).
  void Lookup(const std::string& addr, const Id& target, bool verify_owner, LookupCallback done);

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
  // Drops every message from one node to another for which `drop(from_addr, to_addr, message)`
  // is true, requests and answers alike (e.g. only a node's answers to pings, as when its ring
  // upkeep stalls while its data path runs); an empty function drops none.
  void SetDrop(std::function<bool(const std::string& from, const std::string& to,
                                  const wire::Envelope& message)>
                   drop) {
    drop_ = std::move(drop);
  }
  // Adds `delay(from_addr, to_addr)` milliseconds to every message between two nodes (a
  // congested link); an empty function removes it.
  void SetDelay(std::function<uint64_t(const std::string& from, const std::string& to)> delay) {
    delay_ = std::move(delay);
  }
  // The node on `addr` stops running, as under SIGSTOP: messages to it wait in its socket
  // queue and its timers do not fire. Resume delivers what waited, in order, then ticks it.
  void Pause(const std::string& addr);
  void Resume(const std::string& addr);
  // The wall clock of the node on `addr` runs `skew_ms` ahead of the others (behind when
  // negative) from now on; its monotonic clock is unchanged.
  void SetWallSkew(const std::string& addr, int64_t skew_ms);

  // Called after every event with the node the event ran on (null for none), e.g. to
  // re-check that node's invariants.
  void set_after_event(std::function<void(const ChordNode* touched)> hook) {
    after_event_ = std::move(hook);
  }
  // Runs `fn` on the simulated clock `delay_ms` from now, if the node on `addr` is still
  // there then (the event counts as that node's).
  void At(uint64_t delay_ms, const std::string& addr, std::function<void()> fn);

  uint64_t now_ms() const { return now_ms_; }
  // The clocks a node is given now (monotonic and wall).
  Clock NowClock() const;
  uint64_t events_processed() const { return events_; }
  std::mt19937_64& rng() { return rng_; }

  // The live node on `addr`, or null.
  const ChordNode* node(const std::string& addr) const;
  // The store of the node on `addr` (with its ledger: writes to it keep the node's counts
  // and digests right, as if the records had been there), or null.
  LedgerStore* store(const std::string& addr) const;
  // Number of live nodes (any state).
  size_t live_count() const { return hosts_.size(); }
  // Live nodes (joined or joining), in id order.
  std::vector<const ChordNode*> LiveNodes() const;

 private:
  // A message that reached a paused node.
  struct Held {
    bool is_request = false;
    ReplyToken from = 0;
    wire::Envelope envelope;
  };
  struct Host {
    std::string addr;
    uint64_t index = 0;
    std::unique_ptr<MemoryStore> memory;
    std::unique_ptr<LedgerStore> store;  // over `memory`
    std::unique_ptr<ChordNode> node;
    uint64_t wake_generation = 0;  // only the wake event of this generation runs
    bool paused = false;
    bool woke_while_paused = false;
    int64_t wall_skew_ms = 0;  // added to the wall clock this node is given
    std::vector<Held> held;    // messages waiting for Resume, in arrival order
    std::optional<uint64_t> wake_at_ms;
    std::unordered_map<uint64_t, LookupCallback> lookups;  // by lookup handle
  };
  struct Event {
    uint64_t at_ms;
    uint64_t seq;
    uint64_t host;             // the node the event runs on; 0 for none
    uint64_t wake_generation;  // a node's wake-up (0: any other event)
    std::function<void()> fn;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.at_ms != b.at_ms ? a.at_ms > b.at_ms : a.seq > b.seq;
    }
  };

  Host* FindHost(const std::string& addr) const;
  // Feeds the node of `host` one input at the current virtual time, then carries out its
  // Ready: messages posted with latency, the next wake-up, finished lookups, a finished leave.
  void Input(Host* host, const std::function<void(ChordNode&, const Clock&)>& input);
  void CarryOut(Host* host, Ready ready);
  void SendRequest(Host* from, const std::string& to, wire::Envelope request);
  void SendReply(Host* from, ReplyToken to, wire::Envelope reply);
  void Post(uint64_t delay_ms, uint64_t host, std::function<void()> fn);
  uint64_t Latency();
  // Extra delay of the link from host index `from` to `to_addr`.
  uint64_t LinkDelay(uint64_t from, const std::string& to_addr) const;
  // Hands a message to the node of `host`, or keeps it for Resume while the host is paused.
  void DeliverRequest(Host* host, ReplyToken from, const wire::Envelope& request);
  void DeliverResponse(Host* host, const wire::Envelope& response);
  // The node's deadline is due: Tick, unless paused (then on Resume).
  void Wake(Host* host);
  bool Lost();
  // True when a message from host index `from` to `to_addr` is dropped by the partition.
  bool Cut(uint64_t from, const std::string& to_addr) const;
  // True when that message is dropped by the drop predicate (SetDrop).
  bool Dropped(uint64_t from, const std::string& to_addr, const wire::Envelope& message) const;
  void RemoveHost(const std::string& addr);
  // Runs the next event due at or before `limit_ms`; false when there is none.
  bool Step(uint64_t limit_ms);

  SimOptions options_;
  std::mt19937_64 rng_;
  uint64_t now_ms_ = 0;
  uint64_t seq_ = 0;
  uint64_t events_ = 0;
  uint64_t next_host_index_ = 1;
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  std::map<std::string, std::unique_ptr<Host>> hosts_;
  std::unordered_map<uint64_t, Host*> by_index_;
  // Client calls in flight: token -> callback.
  uint64_t next_client_token_ = 1ull << 62;
  std::unordered_map<uint64_t, ClientCallback> clients_;
  std::function<void(const ChordNode*)> after_event_;
  std::function<bool(const std::string&, const std::string&)> cut_;
  std::function<uint64_t(const std::string&, const std::string&)> delay_;
  std::function<bool(const std::string&, const std::string&, const wire::Envelope&)> drop_;
  uint64_t touched_ = 0;
};

}  // namespace chord::sim

#endif  // CHORD_TOOLS_SIM_SIM_NETWORK_H_
