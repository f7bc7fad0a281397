#include "tools/sim/sim_network.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace chord::sim {
namespace {
constexpr uint64_t kSimEpochMs = 1'767'225'600'000;
}  // namespace

// The Environment of one simulated node.
class SimNetwork::NodeEnv final : public Environment {
 public:
  NodeEnv(SimNetwork* net, uint64_t index) : net_(net), index_(index) {}

  uint64_t NowMs() override { return net_->now_ms_; }
  // Virtual wall time: a fixed epoch (2026-01-01) plus the virtual clock.
  uint64_t WallMs() override { return kSimEpochMs + net_->now_ms_; }
  uint64_t Random() override { return net_->rng_(); }

  void SendRequest(const std::string& addr, const wire::Envelope& request) override {
    if (net_->Lost() || net_->Cut(index_, addr)) return;
    const uint64_t from = index_;
    SimNetwork* net = net_;
    net_->Post(net_->Latency(), [net, addr, from, request] {
      auto it = net->hosts_.find(addr);
      if (it == net->hosts_.end() || !it->second->node) return;  // nobody there
      net->Touch(it->second->index);
      it->second->node->OnRequest(from, request);
    });
  }

  void SendReply(ReplyToken to, const wire::Envelope& reply) override {
    if (net_->Lost()) return;
    if (auto peer = net_->by_index_.find(to);
        peer != net_->by_index_.end() && net_->Cut(index_, peer->second->addr)) {
      return;
    }
    SimNetwork* net = net_;
    net_->Post(net_->Latency(), [net, to, reply] {
      if (auto c = net->clients_.find(to); c != net->clients_.end()) {
        ClientCallback cb = std::move(c->second);
        net->clients_.erase(c);
        cb(&reply);
        return;
      }
      auto it = net->by_index_.find(to);
      if (it == net->by_index_.end() || !it->second->node) return;
      net->Touch(to);
      it->second->node->OnResponse(reply);
    });
  }

  TimerId Schedule(uint64_t delay_ms, std::function<void()> fn) override {
    return net_->Schedule(index_, delay_ms, std::move(fn));
  }
  void Cancel(TimerId id) override {
    // Only a timer that has not fired yet needs remembering until its event comes up.
    if (id != 0 && net_->pending_timers_.erase(id) != 0) net_->cancelled_.insert(id);
  }
  void Log(LogLevel, std::string_view) override {}

 private:
  SimNetwork* net_;
  uint64_t index_;
};

SimNetwork::SimNetwork(SimOptions options) : options_(options), rng_(options.seed) {}

SimNetwork::~SimNetwork() {
  // Destroy nodes before their environments.
  for (auto& [addr, host] : hosts_) host->node.reset();
}

TimerId SimNetwork::Schedule(uint64_t host, uint64_t delay_ms, std::function<void()> fn) {
  const TimerId id = next_timer_++;
  pending_timers_.insert(id);
  queue_.push(Event{now_ms_ + delay_ms, seq_++, id, host, std::move(fn)});
  return id;
}

void SimNetwork::Post(uint64_t delay_ms, std::function<void()> fn) {
  queue_.push(Event{now_ms_ + delay_ms, seq_++, 0, 0, std::move(fn)});
}

void SimNetwork::At(uint64_t delay_ms, const std::string& addr,
                    std::function<void(ChordNode*)> fn) {
  Post(delay_ms, [this, addr, fn = std::move(fn)] {
    auto it = hosts_.find(addr);
    if (it == hosts_.end() || !it->second->node) return;
    Touch(it->second->index);
    fn(it->second->node.get());
  });
}

uint64_t SimNetwork::Latency() {
  if (options_.mean_latency_ms <= 0) return static_cast<uint64_t>(options_.min_latency_ms);
  std::exponential_distribution<double> d(1.0 / options_.mean_latency_ms);
  return static_cast<uint64_t>(std::llround(options_.min_latency_ms + d(rng_)));
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

ChordNode* SimNetwork::AddNode(const std::string& addr, const NodeConfig& config,
                               const std::string& bootstrap) {
  std::vector<std::string> bootstraps;
  if (!bootstrap.empty()) bootstraps.push_back(bootstrap);
  return AddNode(addr, config, bootstraps);
}

ChordNode* SimNetwork::AddNode(const std::string& addr, const NodeConfig& config,
                               const std::vector<std::string>& bootstraps) {
  auto host = std::make_unique<Host>();
  host->addr = addr;
  host->index = next_host_index_++;
  host->env = std::make_unique<NodeEnv>(this, host->index);
  host->store = std::make_unique<MemoryStore>();
  host->node = std::make_unique<ChordNode>(host->env.get(), host->store.get(), config,
                                           NodeRef::ForAddress(addr));
  ChordNode* node = host->node.get();
  by_index_[host->index] = host.get();
  RemoveHost(addr);
  hosts_[addr] = std::move(host);
  node->Start(bootstraps);
  return node;
}

void SimNetwork::RemoveHost(const std::string& addr) {
  auto it = hosts_.find(addr);
  if (it == hosts_.end()) return;
  it->second->node.reset();
  by_index_.erase(it->second->index);
  hosts_.erase(it);
}

void SimNetwork::Crash(const std::string& addr) { RemoveHost(addr); }

void SimNetwork::Leave(const std::string& addr) {
  ChordNode* n = node(addr);
  if (n == nullptr) return;
  const uint64_t index = hosts_[addr]->index;
  n->Leave([this, addr, index] {
    // Remove this incarnation only: the address may have been reused by then.
    Post(0, [this, addr, index] {
      auto it = hosts_.find(addr);
      if (it != hosts_.end() && it->second->index == index) RemoveHost(addr);
    });
  });
}

void SimNetwork::ClientCall(const std::string& addr, wire::Envelope request, uint64_t timeout_ms,
                            ClientCallback done) {
  const uint64_t token = next_client_token_++;
  request.set_request_id(token);
  clients_[token] = std::move(done);
  Post(Latency(), [this, addr, token, request] {
    auto it = hosts_.find(addr);
    if (it == hosts_.end() || !it->second->node) return;
    Touch(it->second->index);
    it->second->node->OnRequest(token, request);
  });
  Post(timeout_ms, [this, token] {
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
    if (e.timer != 0) {
      if (cancelled_.erase(e.timer) != 0) continue;
      pending_timers_.erase(e.timer);
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

ChordNode* SimNetwork::node(const std::string& addr) const {
  auto it = hosts_.find(addr);
  return it == hosts_.end() ? nullptr : it->second->node.get();
}

MemoryStore* SimNetwork::store(const std::string& addr) const {
  auto it = hosts_.find(addr);
  return it == hosts_.end() ? nullptr : it->second->store.get();
}

std::vector<ChordNode*> SimNetwork::LiveNodes() const {
  std::vector<ChordNode*> out;
  for (const auto& [addr, host] : hosts_) {
    if (host->node) out.push_back(host->node.get());
  }
  std::sort(out.begin(), out.end(),
            [](ChordNode* a, ChordNode* b) { return a->self().id < b->self().id; });
  return out;
}

}  // namespace chord::sim
