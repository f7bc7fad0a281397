#include "node/http/request_target.h"

namespace chord {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> RequestTarget::Param(std::string_view name) const {
  for (const auto& [n, v] : query) {
    if (n == name) return v;
  }
  return std::nullopt;
}

std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = HexValue(text[i + 1]);
      const int lo = HexValue(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

Result<RequestTarget> ParseRequestTarget(std::string_view raw) {
  if (raw.empty() || raw.front() != '/') {
    return Status::InvalidArgument("the request target must be a path starting with '/'");
  }
  const size_t q = raw.find('?');
  const std::string_view path = raw.substr(0, q);
  RequestTarget target;
  auto decoded = PercentDecode(path, /*plus_is_space=*/false);
  if (!decoded) {
    return Status::InvalidArgument(
        "the path has a malformed percent escape; write a byte as %XX with two hex digits");
  }
  target.path = std::move(*decoded);
  if (q == std::string_view::npos) return target;
  std::string_view query = raw.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    if (target.query.size() >= kMaxQueryParams) {
      return Status::InvalidArgument("the query has more than " + std::to_string(kMaxQueryParams) +
                                     " parameters");
    }
    const size_t eq = pair.find('=');
    auto name = PercentDecode(pair.substr(0, eq), /*plus_is_space=*/true);
    auto value = PercentDecode(
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
    if (!name || !value) {
      return Status::InvalidArgument(
          "the query has a malformed percent escape; write a byte as %XX with two hex digits");
    }
    target.query.emplace_back(std::move(*name), std::move(*value));
  }
  return target;
}

}  // namespace chord
