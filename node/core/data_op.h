// DataOp and WriteOp: the state of one client get/put/delete in flight inside a ChordNode
// (the routing attempt, and the owner's replicated write). Internal to ChordNode's sources.
#ifndef CHORD_NODE_CORE_DATA_OP_H_
#define CHORD_NODE_CORE_DATA_OP_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "node/core/chord_node.h"

namespace chord {

struct ChordNode::DataOp {
  ReplyToken from = 0;
  wire::Envelope request;  // the client's request; `direct` is set when forwarding
  Id key_id;
  uint64_t deadline_ms = 0;
  uint64_t backoff_ms = 0;
  int attempts = 0;
  int hops = 0;
  int hints_followed = 0;
  std::optional<NodeRef> hint;  // where to send the next attempt, skipping the lookup
  std::vector<NodeRef> owner_successors;  // after the owner, from the last lookup
  std::string last_error;
};

struct ChordNode::WriteOp {
  Id key_id;
  wire::Record record;  // key and value, or a tombstone; version and writer set per attempt
  int attempts = 0;
  DataDone done;
};

}  // namespace chord

#endif  // CHORD_NODE_CORE_DATA_OP_H_
