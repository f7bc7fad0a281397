#include "node/runtime/host_addresses.h"

#include <ifaddrs.h>
#include <sys/socket.h>

#include <memory>

#include "node/runtime/net_address.h"

namespace chord {

bool IsAddressOfThisHost(const sockaddr_in& addr) {
  if (IsLoopback(addr)) return true;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  const std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> owned(list, &::freeifaddrs);
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (in->sin_addr.s_addr == addr.sin_addr.s_addr) return true;
  }
  return false;
}

}  // namespace chord
