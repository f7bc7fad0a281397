// RedisTargets: one chord-bench client thread's connections to a set of redis-servers
// (--redis), for a reference figure measured by the same load generator as chord's: each key
// goes to the server its SHA-1 picks (the first eight bytes modulo the number of servers), so
// every client thread talks to every server, as chord-bench --direct spreads its requests over
// a ring's owners. GET and SET through hiredis, one request at a time, each bounded by the
// timeout as a whole, a connect it needs included: the command is written, then the answer
// read after a poll for what is left of the request's time, the same write, poll and read per
// request as chord-bench's own client. Not thread-safe: one per thread.
#ifndef CHORD_TOOLS_BENCH_REDIS_TARGETS_H_
#define CHORD_TOOLS_BENCH_REDIS_TARGETS_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct redisContext;

namespace chord::bench {

struct OpOutcome;

class RedisTargets {
 public:
  // `servers` are HOST:PORT; nothing is connected until the first request to a server.
  RedisTargets(std::vector<std::string> servers, uint64_t timeout_ms);
  ~RedisTargets();
  RedisTargets(const RedisTargets&) = delete;
  RedisTargets& operator=(const RedisTargets&) = delete;

  OpOutcome Get(const std::string& key);
  OpOutcome Set(const std::string& key, const std::string& value);

  // The index in `servers` of the server that holds `key`.
  size_t ServerOf(const std::string& key) const;

 private:
  struct ContextFree {
    void operator()(redisContext* c) const;
  };
  using Context = std::unique_ptr<redisContext, ContextFree>;

  // Sends the command (argv form) to the key's server and reads its answer; reconnects on the
  // next request after a connection error.
  // `is_get` decides which answers are right: a bulk string or nil (no value) for GET, the
  // status OK for SET.
  OpOutcome Command(const std::string& key, bool is_get, std::vector<const char*> argv,
                    const std::vector<size_t>& lengths);
  // Sends the command appended to `c` and reads its answer by `deadline`; null, with the
  // reason in *why, on an error or when the time ran out.
  void* RoundTrip(redisContext* c, std::chrono::steady_clock::time_point deadline,
                  std::string* why);
  // The connection to servers_[i], connected now (by `deadline`) if it is not; null (with
  // `error`) if that failed.
  redisContext* Connection(size_t i, std::chrono::steady_clock::time_point deadline,
                           std::string* error);

  std::vector<std::string> servers_;
  uint64_t timeout_ms_;
  std::vector<Context> contexts_;  // by server index; null until connected
};

}  // namespace chord::bench

#endif  // CHORD_TOOLS_BENCH_REDIS_TARGETS_H_
