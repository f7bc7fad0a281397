#include "tools/client/duration.h"

#include <cctype>
#include <chrono>
#include <string>

namespace chord {
namespace {

// Milliseconds in one `unit`, or 0 if it is not one.
uint64_t UnitMs(const std::string& unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m") return 60 * 1000;
  if (unit == "h") return 3600 * 1000;
  if (unit == "d") return 24 * 3600 * 1000;
  return 0;
}

Status Bad(const std::string& text) {
  return Status::InvalidArgument("\"" + text +
                                 "\" is not a duration; write a number and a unit (ms, s, m, h, "
                                 "d), such as 500ms, 30s, 5m, 1h or 1h30m");
}

}  // namespace

Result<uint64_t> ParseDuration(const std::string& text) {
  if (text.empty() || text.size() > 64) return Bad(text);
  uint64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) == 0) return Bad(text);
    uint64_t n = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
      n = n * 10 + static_cast<uint64_t>(text[i] - '0');
      if (n > kMaxTtlMs) return Bad(text);
      ++i;
    }
    std::string unit;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i])) != 0) {
      unit += text[i++];
    }
    const uint64_t ms = UnitMs(unit);
    if (ms == 0) return Bad(text);
    if (n > kMaxTtlMs / ms || total + n * ms > kMaxTtlMs) {
      return Status::InvalidArgument(
          "the duration \"" + text + "\" is longer than the longest time to live (" +
          std::to_string(kMaxTtlMs / UnitMs("d")) + "d, about ten years); use a shorter one");
    }
    total += n * ms;
  }
  if (total == 0) {
    return Status::InvalidArgument("the duration \"" + text + "\" is zero; use at least 1ms");
  }
  return total;
}

uint64_t UnixNowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace chord
