// The core's inputs and outputs besides messages. A ChordNode is driven by calls that carry a
// Clock (the driver's time: the core reads no clock of its own), and everything it wants done
// comes out as one Ready that the driver takes after each call: requests to send, replies to
// send, when to call Tick next, log lines, finished lookups and whether a graceful leave has
// completed. The libuv runtime (node/runtime) and the simulator (tools/sim) are the drivers.
// Plain data; any thread.
#ifndef CHORD_NODE_CORE_READY_H_
#define CHORD_NODE_CORE_READY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/chord.pb.h"
#include "protocol/node_ref.h"

namespace chord {

// Identifies where a request came from, so that the core can answer it later. Opaque to the
// core; chosen by the driver (a connection id in the runtime).
using ReplyToken = uint64_t;

// The driver's time at the moment of a call.
struct Clock {
  uint64_t mono_ms = 0;  // monotonic milliseconds; only differences are meaningful
  // Wall-clock milliseconds since the Unix epoch (virtual in the simulator). Used only for
  // record versions (a hybrid logical clock) and tombstone ages, never for timeouts.
  uint64_t wall_ms = 0;
};

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// What an iterative lookup found.
struct LookupResult {
  NodeRef owner;                    // first node clockwise from the target
  std::vector<NodeRef> successors;  // the nodes after the owner, as the last hop knew them
  // The owner's own successor list, when the lookup asked the owner (verify) or is the owner:
  // where the owner places the key's replicas.
  std::vector<NodeRef> owner_successors;
  NodeRef predecessor;  // the node just before the owner
  int hops = 0;         // lookup RPCs answered
  int timeouts = 0;     // peers that did not answer
};

struct Ready {
  // A request for the node at ring address `to` (HOST:PORT or HOST:PORT#i). Its request id
  // is set; the answer goes back through ChordNode::OnResponse with the same id, or
  // OnSendFailed(id) if the driver learns it cannot be delivered. The core runs its own
  // deadline for every request either way.
  //
  // One message for several nodes (a write's record for each replica) is built once: the
  // first request holds it, and each of the others holds only its own request id and deadline
  // and names the first in `body_of`. A driver takes what to send through Outgoing or Take,
  // never from `envelope` directly.
  struct Request {
    std::string to;
    wire::Envelope envelope;
    std::optional<size_t> body_of;  // the index in `requests` of the request whose body this is
    bool lent = false;              // later requests carry this one's body
  };
  // The answer to a request received through ChordNode::OnRequest from `to`.
  struct Reply {
    ReplyToken to = 0;
    wire::Envelope envelope;
  };
  struct Log {
    LogLevel level = LogLevel::kInfo;
    std::string text;
  };
  // The result of a lookup started with ChordNode::StartLookup.
  struct Lookup {
    uint64_t handle = 0;
    Result<LookupResult> result = Status::Unavailable("no result");
  };

  // What to send for requests[k], for a driver that encodes it at once: its envelope, or the
  // one whose body it shares, given k's request id and deadline. Call it for the requests in
  // order: the envelope is valid until the next call (which may give it another request's
  // id), and no request must have been taken.
  wire::Envelope& Outgoing(size_t k) {
    Request& r = requests[k];
    if (!r.body_of) return r.envelope;
    wire::Envelope& shared = requests[*r.body_of].envelope;
    shared.set_request_id(r.envelope.request_id());
    shared.set_deadline_unix_ms(r.envelope.deadline_unix_ms());
    return shared;
  }
  // What to send for requests[k], for a driver that keeps it: moved out, or copied when it
  // shares another's body or later requests share its own. Take them in order.
  wire::Envelope Take(size_t k) {
    wire::Envelope& out = Outgoing(k);
    return requests[k].lent || requests[k].body_of ? wire::Envelope(out) : std::move(out);
  }

  std::vector<Request> requests;
  std::vector<Reply> replies;
  std::vector<Log> logs;
  std::vector<Lookup> lookups;
  // Call ChordNode::Tick at (or soon after) this monotonic time; nullopt: nothing is due.
  std::optional<uint64_t> wake_at_ms;
  // Requests the node stopped waiting for (their deadline passed). A driver whose connection
  // to the peer has been silent since should drop it, so that nothing still queued on it is
  // delivered late.
  std::vector<uint64_t> expired;
  // The graceful leave started with ChordNode::Leave has finished.
  bool left = false;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_READY_H_
