// NodeRef: a ring member as the protocol knows it, its id and the ring address it listens on.
// The id is always SHA-1 of the address (or of "address#i" for virtual node i, see
// ring_address.h), so the pair is self-authenticating. Plain value type; any thread.
#ifndef CHORD_PROTOCOL_NODE_REF_H_
#define CHORD_PROTOCOL_NODE_REF_H_

#include <optional>
#include <string>
#include <string_view>

#include "protocol/chord.pb.h"
#include "protocol/id.h"
#include "protocol/ring_address.h"

namespace chord {

struct NodeRef {
  Id id;
  std::string addr;

  // The id a node listening on `addr` must have.
  static NodeRef ForAddress(const std::string& addr) { return NodeRef{Id::Sha1(addr), addr}; }

  // Parses and authenticates a wire NodeInfo: nullopt when the address is not a canonical
  // ring address (ring_address.h) or the id is not SHA-1 of it.
  static std::optional<NodeRef> FromWire(const wire::NodeInfo& info) {
    if (!IsCanonicalRingAddress(info.addr())) return std::nullopt;
    auto id = Id::FromBytes(info.id());
    if (!id || Id::Sha1(info.addr()) != *id) return std::nullopt;
    return NodeRef{*id, info.addr()};
  }

  void ToWire(wire::NodeInfo* out) const {
    out->set_id(id.ToBytes());
    out->set_addr(addr);
  }

  // The process behind this ring position (its address without a "#i" vnode suffix).
  // Replica sets hold at most one position per process.
  std::string_view process() const { return ProcessAddress(addr); }
  bool SameProcess(const NodeRef& other) const { return process() == other.process(); }

  // "1a2b3c4d@HOST:PORT", for log lines.
  std::string Describe() const { return id.ShortHex() + "@" + addr; }

  friend bool operator==(const NodeRef& a, const NodeRef& b) { return a.id == b.id; }
};

}  // namespace chord

#endif  // CHORD_PROTOCOL_NODE_REF_H_
