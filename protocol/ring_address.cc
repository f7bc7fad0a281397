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

namespace {

// A decimal number without leading zeros (or "0"), at most `max`.
bool CanonicalNumber(std::string_view s, unsigned max, unsigned* value) {
  if (s.empty() || s.size() > 5 || (s.size() > 1 && s[0] == '0')) return false;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > max) return false;
  *value = v;
  return true;
}

}  // namespace

bool IsCanonicalRingAddress(std::string_view addr) {
  const size_t hash = addr.find('#');
  unsigned v = 0;
  if (hash != std::string_view::npos) {
    if (!CanonicalNumber(addr.substr(hash + 1), kMaxVnodesPerProcess - 1, &v)) return false;
    addr = addr.substr(0, hash);
  }
  const size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos) return false;
  unsigned port = 0;
  if (!CanonicalNumber(addr.substr(colon + 1), 65535, &port) || port == 0) return false;
  std::string_view host = addr.substr(0, colon);
  for (int octet = 0; octet < 4; ++octet) {
    const size_t dot = host.find('.');
    if ((octet < 3) == (dot == std::string_view::npos)) return false;
    if (!CanonicalNumber(host.substr(0, dot), 255, &v)) return false;
    host = octet < 3 ? host.substr(dot + 1) : std::string_view();
  }
  return true;
}

std::string VnodeAddress(std::string_view listen_addr, int vnodes, int i) {
  std::string out(listen_addr);
  if (vnodes > 1) out.append(1, '#').append(std::to_string(i));
  return out;
}

}  // namespace chord
