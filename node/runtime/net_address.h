// Parsing of the HOST:PORT addresses that name nodes (--listen, --join, peer addresses in
// the ring; protocol/ring_address.h splits off a vnode's "#i"). Only IPv4 literals are
// supported, plus "localhost" for 127.0.0.1; host names are rejected rather than resolved, so
// that a node's address is also its identity. Pure functions; any thread.
#ifndef CHORD_NODE_RUNTIME_NET_ADDRESS_H_
#define CHORD_NODE_RUNTIME_NET_ADDRESS_H_

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/status.h"

namespace chord {

// Parses "A.B.C.D:PORT" (or "localhost:PORT") with a port in 1..65535.
Result<sockaddr_in> ParseIpv4Address(std::string_view host_port);

// The one spelling of an address ParseIpv4Address accepts: "A.B.C.D:PORT" without leading
// zeros, localhost written 127.0.0.1. Peers know a node by this string (its id is its SHA-1).
Result<std::string> CanonicalHostPort(std::string_view host_port);

// Whether `addr` is on 127.0.0.0/8.
bool IsLoopback(const sockaddr_in& addr);

// "A.B.C.D:PORT" for an IPv4 socket address, "?" for anything else.
std::string FormatSocketAddress(const sockaddr_storage& addr);

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_NET_ADDRESS_H_
