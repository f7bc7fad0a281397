// Whether an IPv4 address is one of this host's own: the addresses of its network interfaces
// as the kernel lists them now (getifaddrs). chord-node's flag checks use it to see that
// --join of a LAN address of this host, with --listen 0.0.0.0 on the same port, names the node
// itself. Reads the interface list on every call; any thread.
#ifndef CHORD_NODE_RUNTIME_HOST_ADDRESSES_H_
#define CHORD_NODE_RUNTIME_HOST_ADDRESSES_H_

#include <netinet/in.h>

namespace chord {

// True if `addr` (its address; the port is not looked at) is on 127.0.0.0/8 or is the address
// of one of this host's interfaces; false when the list cannot be read.
bool IsAddressOfThisHost(const sockaddr_in& addr);

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_HOST_ADDRESSES_H_
