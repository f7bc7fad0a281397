#include "tools/bench/redis_targets.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/time.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <utility>

#include "protocol/id.h"
#include "tools/bench/bench_client.h"

namespace chord::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Bounds the loops of one request: a value of --value-size's largest (1 MiB) takes some 64
// reads of hiredis's 16 KiB.
constexpr int kMaxSteps = 100000;

// Milliseconds left until `deadline` (0 when it has passed).
int64_t LeftMs(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int64_t>(left) : 0;
}

timeval TimevalOf(uint64_t ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  return tv;
}

}  // namespace

void RedisTargets::ContextFree::operator()(redisContext* c) const { redisFree(c); }

RedisTargets::RedisTargets(std::vector<std::string> servers, uint64_t timeout_ms)
    : servers_(std::move(servers)), timeout_ms_(timeout_ms), contexts_(servers_.size()) {}

RedisTargets::~RedisTargets() = default;

size_t RedisTargets::ServerOf(const std::string& key) const {
  const Id id = Id::Sha1(key);
  const auto& b = id.bytes();
  uint64_t high = 0;
  for (int i = 0; i < 8; ++i) high = (high << 8) | b[static_cast<size_t>(i)];
  return static_cast<size_t>(high % servers_.size());
}

redisContext* RedisTargets::Connection(size_t i, Clock::time_point deadline, std::string* error) {
  if (contexts_[i]) return contexts_[i].get();
  const std::string& addr = servers_[i];
  const size_t colon = addr.rfind(':');
  const std::string host = addr.substr(0, colon);
  const int port = std::stoi(addr.substr(colon + 1));
  const int64_t left = LeftMs(deadline);
  if (left == 0) {
    *error = "could not connect to redis-server " + addr + " within " +
             std::to_string(timeout_ms_) + " ms (timed out); check that it runs there";
    return nullptr;
  }
  Context c(redisConnectWithTimeout(host.c_str(), port, TimevalOf(static_cast<uint64_t>(left))));
  if (!c || c->err != 0) {
    *error = "could not connect to redis-server " + addr + ": " +
             (c ? std::string(c->errstr) : std::string("out of memory")) +
             "; check that it runs there";
    return nullptr;
  }
  if (redisSetTimeout(c.get(), TimevalOf(timeout_ms_)) != REDIS_OK) {
    *error = "could not set the timeout of the connection to redis-server " + addr;
    return nullptr;
  }
  contexts_[i] = std::move(c);
  return contexts_[i].get();
}

OpOutcome RedisTargets::Command(const std::string& key, bool is_get, std::vector<const char*> argv,
                                const std::vector<size_t>& lengths) {
  OpOutcome out;
  const size_t i = ServerOf(key);
  // One deadline for the request, a connect it needs included.
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  redisContext* c = Connection(i, deadline, &out.error);
  if (c == nullptr) return out;
  void* raw = nullptr;
  std::string why;
  if (redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lengths.data()) !=
      REDIS_OK) {
    why = c->errstr;
  } else {
    raw = RoundTrip(c, deadline, &why);
  }
  if (raw == nullptr) {
    out.error = "redis-server " + servers_[i] + " did not answer: " + why;
    contexts_[i].reset();  // a broken or timed-out connection is not reused
    return out;
  }
  const redisReply* reply = static_cast<const redisReply*>(raw);
  // A view, not a copy: a GET's value is not copied on the measured path.
  const std::string_view answer(reply->str != nullptr ? reply->str : "",
                                reply->str != nullptr ? reply->len : 0);
  if (is_get && reply->type == REDIS_REPLY_STRING) {
    out.ok = true;
  } else if (is_get && reply->type == REDIS_REPLY_NIL) {
    out.not_found = true;
    out.error = "redis-server " + servers_[i] + " holds no value for " + key;
  } else if (!is_get && reply->type == REDIS_REPLY_STATUS && answer == "OK") {
    out.ok = true;
  } else if (reply->type == REDIS_REPLY_ERROR) {
    out.error = "redis-server " + servers_[i] + " answered " + std::string(answer);
  } else {
    out.error = "redis-server " + servers_[i] + " answered a " + (is_get ? "GET" : "SET") +
                " with an unexpected reply (type " + std::to_string(reply->type) + ")";
  }
  freeReplyObject(raw);
  return out;
}

void* RedisTargets::RoundTrip(redisContext* c, Clock::time_point deadline, std::string* why) {
  // The socket is blocking, each write bounded by the connection's timeout (a send that times
  // out with nothing sent fails as EAGAIN); one write normally sends the whole command.
  int done = 0;
  for (int step = 0; done == 0 && step < kMaxSteps; ++step) {
    if (redisBufferWrite(c, &done) != REDIS_OK) {
      if (c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      *why = c->errstr;
      return nullptr;
    }
    if (done == 0 && LeftMs(deadline) == 0) break;
  }
  if (done == 0) {
    *why =
        "the request could not be sent within " + std::to_string(timeout_ms_) + " ms (timed out)";
    return nullptr;
  }
  // Reads wait in poll for what is left of the request's time, so an answer that trickles in
  // cannot hold a request longer than the timeout.
  for (int step = 0; step < kMaxSteps; ++step) {
    void* reply = nullptr;
    if (redisGetReplyFromReader(c, &reply) != REDIS_OK) {
      *why = c->errstr;
      return nullptr;
    }
    if (reply != nullptr) return reply;
    const int64_t left = LeftMs(deadline);
    pollfd pfd{c->fd, POLLIN, 0};
    const int ready = left > 0 ? ::poll(&pfd, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      *why = std::strerror(errno);
      return nullptr;
    }
    if (ready == 0) break;
    if (redisBufferRead(c) != REDIS_OK) {
      *why = c->errstr;
      return nullptr;
    }
  }
  *why = "no whole answer within " + std::to_string(timeout_ms_) + " ms (timed out)";
  return nullptr;
}

OpOutcome RedisTargets::Get(const std::string& key) {
  return Command(key, /*is_get=*/true, {"GET", key.data()}, {3, key.size()});
}

OpOutcome RedisTargets::Set(const std::string& key, const std::string& value) {
  return Command(key, /*is_get=*/false, {"SET", key.data(), value.data()},
                 {3, key.size(), value.size()});
}

}  // namespace chord::bench
