// AnswersAsMember (and AnswersAsMemberOrLeaver): whether a GetState answer shows the node
// asked to be a live member of the ring. Only such an answer proves a neighbour alive: any reply is
// not enough (a process answers a request for a virtual node it does not run with an error, a
// restarted node answers while it is still joining, and a bare HOST:PORT reaches the process's
// first vnode, which may be another position). Pure function; any thread.
#ifndef CHORD_NODE_CORE_MEMBERSHIP_MEMBER_ANSWER_H_
#define CHORD_NODE_CORE_MEMBERSHIP_MEMBER_ANSWER_H_

#include "protocol/chord.pb.h"
#include "protocol/node_ref.h"

namespace chord {

// The GetState answer in `response` if `asked` itself gave it, else null.
inline const wire::GetStateResponse* StateFromItself(const wire::Envelope* response,
                                                     const NodeRef& asked) {
  if (response == nullptr || !response->has_get_state_resp()) return nullptr;
  const auto& s = response->get_state_resp();
  auto self = NodeRef::FromWire(s.self());
  return self && *self == asked ? &s : nullptr;
}

// True when `response` is a GetState answer from `asked` itself, joined.
inline bool AnswersAsMember(const wire::Envelope* response, const NodeRef& asked) {
  const wire::GetStateResponse* s = StateFromItself(response, asked);
  return s != nullptr && s->joined();
}

// True when `response` is a GetState answer from `asked` itself, joined or still handing its
// keys on before it leaves: a predecessor that is leaving stays one until its leave notice.
inline bool AnswersAsMemberOrLeaver(const wire::Envelope* response, const NodeRef& asked) {
  const wire::GetStateResponse* s = StateFromItself(response, asked);
  return s != nullptr && (s->joined() || s->leaving());
}

}  // namespace chord

#endif  // CHORD_NODE_CORE_MEMBERSHIP_MEMBER_ANSWER_H_
