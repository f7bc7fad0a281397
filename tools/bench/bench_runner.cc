#include "tools/bench/bench_runner.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

namespace chord::bench {
namespace {

// Pause after a failed request, so that a dead node is not hammered in a tight loop.
constexpr std::chrono::milliseconds kErrorPause{1};

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::chrono::steady_clock::duration ToDuration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

// The random generator of client thread `thread`: same seed, same keys.
std::mt19937_64 ThreadRng(uint64_t seed, int thread) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(thread)};
  return std::mt19937_64(seq);
}

// `bytes` printable characters.
std::string RandomValue(std::mt19937_64* rng, uint64_t bytes) {
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
  std::string value(bytes, 'x');
  for (char& c : value) c = kAlphabet[pick(*rng)];
  return value;
}

double NsToUs(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

// What one client thread asks for in the measured window: which key, get or put, and the value
// it writes (the same for every put of the thread).
struct RequestMix {
  RequestMix(const BenchOptions& options, int thread, uint64_t measured_keys)
      : rng(ThreadRng(options.seed, thread)),
        pick_key(0, measured_keys - 1),
        pick_get(options.op == BenchOp::kGet   ? 1.0
                 : options.op == BenchOp::kPut ? 0.0
                                               : options.get_ratio),
        value(RandomValue(&rng, options.value_bytes)) {}

  std::mt19937_64 rng;
  std::uniform_int_distribution<uint64_t> pick_key;
  std::bernoulli_distribution pick_get;
  const std::string value;
};

}  // namespace

BenchRunner::BenchRunner(BenchOptions options) : options_(std::move(options)) {}

std::unique_ptr<BenchClient> BenchRunner::MakeClient(int thread) const {
  std::unique_ptr<BenchClient> client = MakeClientFor(thread);
  client->set_consistency(options_.consistency);
  return client;
}

std::unique_ptr<BenchClient> BenchRunner::MakeClientFor(int thread) const {
  if (options_.redis) {
    return std::make_unique<BenchClient>(
        std::make_unique<RedisTargets>(options_.nodes, options_.timeout_ms));
  }
  if (router_) return std::make_unique<BenchClient>(*router_, options_.timeout_ms);
  return std::make_unique<BenchClient>(options_.nodes, static_cast<size_t>(thread),
                                       options_.timeout_ms);
}

Status BenchRunner::Preload(BenchReport* report) const {
  const auto start = Clock::now();
  const auto deadline = start + kMaxPreloadTime;
  const int threads =
      static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(options_.clients), options_.keys));
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> written{0};
  std::mutex error_mu;
  std::string error;
  auto fail = [&](std::string why) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (error.empty()) error = std::move(why);
    failed = true;
  };

  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::unique_ptr<BenchClient> client = MakeClient(t);
      std::mt19937_64 rng = ThreadRng(options_.seed ^ 0x5eed, t);
      const std::string value = RandomValue(&rng, options_.value_bytes);
      int failed_in_a_row = 0;
      for (uint64_t k = static_cast<uint64_t>(t); k < options_.keys && !failed;
           k += static_cast<uint64_t>(threads)) {
        if (Clock::now() >= deadline) {
          fail("the preload of " + std::to_string(options_.keys) + " keys did not finish within " +
               std::to_string(kMaxPreloadTime.count()) + " s; use fewer --keys");
          return;
        }
        OpOutcome outcome;
        for (int attempt = 0; attempt < kPreloadAttempts && !outcome.ok; ++attempt) {
          outcome = client->Put(KeyName(k), value);
        }
        if (outcome.ok) {
          failed_in_a_row = 0;
          ++written;
          continue;
        }
        if (++failed_in_a_row >= kMaxPreloadFailedKeys) {
          fail("could not preload the keys: " + outcome.error);
          return;
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  report->preload_keys = written;
  report->preload_s = Seconds(Clock::now() - start);
  if (failed) return Status::Unavailable(error);
  return Status::Ok();
}

void BenchRunner::Work(int thread, Clock::time_point measure_start, Clock::time_point end,
                       Tally* tally) const {
  if (options_.pipeline > 1) return WorkPipelined(thread, measure_start, end, tally);
  RequestMix mix(options_, thread, MeasuredKeys(options_));
  std::unique_ptr<BenchClient> client = MakeClient(thread);
  tally->last_done = measure_start;

  for (;;) {
    const auto t0 = Clock::now();
    if (t0 >= end) break;
    const std::string key = KeyName(mix.pick_key(mix.rng));
    const bool get = mix.pick_get(mix.rng);
    const OpOutcome outcome = get ? client->Get(key) : client->Put(key, mix.value);
    const auto t1 = Clock::now();
    if (t0 >= measure_start) {
      tally->last_done = t1;
      tally->redirects += outcome.redirects;
      if (outcome.ok) {
        ++tally->ops;
        ++(get ? tally->gets : tally->puts);
        tally->hops += outcome.hops;
        tally->latency.Record(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
      } else {
        ++tally->errors;
        if (outcome.not_found) ++tally->not_found;
        tally->last_error = outcome.error;
      }
    }
    if (!outcome.ok) std::this_thread::sleep_for(kErrorPause);
  }
}

void BenchRunner::WorkPipelined(int thread, Clock::time_point measure_start, Clock::time_point end,
                                Tally* tally) const {
  RequestMix mix(options_, thread, MeasuredKeys(options_));
  std::unique_ptr<BenchClient> client = MakeClient(thread);
  tally->last_done = measure_start;

  struct Pending {
    Clock::time_point sent;
    bool get = false;
  };
  std::map<std::string, std::map<uint64_t, Pending>> in_flight;  // by address, by request id
  std::deque<std::pair<std::string, uint64_t>> order;            // oldest first
  size_t outstanding = 0;
  auto fail = [&](const Pending& p, const std::string& error) {
    if (p.sent < measure_start) return;
    ++tally->errors;
    tally->last_error = error;
  };

  for (;;) {
    bool send_failed = false;
    while (outstanding < static_cast<size_t>(options_.pipeline) && Clock::now() < end) {
      const bool get = mix.pick_get(mix.rng);
      const Pending p{Clock::now(), get};
      Result<BenchClient::Sent> sent =
          client->SendAsync(KeyName(mix.pick_key(mix.rng)), get ? nullptr : &mix.value);
      if (!sent.ok()) {
        fail(p, sent.status().message());
        send_failed = true;
        break;
      }
      in_flight[sent->addr][sent->request_id] = p;
      order.emplace_back(sent->addr, sent->request_id);
      ++outstanding;
    }
    if (outstanding == 0) {
      if (Clock::now() >= end) break;
      if (send_failed) std::this_thread::sleep_for(kErrorPause);
      continue;
    }
    // Wait on the connection of the oldest request; answers may come in any order.
    while (!order.empty() && in_flight[order.front().first].count(order.front().second) == 0) {
      order.pop_front();
    }
    const std::string addr = order.front().first;
    Result<wire::Envelope> answer = client->ReceiveFrom(addr);
    auto& on_conn = in_flight[addr];
    if (!answer.ok()) {  // the connection is gone, and with it every request on it
      for (const auto& [id, p] : on_conn) fail(p, answer.status().message());
      outstanding -= on_conn.size();
      on_conn.clear();
      std::this_thread::sleep_for(kErrorPause);
      continue;
    }
    auto it = on_conn.find(answer->request_id());
    if (it == on_conn.end()) continue;  // not one of ours
    const Pending p = it->second;
    on_conn.erase(it);
    --outstanding;
    const auto done = Clock::now();
    const OpOutcome outcome = client->OutcomeOf(addr, answer);
    if (p.sent < measure_start) continue;
    tally->last_done = done;
    tally->redirects += outcome.redirects;
    if (outcome.ok) {
      ++tally->ops;
      ++(p.get ? tally->gets : tally->puts);
      tally->hops += outcome.hops;
      tally->latency.Record(static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(done - p.sent).count()));
    } else {
      ++tally->errors;
      if (outcome.not_found) ++tally->not_found;
      tally->last_error = outcome.error;
    }
  }
}

// Reads the servers' figures into *out; on failure records why in the report and returns false.
static bool ReadServers(const ServerCostProbe& probe, ServerReading* out, BenchReport* report) {
  Result<ServerReading> r = probe.Read();
  if (!r.ok()) {
    if (report->server_cost_error.empty()) report->server_cost_error = r.status().message();
    return false;
  }
  *out = *r;
  return true;
}

Result<BenchReport> BenchRunner::Run() {
  BenchReport report;
  report.options = options_;
  if (options_.direct) {
    router_.emplace(options_.nodes, options_.timeout_ms);
    if (Status s = router_->Refresh(); !s.ok()) {
      return Status::Unavailable(s.message() + "; is chord-node running at the --node address?");
    }
    report.ring_nodes = router_->size();
  }
  std::optional<ServerCostProbe> probe;
  if (options_.server_cost) {
    probe.emplace(options_.server_pids.empty()
                      ? ServerCostProbe::ForRing(options_.nodes, options_.timeout_ms)
                      : ServerCostProbe::ForPids(options_.server_pids));
    if (Status s = probe->Discover(); !s.ok()) {
      report.server_cost_error = s.message();
      probe.reset();
    }
  }
  ServerReading before_preload, after_preload;
  bool cost_ok = probe && ReadServers(*probe, &before_preload, &report);
  if (options_.op != BenchOp::kPut) {
    if (Status s = Preload(&report); !s.ok()) return s;
    if (cost_ok && ReadServers(*probe, &after_preload, &report) && report.preload_keys > 0) {
      report.preload_rss_bytes = static_cast<double>(after_preload.resident_bytes) -
                                 static_cast<double>(before_preload.resident_bytes);
      report.bytes_per_key = BytesPerKey(before_preload, after_preload, report.preload_keys);
    }
  }

  const int clients = options_.clients;
  std::vector<Tally> tallies(static_cast<size_t>(clients));
  const auto start = Clock::now();
  const auto measure_start = start + ToDuration(options_.warmup_seconds);
  const auto end = measure_start + ToDuration(options_.seconds);
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(clients));
  for (int t = 0; t < clients; ++t) {
    workers.emplace_back([this, t, measure_start, end, &tallies] {
      Work(t, measure_start, end, &tallies[static_cast<size_t>(t)]);
    });
  }
  ServerReading window_start, window_end;
  if (cost_ok) {
    std::this_thread::sleep_until(measure_start);
    cost_ok = ReadServers(*probe, &window_start, &report);
  }
  for (std::thread& w : workers) w.join();
  if (cost_ok) cost_ok = ReadServers(*probe, &window_end, &report);

  LatencyHistogram latency;
  uint64_t hops = 0;
  auto last_done = end;
  for (const Tally& tally : tallies) {
    latency.Merge(tally.latency);
    report.ops += tally.ops;
    report.gets += tally.gets;
    report.puts += tally.puts;
    report.errors += tally.errors;
    report.not_found += tally.not_found;
    report.redirects += tally.redirects;
    hops += tally.hops;
    last_done = std::max(last_done, tally.last_done);
    if (report.last_error.empty()) report.last_error = tally.last_error;
  }
  report.elapsed_s = Seconds(last_done - measure_start);
  report.ops_per_sec =
      report.elapsed_s > 0 ? static_cast<double>(report.ops) / report.elapsed_s : 0.0;
  report.p50_us = NsToUs(latency.ValueAtPercentile(50));
  report.p99_us = NsToUs(latency.ValueAtPercentile(99));
  report.p999_us = NsToUs(latency.ValueAtPercentile(99.9));
  report.mean_us = latency.Mean() / 1000.0;
  report.min_us = NsToUs(latency.min());
  report.max_us = NsToUs(latency.max());
  report.mean_hops =
      report.ops > 0 ? static_cast<double>(hops) / static_cast<double>(report.ops) : 0.0;
  // Refreshes made by the client threads are not visible here (each has its own copy); the
  // redirects count them: one refresh per redirect, plus the initial fetch.
  report.ring_refreshes = router_ ? router_->refreshes() + report.redirects : 0;
  if (cost_ok) {
    report.server_source = probe->source();
    report.server_processes = window_end.processes;
    report.server_cpu_s = window_end.cpu_seconds - window_start.cpu_seconds;
    report.server_cpu_us_per_op = CpuMicrosPerOp(window_start, window_end, report.ops);
    report.server_rss_bytes = window_end.resident_bytes;
    const ServerBreakdown split = BreakdownPerOp(window_start, window_end, report.ops);
    report.server_user_us_per_op = split.user_us_per_op;
    report.server_sys_us_per_op = split.system_us_per_op;
    report.server_syscalls_per_op = split.syscalls_per_op;
    report.server_sleeps_per_op = split.sleeps_per_op;
  }
  return report;
}

}  // namespace chord::bench
