// Completions: how an operation inside a ChordNode reports its outcome to the operation that
// started it. The child posts the outcome addressed to the parent's OpRef; the node delivers
// it after the current step, never from inside the child, so no operation runs inside
// another's call (the OwnerService's answer to a direct request it serves at once does not
// come through here: it only queues a reply). Not thread-safe; the node's thread only.
#ifndef CHORD_NODE_CORE_COMPLETIONS_H_
#define CHORD_NODE_CORE_COMPLETIONS_H_

#include <cstddef>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "node/core/op_ref.h"
#include "node/core/ready.h"
#include "protocol/base/status.h"
#include "protocol/chord.pb.h"

namespace chord {

// What a lookup found, and the members that answered on the way (a joining node keeps them
// as further ways into the ring, also when the lookup failed).
struct LookupOutcome {
  Result<LookupResult> result = Status::Unavailable("no result");
  std::vector<std::string> answered;
};

// A lookup's outcome, a get/put/del's answer, or whether a step succeeded.
using Outcome = std::variant<LookupOutcome, wire::DataResponse, bool>;

struct Completion {
  OpRef to;
  Outcome outcome;
};

class Completions {
 public:
  void Post(OpRef to, Outcome outcome) {
    if (to.kind == OpKind::kNone) return;
    queue_.push_back(Completion{to, std::move(outcome)});
  }
  bool empty() const { return head_ == queue_.size(); }
  Completion Take() {
    Completion c = std::move(queue_[head_]);
    if (++head_ == queue_.size()) {
      // Drained: the vector keeps its capacity, so a step's completions allocate nothing.
      queue_.clear();
      head_ = 0;
    }
    return c;
  }

 private:
  // A FIFO: taken from head_ on, appended at the end. (A std::deque of these large elements
  // allocated a block for every one.)
  std::vector<Completion> queue_;
  size_t head_ = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_COMPLETIONS_H_
