// Admission: who may say what. Ring maintenance and replication messages come only from
// members (a client may send data requests marked `direct` to the owner it computed, but
// ClientRequest strips what only a coordinator may set); a member speaks only
// for itself (every node it names as the sender, in Notify.node, Leave.node and the `from` of
// Transfer, Replicate and SyncDigest, is a ring position of its certified process, below its
// vnode count); ListKeys needs an admin; puts and deletes a writer; gets, lookups and status
// any authenticated client. Pure functions; any thread.
#ifndef CHORD_NODE_CORE_ADMISSION_H_
#define CHORD_NODE_CORE_ADMISSION_H_

#include <string>

#include "protocol/sender.h"
#include "protocol/chord.pb.h"

namespace chord {

// "" when `sender` may make `request`; otherwise the one sentence it is refused with.
std::string AdmissionProblem(const Sender& sender, const wire::Envelope& request);

// Whether `sender` is an authenticated client (not a member, not unchecked).
bool IsClient(const Sender& sender);

// Whether `request` carries a field only a coordinating member may set: the version or writer
// of a write (the owner versions it), a suspect, or a get's from_replica (a read of a copy,
// whose answer names the record's writer).
bool CarriesCoordinatorFields(const wire::Envelope& request);
// `request` without those fields.
wire::Envelope ClientRequest(wire::Envelope request);

}  // namespace chord

#endif  // CHORD_NODE_CORE_ADMISSION_H_
