// chord-lancheck: the checker of the LAN test bed (scripts/lan.sh). `write` runs writers that
// put unique keys and overwrite shared registers through the given nodes for a while and
// records every acknowledged write; `verify`, run after the faults have healed, reads every
// key back and reports each acknowledged write that is lost or reads older than acknowledged.
// `count` and `verify-count` do the same for counters incremented by compare-and-set
// (CounterLog), which also fails when two increments were acknowledged from the same state.
// Exit codes: 0 all good, 1 a write lost, stale or (counters) acknowledged twice, 2 usage or an
// unreadable log, 3 nothing reachable (`write`/`count`: nothing acknowledged; the verifiers: a
// key no node could read, and nothing lost or stale).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "tools/client/chord_client.h"
#include "tools/lancheck/ack_log.h"
#include "tools/lancheck/counter_log.h"

namespace chord::lancheck {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> nodes;
  double seconds = 60;
  int writers = 4;
  int registers = 50;
  int counters = 5;  // `count`: counters the writers share
  bool all = false;  // `count`: puts at consistency ALL (every replica must store them)
  std::string prefix = "counter";  // `count`: the counters are PREFIX-0, PREFIX-1, ...
  double rate = 25;                // writes per second per writer
  // A writer gives up on a request after this and takes another node for its next one: a
  // paused or cut-off entry node must not hold it for the node's whole 8 s deadline.
  uint64_t timeout_ms = 3000;
  std::string out = "acks.tsv";
  std::string acks = "acks.tsv";
};

uint64_t MsSince(Clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

// Runs o.writers threads for o.seconds; each calls step(writer, n, rng, client) o.rate times a
// second (n: its steps so far), with a client of one of the nodes at random. Returns the failed
// steps (step returns false).
template <typename Step>
uint64_t RunWriters(const Options& o, Clock::time_point start, const Step& step) {
  const auto end = start + std::chrono::milliseconds(static_cast<int64_t>(o.seconds * 1000));
  std::atomic<uint64_t> failed{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < o.writers; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(static_cast<uint64_t>(w) * 7919 + 1);
      std::vector<std::unique_ptr<ChordClient>> clients;
      for (const auto& n : o.nodes)
        clients.push_back(std::make_unique<ChordClient>(n, o.timeout_ms));
      const auto gap = std::chrono::microseconds(static_cast<int64_t>(1e6 / std::max(o.rate, 0.1)));
      auto next = Clock::now();
      for (uint64_t n = 0; Clock::now() < end; ++n) {
        ChordClient& c = *clients[rng() % clients.size()];
        if (!step(w, n, rng, c)) ++failed;
        next += gap;
        std::this_thread::sleep_until(next);
      }
    });
  }
  for (auto& t : threads) t.join();
  return failed.load();
}

// Writes `lines` to o.out and prints what the run acknowledged (`at_ms`: when, sorted; `ran_ms`:
// how long the run took) and how a fault showed in it; `conflicts`: the count's refused
// conditions, nullopt for plain writes. 0, or 2 when the log cannot be written, 3 when nothing
// was acknowledged.
int Report(const Options& o, const char* what, const std::string& lines,
           const std::vector<uint64_t>& at_ms, uint64_t ran_ms, uint64_t failed,
           std::optional<uint64_t> conflicts) {
  std::ofstream out(o.out, std::ios::binary);
  out << lines;
  out.close();
  if (!out) {
    std::cerr << "chord-lancheck: could not write " << o.out << "; give a writable --out\n";
    return 2;
  }
  uint64_t longest_gap = at_ms.empty() ? ran_ms : at_ms.front();
  for (size_t i = 1; i < at_ms.size(); ++i) {
    longest_gap = std::max(longest_gap, at_ms[i] - at_ms[i - 1]);
  }
  // Acknowledged writes per whole second of the run; the slowest second says how much a
  // fault cost.
  std::vector<uint64_t> per_second(static_cast<size_t>(o.seconds), 0);
  for (uint64_t at : at_ms) {
    if (at / 1000 < per_second.size()) ++per_second[at / 1000];
  }
  const auto slowest = std::min_element(per_second.begin(), per_second.end());
  const std::string refused =
      conflicts ? ", " + std::to_string(*conflicts) + " refused as conflicts" : "";
  std::printf(
      "acknowledged %zu %s, %llu failed or unanswered%s, in %.0f s; slowest second %llu "
      "acknowledged (second %zu); longest time without an acknowledged write %llu ms; log in "
      "%s\n",
      at_ms.size(), what, static_cast<unsigned long long>(failed), refused.c_str(), o.seconds,
      static_cast<unsigned long long>(slowest == per_second.end() ? 0 : *slowest),
      static_cast<size_t>(slowest - per_second.begin()),
      static_cast<unsigned long long>(longest_gap), o.out.c_str());
  return at_ms.empty() ? 3 : 0;
}

int RunWrite(const Options& o) {
  const auto start = Clock::now();
  std::mutex mu;
  std::vector<Ack> acks;
  const uint64_t failed =
      RunWriters(o, start, [&](int w, uint64_t n, std::mt19937_64& rng, ChordClient& c) {
        const bool reg = o.registers > 0 && rng() % 3 == 0;
        const std::string key = reg ? "register-" + std::to_string(rng() % o.registers)
                                    : "unique-" + std::to_string(w) + "-" + std::to_string(n);
        const std::string value = "w" + std::to_string(w) + "-" + std::to_string(n);
        Result<wire::DataResponse> r = c.Put(key, value);
        if (!r.ok() || r->code() != wire::OK) return false;
        std::lock_guard<std::mutex> lock(mu);
        acks.push_back(Ack{key, value, r->version(), MsSince(start)});
        return true;
      });
  std::sort(acks.begin(), acks.end(), [](const Ack& a, const Ack& b) { return a.at_ms < b.at_ms; });
  std::string lines;
  std::vector<uint64_t> at_ms;
  for (const Ack& a : acks) {
    lines += FormatAck(a);
    at_ms.push_back(a.at_ms);
  }
  return Report(o, "writes", lines, at_ms, MsSince(start), failed, std::nullopt);
}

// Increments shared counters by compare-and-set: reads one (any node), then puts its value
// plus one on the condition that it is still at the version read (absent, if it was).
int RunCount(const Options& o) {
  const auto start = Clock::now();
  std::mutex mu;
  std::vector<Increment> incs;
  std::atomic<uint64_t> conflicts{0};
  const uint64_t failed =
      RunWriters(o, start, [&](int, uint64_t, std::mt19937_64& rng, ChordClient& c) {
        const std::string key = o.prefix + "-" + std::to_string(rng() % o.counters);
        Result<wire::DataResponse> got = c.Get(key);
        if (!got.ok() || (got->code() != wire::OK && got->code() != wire::NOT_FOUND)) return false;
        uint64_t count = 0;
        DataOptions cas;
        if (o.all) cas.consistency = wire::CONSISTENCY_ALL;
        if (got->code() == wire::NOT_FOUND) {
          cas.if_absent = true;
        } else if (!ParseU64(got->value(), &count)) {
          return false;
        } else {
          cas.if_version = got->version();
        }
        Result<wire::DataResponse> r = c.Put(key, std::to_string(count + 1), cas);
        if (r.ok() && r->code() == wire::CONFLICT) {
          ++conflicts;
          return true;
        }
        if (!r.ok() || r->code() != wire::OK) return false;
        std::lock_guard<std::mutex> lock(mu);
        incs.push_back(Increment{key, cas.if_version, count + 1, r->version(), MsSince(start)});
        return true;
      });
  std::sort(incs.begin(), incs.end(),
            [](const Increment& a, const Increment& b) { return a.at_ms < b.at_ms; });
  std::string lines;
  std::vector<uint64_t> at_ms;
  for (const Increment& inc : incs) {
    lines += FormatIncrement(inc);
    at_ms.push_back(inc.at_ms);
  }
  return Report(o, "increments", lines, at_ms, MsSince(start), failed, conflicts.load());
}

// Reads every key of the log `o.acks` (of `write`, or of `count` when `counters`) back and
// reports what was lost, stale or (counters) acknowledged twice.
int RunVerify(const Options& o, bool counters) {
  std::ifstream in(o.acks, std::ios::binary);
  if (!in) {
    std::cerr << "chord-lancheck: cannot read " << o.acks << "; give the file `"
              << (counters ? "count" : "write") << "` made\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::unique_ptr<ChordClient>> clients;
  for (const auto& n : o.nodes) clients.push_back(std::make_unique<ChordClient>(n, o.timeout_ms));
  size_t turn = 0;
  const ReadFn read = [&](const std::string& key, std::string* error) {
    // Through the nodes in turn; another node when one cannot answer.
    for (size_t tries = 0; tries < clients.size(); ++tries) {
      ChordClient& c = *clients[turn++ % clients.size()];
      Result<wire::DataResponse> r = c.Get(key);
      if (!r.ok() || r->code() == wire::UNAVAILABLE) {
        *error = r.ok() ? r->error() : r.status().message();
        continue;
      }
      error->clear();
      if (r->code() != wire::OK) return std::optional<std::pair<std::string, uint64_t>>();
      return std::optional(std::make_pair(r->value(), r->version()));
    }
    return std::optional<std::pair<std::string, uint64_t>>();
  };
  Verdict v;
  size_t logged = 0;
  if (counters) {
    Result<std::vector<Increment>> incs = ParseIncrementLog(text.str());
    if (!incs.ok()) {
      std::cerr << "chord-lancheck: " << incs.status().message() << "\n";
      return 2;
    }
    logged = incs->size();
    v = VerifyCounters(*incs, read);
  } else {
    Result<std::vector<Ack>> acks = ParseAckLog(text.str());
    if (!acks.ok()) {
      std::cerr << "chord-lancheck: " << acks.status().message() << "\n";
      return 2;
    }
    logged = acks->size();
    v = Verify(*acks, read);
  }
  for (const auto& p : v.problems) std::cout << "  " << p << "\n";
  std::printf("verified %llu %s (%zu acknowledged %s): %llu lost, %llu stale",
              static_cast<unsigned long long>(v.keys), counters ? "counters" : "keys", logged,
              counters ? "increments" : "writes", static_cast<unsigned long long>(v.lost),
              static_cast<unsigned long long>(v.stale));
  if (counters) {
    std::printf(", %llu acknowledged twice", static_cast<unsigned long long>(v.doubled));
  }
  if (v.unreadable > 0) {
    std::printf(", %llu could not be read", static_cast<unsigned long long>(v.unreadable));
  }
  std::printf("\n");
  if (v.lost > 0 || v.stale > 0 || v.doubled > 0) return 1;
  return v.unreadable > 0 ? 3 : 0;
}

}  // namespace
}  // namespace chord::lancheck

int main(int argc, char** argv) {
  using chord::lancheck::Options;
  Options o;
  CLI::App app{
      "chord-lancheck: records acknowledged writes under faults, then checks none was lost"};
  app.require_subcommand(1);
  auto* write = app.add_subcommand("write", "write unique keys and registers, log the acks");
  auto* count = app.add_subcommand("count", "increment counters by compare-and-set, log the acks");
  auto* verify = app.add_subcommand("verify", "read every key of a `write` log back");
  auto* verify_count =
      app.add_subcommand("verify-count", "read every counter of a `count` log back");
  for (auto* sub : {write, count, verify, verify_count}) {
    sub->add_option("--node", o.nodes, "a ring member (HOST:PORT); repeat for several")->required();
    sub->add_option("--timeout-ms", o.timeout_ms, "bound of each request")
        ->check(CLI::Range(100, 600000));
  }
  for (auto* sub : {write, count}) {
    sub->add_option("--seconds", o.seconds, "how long to write")->check(CLI::Range(0.1, 86400.0));
    sub->add_option("--writers", o.writers, "concurrent writers")->check(CLI::Range(1, 256));
    sub->add_option("--rate", o.rate, "writes per second per writer")
        ->check(CLI::Range(0.1, 10000.0));
    sub->add_option("--out", o.out, "where the acknowledged writes go");
  }
  write->add_option("--registers", o.registers, "shared keys every writer overwrites")
      ->check(CLI::Range(0, 100000));
  count->add_option("--counters", o.counters, "counters the writers share")
      ->check(CLI::Range(1, 100000));
  count->add_option("--prefix", o.prefix, "the counters' names: PREFIX-0, PREFIX-1, ...")
      ->check([](const std::string& p) {
        return p.empty() || p.find_first_of("\t\r\n") != std::string::npos
                   ? std::string("give a non-empty --prefix without tabs or line breaks")
                   : std::string();
      });
  count->add_flag("--all", o.all,
                  "put at consistency ALL, as compare-and-set must when an owner crash may not "
                  "lose a decision");
  verify->add_option("--acks", o.acks, "the file `write` made");
  verify_count->add_option("--acks", o.acks, "the file `count` made");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // `count` keeps a log of its own by default (counts.tsv), so that one run beside `write`
  // does not overwrite acks.tsv.
  if (count->parsed() && count->get_option("--out")->count() == 0) o.out = "counts.tsv";
  if (verify_count->parsed() && verify_count->get_option("--acks")->count() == 0) {
    o.acks = "counts.tsv";
  }
  // A ring that runs TLS: the client certificate comes from CHORD_TLS_CERT/KEY/CA.
  if (chord::Status s = chord::ChordClient::ConfigureTls({}); !s.ok()) {
    std::cerr << "chord-lancheck: " << s.message() << "\n";
    return 2;
  }
  if (write->parsed()) return chord::lancheck::RunWrite(o);
  if (count->parsed()) return chord::lancheck::RunCount(o);
  return chord::lancheck::RunVerify(o, verify_count->parsed());
}
