// Ring addresses: how a ring position is named on the wire. A node is "HOST:PORT"; virtual
// node i of the process listening on HOST:PORT is "HOST:PORT#i" (DESIGN.md, Protocol). The
// id of a ring position is SHA-1 of its ring address. Pure functions; any thread.
#ifndef CHORD_PROTOCOL_RING_ADDRESS_H_
#define CHORD_PROTOCOL_RING_ADDRESS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace chord {

// Where a ring address points: the process address (HOST:PORT, not checked here) and the
// virtual node index of its "#i" suffix (0 without one).
struct RingAddress {
  std::string process;
  uint32_t vnode = 0;
};

// Splits "HOST:PORT#i" into HOST:PORT and i (decimal, at most 65535); "HOST:PORT" is vnode 0.
// InvalidArgument for an empty or malformed suffix.
[[nodiscard]] Result<RingAddress> SplitRingAddress(std::string_view addr);

// The process part of a ring address: everything before a "#i" suffix. Two ring positions
// belong to one process exactly when these are equal.
inline std::string_view ProcessAddress(std::string_view ring_addr) {
  return ring_addr.substr(0, ring_addr.find('#'));
}

// The largest number of ring positions (vnodes) one process may have.
inline constexpr int kMaxVnodesPerProcess = 64;

// Whether `addr` is spelled the one way a ring position may be: "A.B.C.D:PORT" with decimal
// octets and port without leading zeros (port 1..65535), optionally "#i" with i below
// kMaxVnodesPerProcess, also without leading zeros. Every other spelling of an endpoint (an
// alias) would give it another id, so it is refused.
bool IsCanonicalRingAddress(std::string_view addr);

// The ring address of vnode i of the process listening on `listen_addr`: `listen_addr` itself
// when the process runs one ring position, "listen_addr#i" otherwise.
std::string VnodeAddress(std::string_view listen_addr, int vnodes, int i);

}  // namespace chord

#endif  // CHORD_PROTOCOL_RING_ADDRESS_H_
