// libFuzzer target: the request targets of the HTTP API (node/http/request_target.h). Checked:
// what parses has at most kMaxQueryParams parameters and a path starting with '/';
// percent-encoding every byte of a parsed path and parsing that again gives the same path
// (decoding is exact); PercentDecode of a string without '%' and '+' is the string itself.
// Input: the raw target. Seeds: fuzz/corpus/http_target_fuzz/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "node/http/request_target.h"

namespace chord {
namespace {

std::string EncodeAll(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    if (c == '/') {
      out.push_back('/');
      continue;
    }
    out.push_back('%');
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

void Check(std::string_view raw) {
  Result<RequestTarget> target = ParseRequestTarget(raw);
  if (!target.ok()) return;
  FUZZ_CHECK(target->query.size() <= kMaxQueryParams, "too many query parameters kept");
  FUZZ_CHECK(!target->path.empty() && target->path.front() == '/', "path lost its leading /");
  Result<RequestTarget> again = ParseRequestTarget(EncodeAll(target->path));
  FUZZ_CHECK(again.ok(), "an encoded path did not parse");
  FUZZ_CHECK(again->path == target->path, "decoding an encoded path changed it");
  FUZZ_CHECK(again->query.empty(), "an encoded path grew a query");
  if (raw.find('%') == std::string_view::npos && raw.find('+') == std::string_view::npos) {
    auto plain = PercentDecode(raw, /*plus_is_space=*/true);
    FUZZ_CHECK(plain.has_value() && *plain == raw, "decoding plain text changed it");
  }
}

}  // namespace
}  // namespace chord

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chord::Check(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
