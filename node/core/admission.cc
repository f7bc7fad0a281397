#include "node/core/admission.h"

#include <charconv>

#include "protocol/ring_address.h"

namespace chord {
namespace {

using B = wire::Envelope::BodyCase;
using Role = Sender::Role;

// The body name of a request ("notify", "replicate", ...), for refusals.
std::string BodyName(const wire::Envelope& e) {
  const auto* f = wire::Envelope::descriptor()->FindFieldByNumber(e.body_case());
  return f == nullptr ? std::string("this request") : std::string(f->name());
}

bool MemberOnly(const wire::Envelope& e) {
  switch (e.body_case()) {
    case B::kGetState:
    case B::kNotify:
    case B::kPing:
    case B::kFindNextHop:
    case B::kTransfer:
    case B::kLeave:
    case B::kStabilizeNow:
    case B::kMergeHint:
    case B::kReplicate:
    case B::kSyncDigest:
    case B::kSyncPull:
    case B::kPurge:
    case B::kReplicaSet:
      return true;
    default:
      return false;
  }
}

// The ring position a member names as itself in `e`, if the body has one.
const wire::NodeInfo* SelfClaim(const wire::Envelope& e) {
  switch (e.body_case()) {
    case B::kNotify:
      return &e.notify().node();
    case B::kLeave:
      return &e.leave().node();
    case B::kTransfer:
      return &e.transfer().from();
    case B::kReplicate:
      return &e.replicate().from();
    case B::kSyncDigest:
      return &e.sync_digest().from();
    default:
      return nullptr;
  }
}

// Whether `addr` is a ring position of the process the member's certificate names, spelled
// the one way the runtime spells it (no "#0" alias of a process without vnodes, no bare
// address for one with them).
bool SpeaksForItself(const Sender& s, const std::string& addr) {
  auto split = SplitRingAddress(addr);
  if (!split.ok() || split->process != s.member_addr || split->vnode >= s.member_vnodes) {
    return false;
  }
  return addr == VnodeAddress(s.member_addr, static_cast<int>(s.member_vnodes),
                              static_cast<int>(split->vnode));
}

}  // namespace

bool IsClient(const Sender& sender) {
  return sender.role == Role::kReader || sender.role == Role::kWriter ||
         sender.role == Role::kAdmin;
}

bool CarriesCoordinatorFields(const wire::Envelope& request) {
  if (request.has_put()) {
    const auto& p = request.put();
    return p.version() != 0 || !p.writer().empty() || !p.suspect().empty();
  }
  if (request.has_del()) {
    const auto& d = request.del();
    return d.version() != 0 || !d.writer().empty() || !d.suspect().empty();
  }
  return request.has_get() && (!request.get().suspect().empty() || request.get().from_replica() ||
                               request.get().for_condition() || request.get().has_asker());
}

wire::Envelope ClientRequest(wire::Envelope request) {
  if (request.has_put()) {
    request.mutable_put()->clear_version();
    request.mutable_put()->clear_writer();
    request.mutable_put()->clear_suspect();
  } else if (request.has_del()) {
    request.mutable_del()->clear_version();
    request.mutable_del()->clear_writer();
    request.mutable_del()->clear_suspect();
  } else if (request.has_get()) {
    request.mutable_get()->clear_suspect();
    request.mutable_get()->clear_from_replica();
    request.mutable_get()->clear_for_condition();
    request.mutable_get()->clear_asker();
  }
  return request;
}

std::string AdmissionProblem(const Sender& sender, const wire::Envelope& request) {
  const Role role = sender.role;
  if (role == Role::kUnchecked) return "";
  if (role == Role::kNobody) {
    return "this connection's certificate gives no role on this ring; use a member or client "
           "certificate made with scripts/certs.sh";
  }
  if (MemberOnly(request)) {
    if (role != Role::kMember) {
      return BodyName(request) +
             " is a message between ring members, and this connection is a "
             "client's; members use their member certificate";
    }
    const wire::NodeInfo* claim = SelfClaim(request);
    if (claim != nullptr && !SpeaksForItself(sender, claim->addr())) {
      return "a member may speak only for itself: this connection is " + sender.member_addr +
             "'s, but the " + BodyName(request) + " names \"" + claim->addr() + "\"";
    }
    return "";
  }
  if (role == Role::kMember) {
    // A condition read names its asker (GetRequest.asker), which its first replica holds as
    // its predecessor: the member itself.
    if (request.has_get() && request.get().has_asker() &&
        !SpeaksForItself(sender, request.get().asker().addr())) {
      return "a member may speak only for itself: this connection is " + sender.member_addr +
             "'s, but the get names \"" + request.get().asker().addr() + "\" as its asker";
    }
    return "";
  }
  if (request.has_list_keys() && role != Role::kAdmin) {
    return "listing every key needs an admin certificate; this one may read" +
           std::string(role == Role::kWriter ? " and write" : "");
  }
  if ((request.has_put() || request.has_del()) && role == Role::kReader) {
    return "this certificate may only read; writing needs a writer or admin certificate";
  }
  return "";
}

}  // namespace chord
