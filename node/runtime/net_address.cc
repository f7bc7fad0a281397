#include "node/runtime/net_address.h"

#include <uv.h>

#include <charconv>
#include <cstring>

namespace chord {

Result<sockaddr_in> ParseIpv4Address(std::string_view host_port) {
  // Built by appends: GCC 12 at -O3 misreports `"\"" + std::string(...)` (-Wrestrict, 105329).
  std::string quoted;
  quoted.reserve(host_port.size() + 2);
  quoted.append(1, '"').append(host_port).append(1, '"');
  const size_t colon = host_port.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == host_port.size()) {
    return Status::InvalidArgument(quoted + " is not a HOST:PORT address; write it like " +
                                   "127.0.0.1:4000");
  }
  std::string host(host_port.substr(0, colon));
  const std::string_view port_text = host_port.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535) {
    return Status::InvalidArgument(quoted + " has no valid port; use a port between 1 and " +
                                   "65535, like 127.0.0.1:4000");
  }
  if (host == "localhost") host = "127.0.0.1";
  sockaddr_in addr;
  std::memset(&addr, 0, sizeof(addr));
  if (uv_ip4_addr(host.c_str(), static_cast<int>(port), &addr) != 0) {
    return Status::InvalidArgument(quoted + " does not name an IPv4 address; give the host " +
                                   "as digits like 127.0.0.1 (host names are not resolved)");
  }
  return addr;
}

Result<std::string> CanonicalHostPort(std::string_view host_port) {
  auto addr = ParseIpv4Address(host_port);
  if (!addr.ok()) return addr.status();
  sockaddr_storage storage{};
  std::memcpy(&storage, &*addr, sizeof(sockaddr_in));
  return FormatSocketAddress(storage);
}

bool IsLoopback(const sockaddr_in& addr) {
  return (ntohl(addr.sin_addr.s_addr) >> 24) == 127;
}

std::string FormatSocketAddress(const sockaddr_storage& addr) {
  if (addr.ss_family != AF_INET) return "?";
  const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
  char host[INET_ADDRSTRLEN] = {};
  if (uv_ip4_name(in, host, sizeof(host)) != 0) return "?";
  // Built by appends: GCC 12 at -O3 misreports operator+ on short strings (-Wrestrict, 105329).
  std::string out(host);
  out.append(1, ':').append(std::to_string(ntohs(in->sin_port)));
  return out;
}

}  // namespace chord
