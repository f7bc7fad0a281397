// Environment: everything the protocol core needs from the outside world: sending messages,
// the time, timers, randomness and logging. The libuv runtime (node/runtime) and the
// simulator (tools/sim) implement it; the core calls it only from the thread that drives it.
#ifndef CHORD_NODE_CORE_ENVIRONMENT_H_
#define CHORD_NODE_CORE_ENVIRONMENT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "protocol/chord.pb.h"

namespace chord {

// Identifies where a request came from, so that the core can answer it later. Opaque to the
// core; chosen by the environment (a connection id in the runtime).
using ReplyToken = uint64_t;
using TimerId = uint64_t;

enum class LogLevel { kDebug, kInfo, kWarn, kError };

class Environment {
 public:
  virtual ~Environment() = default;

  // Monotonic milliseconds; only differences are meaningful.
  virtual uint64_t NowMs() = 0;
  // Wall-clock milliseconds since the Unix epoch (virtual in the simulator). Used only for
  // record versions (a hybrid logical clock) and tombstone ages, never for timeouts.
  virtual uint64_t WallMs() = 0;
  // Uniformly random 64 bits (seeded in the simulator).
  virtual uint64_t Random() = 0;

  // Sends a request envelope (request_id already set) to the node listening on `addr`. The
  // response comes back through ChordNode::OnResponse; if the environment learns that the
  // request cannot be delivered it may call ChordNode::OnSendFailed early. Either way the
  // core runs its own timeout for every request.
  virtual void SendRequest(const std::string& addr, const wire::Envelope& request) = 0;
  // Answers a request received through ChordNode::OnRequest. Dropped silently if the
  // requester has gone away.
  virtual void SendReply(ReplyToken to, const wire::Envelope& reply) = 0;

  // Runs `fn` once, `delay_ms` from now, on the core's thread.
  virtual TimerId Schedule(uint64_t delay_ms, std::function<void()> fn) = 0;
  // Cancels a timer that has not fired yet; a no-op otherwise.
  virtual void Cancel(TimerId id) = 0;

  virtual void Log(LogLevel level, std::string_view message) = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_ENVIRONMENT_H_
