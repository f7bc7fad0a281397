#include "tools/sim/sim_network.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace chord::sim {
namespace {
constexpr uint64_t kSimEpochMs = 1'767'225'600'000;  // 2026-01-01
}  // namespace

void PrintNodeLog(uint64_t now_ms, const std::string& addr, const Ready::Log& line) {
  std::fprintf(stderr, "t=%llu %s: %s\n", static_cast<unsigned long long>(now_ms), addr.c_str(),
               line.text.c_str());
}

SimNetwork::SimNetwork(SimOptions options) : options_(options), rng_(options.seed) {}

SimNetwork::~SimNetwork() = default;

Clock SimNetwork::NowClock() const {
  // Virtual wall time: a fixed epoch plus the virtual clock.
  return Clock{now_ms_, kSimEpochMs + now_ms_};
}

SimNetwork::Host* SimNetwork::FindHost(const std::string& addr) const {
  auto it = hosts_.find(addr);
  return it == hosts_.end() ? nullptr : it->second.get();
}

void SimNetwork::Input(Host* host, const std::function<void(ChordNode&, const Clock&)>& input) {
  touched_ = host->index;
  Clock now = NowClock();
  now.wall_ms = static_cast<uint64_t>(static_cast<int64_t>(now.wall_ms) + host->wall_skew_ms);
  input(*host->node, now);
  CarryOut(host, host->node->TakeReady());
}

void SimNetwork::CarryOut(Host* host, Ready ready) {
  if (options_.log) {
    for (const Ready::Log& line : ready.logs) options_.log(now_ms_, host->addr, line);
  }
  for (size_t k = 0; k < ready.requests.size(); ++k) {
    SendRequest(host, ready.requests[k].to, ready.Take(k));
  }
  for (Ready::Reply& r : ready.replies) SendReply(host, r.to, std::move(r.envelope));
  if (ready.wake_at_ms && ready.wake_at_ms != host->wake_at_ms) {
    host->wake_at_ms = ready.wake_at_ms;
    const uint64_t gen = ++host->wake_generation;
    const uint64_t index = host->index;
    const uint64_t at = std::max(*ready.wake_at_ms, now_ms_);
    queue_.push(Event{at, seq_++, index, gen, [this, index] { Wake(by_index_.at(index)); }});
  }
  if (ready.left) {
    // Remove this incarnation only: the address may have been reused by then.
    const std::string addr = host->addr;
    const uint64_t index = host->index;
    Post(0, 0, [this, addr, index] {
      Host* h = FindHost(addr);
      if (h != nullptr && h->index == index) RemoveHost(addr);
    });
  }
  // Last, and from a list of their own: a callback may start more work on any node, this one
  // included, or crash it.
  std::vector<std::pair<LookupCallback, Result<LookupResult>>> done;
  for (Ready::Lookup& l : ready.lookups) {
    auto it = host->lookups.find(l.handle);
    if (it == host->lookups.end()) continue;
    done.emplace_back(std::move(it->second), std::move(l.result));
    host->lookups.erase(it);
  }
  for (auto& [callback, result] : done) callback(std::move(result));
}

void SimNetwork::SendRequest(Host* from, const std::string& to, wire::Envelope request) {
  if (Lost() || Cut(from->index, to) || Dropped(from->index, to, request)) return;
  const uint64_t token = from->index;
  Post(Latency() + LinkDelay(from->index, to), 0, [this, to, token, request = std::move(request)] {
    if (Host* h = FindHost(to)) DeliverRequest(h, token, request);  // else nobody is there
  });
}

void SimNetwork::SendReply(Host* from, ReplyToken to, wire::Envelope reply) {
  if (Lost()) return;
  if (auto peer = by_index_.find(to);
      peer != by_index_.end() &&
      (Cut(from->index, peer->second->addr) || Dropped(from->index, peer->second->addr, reply))) {
    return;
  }
  const auto peer = by_index_.find(to);
  const uint64_t delay = peer != by_index_.end() ? LinkDelay(from->index, peer->second->addr) : 0;
  Post(Latency() + delay, 0, [this, to, reply = std::move(reply)] {
    if (auto c = clients_.find(to); c != clients_.end()) {
      ClientCallback cb = std::move(c->second);
      clients_.erase(c);
      cb(&reply);
      return;
    }
    auto it = by_index_.find(to);
    if (it != by_index_.end()) DeliverResponse(it->second, reply);
  });
}

void SimNetwork::Post(uint64_t delay_ms, uint64_t host, std::function<void()> fn) {
  queue_.push(Event{now_ms_ + delay_ms, seq_++, host, 0, std::move(fn)});
}

void SimNetwork::At(uint64_t delay_ms, const std::string& addr, std::function<void()> fn) {
  Post(delay_ms, 0, [this, addr, fn = std::move(fn)] {
    Host* h = FindHost(addr);
    if (h == nullptr) return;
    touched_ = h->index;
    fn();
  });
}

uint64_t SimNetwork::Latency() {
  if (options_.mean_latency_ms <= 0) return static_cast<uint64_t>(options_.min_latency_ms);
  std::exponential_distribution<double> d(1.0 / options_.mean_latency_ms);
  return static_cast<uint64_t>(std::llround(options_.min_latency_ms + d(rng_)));
}

uint64_t SimNetwork::LinkDelay(uint64_t from, const std::string& to_addr) const {
  if (!delay_) return 0;
  auto it = by_index_.find(from);
  return it == by_index_.end() ? 0 : delay_(it->second->addr, to_addr);
}

void SimNetwork::DeliverRequest(Host* host, ReplyToken from, const wire::Envelope& request) {
  if (host->paused) {
    host->held.push_back(Held{true, from, request});
    return;
  }
  Input(host, [from, &request](ChordNode& n, const Clock& now) {
    n.OnRequest(now, from, wire::Envelope(request));
  });
}

void SimNetwork::DeliverResponse(Host* host, const wire::Envelope& response) {
  if (host->paused) {
    host->held.push_back(Held{false, 0, response});
    return;
  }
  Input(host, [&response](ChordNode& n, const Clock& now) { n.OnResponse(now, response); });
}

void SimNetwork::Wake(Host* host) {
  host->wake_at_ms.reset();
  if (host->paused) {
    host->woke_while_paused = true;
    return;
  }
  Input(host, [](ChordNode& n, const Clock& now) { n.Tick(now); });
}

void SimNetwork::Pause(const std::string& addr) {
  if (Host* h = FindHost(addr)) h->paused = true;
}

void SimNetwork::SetWallSkew(const std::string& addr, int64_t skew_ms) {
  if (Host* h = FindHost(addr)) h->wall_skew_ms = skew_ms;
}

void SimNetwork::Resume(const std::string& addr) {
  Host* h = FindHost(addr);
  if (h == nullptr || !h->paused) return;
  h->paused = false;
  // What waited in its socket queue is read at once, in order; then its timers catch up.
  std::vector<Held> held = std::move(h->held);
  h->held.clear();
  const uint64_t index = h->index;
  for (const Held& m : held) {
    auto it = by_index_.find(index);
    if (it == by_index_.end()) return;  // crashed meanwhile
    if (m.is_request) {
      DeliverRequest(it->second, m.from, m.envelope);
    } else {
      DeliverResponse(it->second, m.envelope);
    }
  }
  auto it = by_index_.find(index);
  if (it != by_index_.end() && it->second->woke_while_paused) {
    it->second->woke_while_paused = false;
    Wake(it->second);
  }
}

bool SimNetwork::Dropped(uint64_t from, const std::string& to_addr,
                         const wire::Envelope& message) const {
  if (!drop_) return false;
  auto it = by_index_.find(from);
  return it != by_index_.end() && drop_(it->second->addr, to_addr, message);
}

bool SimNetwork::Cut(uint64_t from, const std::string& to_addr) const {
  if (!cut_) return false;
  auto it = by_index_.find(from);
  return it != by_index_.end() && cut_(it->second->addr, to_addr);
}

bool SimNetwork::Lost() {
  if (options_.loss <= 0) return false;
  return std::uniform_real_distribution<double>(0, 1)(rng_) < options_.loss;
}

const ChordNode* SimNetwork::AddNode(const std::string& addr, const NodeConfig& config,
                                     const std::string& bootstrap) {
  std::vector<std::string> bootstraps;
  if (!bootstrap.empty()) bootstraps.push_back(bootstrap);
  return AddNode(addr, config, bootstraps);
}

const ChordNode* SimNetwork::AddNode(const std::string& addr, const NodeConfig& config,
                                     const std::vector<std::string>& bootstraps) {
  auto host = std::make_unique<Host>();
  host->addr = addr;
  host->index = next_host_index_++;
  host->memory = std::make_unique<MemoryStore>();
  host->store = std::make_unique<LedgerStore>(host->memory.get());
  host->node =
      std::make_unique<ChordNode>(host->store.get(), config, NodeRef::ForAddress(addr), rng_());
  Host* h = host.get();
  RemoveHost(addr);
  by_index_[h->index] = h;
  hosts_[addr] = std::move(host);
  Input(h, [&bootstraps](ChordNode& n, const Clock& now) { n.Start(now, bootstraps); });
  return h->node.get();
}

void SimNetwork::RemoveHost(const std::string& addr) {
  auto it = hosts_.find(addr);
  if (it == hosts_.end()) return;
  by_index_.erase(it->second->index);
  hosts_.erase(it);
}

void SimNetwork::Crash(const std::string& addr) { RemoveHost(addr); }

void SimNetwork::Leave(const std::string& addr) {
  if (Host* h = FindHost(addr)) Input(h, [](ChordNode& n, const Clock& now) { n.Leave(now); });
}

void SimNetwork::InstallRoutingState(const std::string& addr, std::vector<NodeRef> successors,
                                     std::optional<NodeRef> predecessor,
                                     const std::vector<std::optional<NodeRef>>& fingers) {
  if (Host* h = FindHost(addr)) {
    Input(h, [&](ChordNode& n, const Clock& now) {
      n.InstallRoutingState(now, std::move(successors), std::move(predecessor), fingers);
    });
  }
}

void SimNetwork::SetMaintenance(const std::string& addr, bool enabled) {
  if (Host* h = FindHost(addr)) {
    Input(h, [enabled](ChordNode& n, const Clock& now) { n.SetMaintenance(now, enabled); });
  }
}

void SimNetwork::Lookup(const std::string& addr, const Id& target, bool verify_owner,
                        LookupCallback done) {
  Host* h = FindHost(addr);
  if (h == nullptr) return;
  // The handle comes back with the result; the callback must be in place before the Ready
  // that may already carry it is taken.
  Input(h, [&](ChordNode& n, const Clock& now) {
    const uint64_t handle = n.StartLookup(now, target, verify_owner);
    h->lookups.emplace(handle, std::move(done));
  });
}

void SimNetwork::ClientCall(const std::string& addr, wire::Envelope request, uint64_t timeout_ms,
                            ClientCallback done) {
  const uint64_t token = next_client_token_++;
  request.set_request_id(token);
  clients_[token] = std::move(done);
  Post(Latency(), 0, [this, addr, token, request = std::move(request)] {
    if (Host* h = FindHost(addr)) DeliverRequest(h, token, request);
  });
  Post(timeout_ms, 0, [this, token] {
    auto c = clients_.find(token);
    if (c == clients_.end()) return;
    ClientCallback cb = std::move(c->second);
    clients_.erase(c);
    cb(nullptr);
  });
}

bool SimNetwork::Step(uint64_t limit_ms) {
  while (!queue_.empty() && queue_.top().at_ms <= limit_ms) {
    Event e = std::move(const_cast<Event&>(queue_.top()));
    queue_.pop();
    if (e.wake_generation != 0) {
      auto it = by_index_.find(e.host);
      if (it == by_index_.end() || it->second->wake_generation != e.wake_generation) continue;
    }
    now_ms_ = e.at_ms;
    ++events_;
    touched_ = e.host;
    e.fn();
    if (after_event_) {
      auto it = by_index_.find(touched_);
      after_event_(it == by_index_.end() ? nullptr : it->second->node.get());
    }
    return true;
  }
  return false;
}

void SimNetwork::RunFor(uint64_t ms) {
  const uint64_t end = now_ms_ + ms;
  while (Step(end)) {
  }
  now_ms_ = std::max(now_ms_, end);
}

bool SimNetwork::RunUntil(const std::function<bool()>& done, uint64_t max_ms) {
  const uint64_t end = now_ms_ + max_ms;
  if (done()) return true;
  while (Step(end)) {
    if (done()) return true;
  }
  now_ms_ = std::max(now_ms_, end);
  return done();
}

const ChordNode* SimNetwork::node(const std::string& addr) const {
  Host* h = FindHost(addr);
  return h == nullptr ? nullptr : h->node.get();
}

LedgerStore* SimNetwork::store(const std::string& addr) const {
  Host* h = FindHost(addr);
  return h == nullptr ? nullptr : h->store.get();
}

std::vector<const ChordNode*> SimNetwork::LiveNodes() const {
  std::vector<const ChordNode*> out;
  for (const auto& [addr, host] : hosts_) out.push_back(host->node.get());
  std::sort(out.begin(), out.end(),
            [](const ChordNode* a, const ChordNode* b) { return a->self().id < b->self().id; });
  return out;
}

}  // namespace chord::sim
