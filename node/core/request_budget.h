// RequestBudget: the bytes of data requests a ChordNode holds while they are under way (a
// client's request waiting for its key's owner, a direct request waiting for the replicas),
// so that what peers can make a node hold at once is bounded. A request is charged its encoded
// size and a fixed share for the operation that carries it, from when the node takes it
// on until it is answered. While the charges reach the limit, new requests are answered
// UNAVAILABLE at once (so a node holds at most the limit and one request more). A node's own
// are in its NodeContext; a process with vnodes shares one pair (NodeRuntime). The
// DataService and the OwnerService charge them. Not thread-safe.
#ifndef CHORD_NODE_CORE_REQUEST_BUDGET_H_
#define CHORD_NODE_CORE_REQUEST_BUDGET_H_

#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "protocol/chord.pb.h"
#include "protocol/parse_cost.h"

namespace chord {

class RequestBudget {
 public:
  // What an operation and its bookkeeping hold besides the key and value.
  static constexpr size_t kPerRequestBytes = 512;

  explicit RequestBudget(size_t limit) : limit_(std::max<size_t>(limit, 1)) {}
  // The limit of each of a node's two budgets (requests it coordinates, requests it serves as
  // owner) when it may hold `max_in_flight` bytes of requests under way.
  static size_t HalfLimit(size_t max_in_flight) { return max_in_flight / 2; }

  // The charge for `request` (a get, put or delete): all of its encoded size, fields this build
  // does not know included (a parsed message keeps them, and a request passed on carries them),
  // and for each such field what holding it apart takes: a request padded with empty ones
  // holds many times its size.
  static size_t CostOf(const wire::Envelope& request) {
    return kPerRequestBytes + request.ByteSizeLong() +
           kUnknownFieldHeldBytes * UnknownFieldCount(request);
  }
  // The fields this build does not know in `request` and the messages it holds, with those
  // inside unknown groups (a length-delimited one is kept as its bytes).
  static size_t UnknownFieldCount(const wire::Envelope& request) {
    size_t n = UnknownIn(request);
    switch (request.body_case()) {
      case wire::Envelope::kPut:
        return n + UnknownIn(request.put());
      case wire::Envelope::kDel:
        return n + UnknownIn(request.del());
      case wire::Envelope::kGet:
        n += UnknownIn(request.get());
        return n + (request.get().has_asker() ? UnknownIn(request.get().asker()) : 0);
      default:
        return n;
    }
  }
  // Whether new requests must be refused.
  bool Full() const { return held_ >= limit_; }
  void Charge(size_t bytes) { held_ += bytes; }
  void Release(size_t bytes) { held_ -= std::min(bytes, held_); }
  // The answer to a request refused while Full.
  wire::DataResponse Busy() const {
    wire::DataResponse busy;
    busy.set_code(wire::UNAVAILABLE);
    busy.set_error("this node holds " + std::to_string(held_ >> 10) +
                   " KiB of requests under way, its limit; retry shortly or ask another node");
    return busy;
  }

 private:
  static size_t UnknownIn(const google::protobuf::Message& m) {
    return UnknownIn(m.GetReflection()->GetUnknownFields(m));
  }
  // An unknown group is parsed into a set of its own, whose fields are held apart too.
  static size_t UnknownIn(const google::protobuf::UnknownFieldSet& set) {
    size_t n = static_cast<size_t>(set.field_count());
    for (int i = 0; i < set.field_count(); ++i) {
      if (set.field(i).type() == google::protobuf::UnknownField::TYPE_GROUP) {
        n += UnknownIn(set.field(i).group());
      }
    }
    return n;
  }

  size_t limit_;
  size_t held_ = 0;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_REQUEST_BUDGET_H_
