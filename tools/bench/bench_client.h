// BenchClient: the connections of one chord-bench client thread and the way it sends one get
// or put. Routed: requests go round-robin over the given nodes, which route them to the key's
// owner. Direct: each request goes, marked `direct`, to the owner that the thread's
// OwnerRouter computes; on NOT_OWNER (or SHUTTING_DOWN) the thread refreshes its ring copy and
// retries, at most kMaxDirectAttempts times. One ChordClient (one TCP connection) per address.
// Redis (--redis): gets and puts are GETs and SETs to the redis-server RedisTargets picks.
// Not thread-safe: one per thread.
#ifndef CHORD_TOOLS_BENCH_BENCH_CLIENT_H_
#define CHORD_TOOLS_BENCH_BENCH_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/bench/owner_router.h"
#include "tools/bench/redis_targets.h"
#include "tools/client/chord_client.h"

namespace chord::bench {

// Requests one direct operation may send (the first and its retries after NOT_OWNER).
inline constexpr int kMaxDirectAttempts = 4;

// What became of one request.
struct OpOutcome {
  bool ok = false;
  bool not_found = false;  // a get of a missing key (counted as an error)
  uint32_t hops = 0;       // the node's DataResponse.hops
  uint32_t redirects = 0;  // NOT_OWNER answers followed (direct only)
  std::string error;       // one sentence when !ok
};

class BenchClient {
 public:
  // Routed: requests round-robin over `nodes`, starting at nodes[first % nodes.size()].
  BenchClient(std::vector<std::string> nodes, size_t first, uint64_t timeout_ms);
  // Direct: requests to the owners named by `router` (this thread's own copy).
  BenchClient(OwnerRouter router, uint64_t timeout_ms);
  // Redis: requests to redis-servers instead of chord nodes (no pipelining).
  explicit BenchClient(std::unique_ptr<RedisTargets> redis);
  BenchClient(const BenchClient&) = delete;
  BenchClient& operator=(const BenchClient&) = delete;

  // Every later get and put asks for this consistency level (README "Consistency levels").
  void set_consistency(wire::Consistency level) { consistency_ = level; }

  OpOutcome Get(const std::string& key);
  OpOutcome Put(const std::string& key, const std::string& value);

  // Pipelining (--pipeline): the request for a get (value null) or put goes to its node
  // (round-robin, or the owner when direct) without waiting; the node's address and the
  // request id the answer will carry, or why it could not be sent.
  struct Sent {
    std::string addr;
    uint64_t request_id = 0;
  };
  Result<Sent> SendAsync(const std::string& key, const std::string* value);
  // The next answer on the connection to `addr` (any request sent there by SendAsync).
  Result<wire::Envelope> ReceiveFrom(const std::string& addr);
  // What `answer` from `addr` says about its request. A NOT_OWNER answer to a direct request
  // refreshes the ring copy and counts as a redirect (the request is not retried).
  OpOutcome OutcomeOf(const std::string& addr, const Result<wire::Envelope>& answer);

 private:
  // `request` holds a get or put body.
  OpOutcome Send(wire::Envelope request);
  OpOutcome SendRouted(wire::Envelope request);
  OpOutcome SendDirect(wire::Envelope request);
  ChordClient& ClientFor(const std::string& addr);

  std::vector<std::string> nodes_;
  size_t next_node_ = 0;
  std::optional<OwnerRouter> router_;  // set in direct mode
  uint64_t timeout_ms_;
  std::unique_ptr<RedisTargets> redis_;  // set in redis mode
  wire::Consistency consistency_ = wire::CONSISTENCY_DEFAULT;
  std::map<std::string, std::unique_ptr<ChordClient>> clients_;  // by address
};

}  // namespace chord::bench

#endif  // CHORD_TOOLS_BENCH_BENCH_CLIENT_H_
