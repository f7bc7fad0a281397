#include "protocol/ring_address.h"

#include <charconv>

namespace chord {

Result<RingAddress> SplitRingAddress(std::string_view addr) {
  const size_t hash = addr.find('#');
  if (hash == std::string_view::npos) return RingAddress{std::string(addr), 0};
  const std::string_view index = addr.substr(hash + 1);
  unsigned vnode = 0;
  const auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), vnode);
  if (index.empty() || ec != std::errc() || end != index.data() + index.size() || vnode > 65535) {
    std::string sentence;
    sentence.append(1, '"').append(addr).append(
        "\" has a malformed virtual node suffix; write it like 127.0.0.1:4000#2");
    return Status::InvalidArgument(sentence);
  }
  return RingAddress{std::string(addr.substr(0, hash)), static_cast<uint32_t>(vnode)};
}

std::string VnodeAddress(std::string_view listen_addr, int vnodes, int i) {
  std::string out(listen_addr);
  if (vnodes > 1) out.append(1, '#').append(std::to_string(i));
  return out;
}

}  // namespace chord
