// chord-lancheck: the checker of the LAN test bed (scripts/lan.sh). `write` runs writers that
// put unique keys and overwrite shared registers through the given nodes for a while and
// records every acknowledged write; `verify`, run after the faults have healed, reads every
// key back and reports each acknowledged write that is lost or reads older than acknowledged.
// Exit codes: 0 all good, 1 a write lost or stale, 2 usage, 3 nothing reachable.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "tools/client/chord_client.h"
#include "tools/lancheck/ack_log.h"

namespace chord::lancheck {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> nodes;
  double seconds = 60;
  int writers = 4;
  int registers = 50;
  double rate = 25;  // writes per second per writer
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

int RunWrite(const Options& o) {
  const auto start = Clock::now();
  const auto end = start + std::chrono::milliseconds(static_cast<int64_t>(o.seconds * 1000));
  std::mutex mu;
  std::vector<Ack> acks;
  std::atomic<uint64_t> failed{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < o.writers; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(static_cast<uint64_t>(w) * 7919 + 1);
      std::vector<std::unique_ptr<ChordClient>> clients;
      for (const auto& n : o.nodes) clients.push_back(std::make_unique<ChordClient>(n, o.timeout_ms));
      const auto gap = std::chrono::microseconds(static_cast<int64_t>(1e6 / std::max(o.rate, 0.1)));
      auto next = Clock::now();
      for (uint64_t n = 0; Clock::now() < end; ++n) {
        const bool reg = o.registers > 0 && rng() % 3 == 0;
        const std::string key = reg ? "register-" + std::to_string(rng() % o.registers)
                                    : "unique-" + std::to_string(w) + "-" + std::to_string(n);
        const std::string value = "w" + std::to_string(w) + "-" + std::to_string(n);
        ChordClient& c = *clients[rng() % clients.size()];
        Result<wire::DataResponse> r = c.Put(key, value);
        if (r.ok() && r->code() == wire::OK) {
          std::lock_guard<std::mutex> lock(mu);
          acks.push_back(Ack{key, value, r->version(), MsSince(start)});
        } else {
          ++failed;
        }
        next += gap;
        std::this_thread::sleep_until(next);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::sort(acks.begin(), acks.end(),
            [](const Ack& a, const Ack& b) { return a.at_ms < b.at_ms; });
  std::ofstream out(o.out, std::ios::binary);
  for (const Ack& a : acks) out << FormatAck(a);
  out.close();
  if (!out) {
    std::cerr << "chord-lancheck: could not write " << o.out << "; give a writable --out\n";
    return 2;
  }
  uint64_t longest_gap = acks.empty() ? MsSince(start) : acks.front().at_ms;
  for (size_t i = 1; i < acks.size(); ++i) {
    longest_gap = std::max(longest_gap, acks[i].at_ms - acks[i - 1].at_ms);
  }
  // Acknowledged writes per whole second of the run; the slowest second says how much a
  // fault cost.
  std::vector<uint64_t> per_second(static_cast<size_t>(o.seconds), 0);
  for (const Ack& a : acks) {
    if (a.at_ms / 1000 < per_second.size()) ++per_second[a.at_ms / 1000];
  }
  const auto slowest = std::min_element(per_second.begin(), per_second.end());
  std::printf("acknowledged %zu writes, %llu failed or unanswered, in %.0f s; slowest second %llu "
              "acknowledged (second %zu); longest time without an acknowledged write %llu ms; "
              "log in %s\n",
              acks.size(), static_cast<unsigned long long>(failed.load()), o.seconds,
              static_cast<unsigned long long>(slowest == per_second.end() ? 0 : *slowest),
              static_cast<size_t>(slowest - per_second.begin()),
              static_cast<unsigned long long>(longest_gap), o.out.c_str());
  return acks.empty() ? 3 : 0;
}

int RunVerify(const Options& o) {
  std::ifstream in(o.acks, std::ios::binary);
  if (!in) {
    std::cerr << "chord-lancheck: cannot read " << o.acks << "; give the file `write` made\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  Result<std::vector<Ack>> acks = ParseAckLog(text.str());
  if (!acks.ok()) {
    std::cerr << "chord-lancheck: " << acks.status().message() << "\n";
    return 2;
  }
  std::vector<std::unique_ptr<ChordClient>> clients;
  for (const auto& n : o.nodes) clients.push_back(std::make_unique<ChordClient>(n, o.timeout_ms));
  size_t turn = 0;
  const Verdict v = Verify(*acks, [&](const std::string& key, std::string* error) {
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
  });
  for (const auto& p : v.problems) std::cout << "  " << p << "\n";
  std::printf("verified %llu keys (%zu acknowledged writes): %llu lost, %llu stale\n",
              static_cast<unsigned long long>(v.keys), acks->size(),
              static_cast<unsigned long long>(v.lost), static_cast<unsigned long long>(v.stale));
  return v.lost == 0 && v.stale == 0 ? 0 : 1;
}

}  // namespace
}  // namespace chord::lancheck

int main(int argc, char** argv) {
  using chord::lancheck::Options;
  Options o;
  CLI::App app{"chord-lancheck: records acknowledged writes under faults, then checks none was lost"};
  app.require_subcommand(1);
  auto* write = app.add_subcommand("write", "write unique keys and registers, log the acks");
  auto* verify = app.add_subcommand("verify", "read every acknowledged key back");
  for (auto* sub : {write, verify}) {
    sub->add_option("--node", o.nodes, "a ring member (HOST:PORT); repeat for several")
        ->required();
    sub->add_option("--timeout-ms", o.timeout_ms, "bound of each request")
        ->check(CLI::Range(100, 600000));
  }
  write->add_option("--seconds", o.seconds, "how long to write")->check(CLI::Range(0.1, 86400.0));
  write->add_option("--writers", o.writers, "concurrent writers")->check(CLI::Range(1, 256));
  write->add_option("--registers", o.registers, "shared keys every writer overwrites")
      ->check(CLI::Range(0, 100000));
  write->add_option("--rate", o.rate, "writes per second per writer")->check(CLI::Range(0.1, 10000.0));
  write->add_option("--out", o.out, "where the acknowledged writes go");
  verify->add_option("--acks", o.acks, "the file `write` made");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // A ring that runs TLS: the client certificate comes from CHORD_TLS_CERT/KEY/CA.
  if (chord::Status s = chord::ChordClient::ConfigureTls({}); !s.ok()) {
    std::cerr << "chord-lancheck: " << s.message() << "\n";
    return 2;
  }
  return write->parsed() ? chord::lancheck::RunWrite(o) : chord::lancheck::RunVerify(o);
}
