// StatusReplyOf: for unit tests of a ChordNode core driven by hand: asks the node for its
// Status (as client 9) and returns the answer it queued, failing the test when there is none.
#ifndef CHORD_TESTS_UNIT_STATUS_REPLY_H_
#define CHORD_TESTS_UNIT_STATUS_REPLY_H_

#include <gtest/gtest.h>

#include <utility>

#include "node/core/chord_node.h"

namespace chord {

inline wire::StatusResponse StatusReplyOf(ChordNode& node, const Clock& now) {
  constexpr ReplyToken kAsker = 9;
  wire::Envelope request;
  request.set_request_id(42);
  request.mutable_status();
  node.OnRequest(now, kAsker, std::move(request));
  const Ready ready = node.TakeReady();
  for (const Ready::Reply& r : ready.replies) {
    if (r.to == kAsker && r.envelope.has_status_resp()) return r.envelope.status_resp();
  }
  ADD_FAILURE() << "no status reply";
  return {};
}

}  // namespace chord

#endif  // CHORD_TESTS_UNIT_STATUS_REPLY_H_
