// BenchOptions: what one chord-bench run does (operation, load, key space, routing), as parsed
// from the command line by main.cc and read by the runner. Plain value type; any thread.
#ifndef CHORD_TOOLS_BENCH_BENCH_OPTIONS_H_
#define CHORD_TOOLS_BENCH_BENCH_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/chord.pb.h"

namespace chord::bench {

// The request mix of a run.
enum class BenchOp { kGet, kPut, kMix };

inline const char* OpName(BenchOp op) {
  switch (op) {
    case BenchOp::kGet:
      return "get";
    case BenchOp::kPut:
      return "put";
    case BenchOp::kMix:
      return "mix";
  }
  return "unknown";
}

// Defaults and bounds of the command line.
inline constexpr int kDefaultClients = 16;
inline constexpr int kMaxClients = 1024;
inline constexpr double kDefaultSeconds = 10;
inline constexpr double kMaxSeconds = 24 * 3600;
inline constexpr uint64_t kDefaultKeys = 10000;
inline constexpr uint64_t kMaxKeys = 100'000'000;
inline constexpr uint64_t kDefaultValueBytes = 100;
inline constexpr uint64_t kMaxValueBytes = 1 << 20;  // chord-node's value limit
inline constexpr double kDefaultGetRatio = 0.5;
inline constexpr uint64_t kDefaultTimeoutMs = 5000;
inline constexpr uint64_t kMaxTimeoutMs = 3600 * 1000;
inline constexpr uint64_t kDefaultSeed = 1;
inline constexpr int kMaxPipeline = 1024;

struct BenchOptions {
  std::vector<std::string> nodes;  // HOST:PORT (or HOST:PORT#i) of the nodes to send to
  int clients = kDefaultClients;   // client threads, one connection set each
  double seconds = kDefaultSeconds;
  double warmup_seconds = 0;  // load before the measured window, not recorded
  BenchOp op = BenchOp::kGet;
  double get_ratio = kDefaultGetRatio;  // share of gets in a mix
  uint64_t keys = kDefaultKeys;         // keys key-0 .. key-(keys-1)
  uint64_t value_bytes = kDefaultValueBytes;
  bool direct = false;  // send each request to the key's owner, computed here
  // --redis: `nodes` are redis-servers; GET and SET, each key to the server its SHA-1 picks.
  bool redis = false;
  bool json = false;
  uint64_t timeout_ms = kDefaultTimeoutMs;  // bound of every request
  uint64_t seed = kDefaultSeed;
  // --consistency one|quorum|all; DEFAULT: the node's default (quorum writes, one reads).
  wire::Consistency consistency = wire::CONSISTENCY_DEFAULT;
  // Requests each client thread keeps in flight (--pipeline, like redis-benchmark -P).
  int pipeline = 1;
  // --hot-keys N: the measured requests pick among key-0 .. key-(N-1) only, while all `keys`
  // are preloaded; 0: among all of them.
  uint64_t hot_keys = 0;
  // --server-pid: read the servers' CPU and memory from /proc/PID/stat of these processes
  // instead of asking the ring's nodes for their status.
  std::vector<int> server_pids;
  // --no-server-cost: do not read the servers' CPU and memory at all.
  bool server_cost = true;
};

// The keys the measured requests pick among: key-0 .. key-(result - 1).
inline uint64_t MeasuredKeys(const BenchOptions& o) {
  return o.hot_keys > 0 && o.hot_keys < o.keys ? o.hot_keys : o.keys;
}

}  // namespace chord::bench

#endif  // CHORD_TOOLS_BENCH_BENCH_OPTIONS_H_
