// libFuzzer target: the request head parser of the metrics server
// (node/runtime/http_request_head.h). The bytes are parsed whole, then again as they would
// arrive in reads of arbitrary sizes (resuming with an HttpHeadScan), and one byte at a time:
// every way must give the same status, method, target and length, so that what the server
// answers does not depend on how TCP split the request. Checked too: a complete head is within
// the limit, ends in its first blank line, and its method and target are what its request line
// says; a head is too large only when more than the limit has arrived, and need not be when
// all of it has. Each input is parsed under the limit it picks, under limits of its own length
// and one less, and, when it holds a complete head, of the head's length and one less.
//
// Input: byte 0 picks the limit (bit 7 set: 8 KiB as MetricsServer uses; else 1 + 3 * (byte &
// 0x7f) bytes), byte 1 seeds the read sizes, the rest is what the client sent. Seeds:
// fuzz/corpus/metrics_http_fuzz/.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "node/runtime/http_request_head.h"

namespace chord {
namespace {

// Parses `bytes` as reads of the sizes `next_size` returns arrive.
template <typename NextSize>
HttpRequestHead ParseInReads(std::string_view bytes, size_t limit, NextSize next_size) {
  HttpHeadScan scan;
  size_t end = 0;
  HttpRequestHead head = ParseHttpRequestHead(bytes.substr(0, 0), limit, &scan);
  while (head.status == HttpHeadStatus::kNeedMore && end < bytes.size()) {
    end = std::min(bytes.size(), end + next_size());
    head = ParseHttpRequestHead(bytes.substr(0, end), limit, &scan);
  }
  // Final answers do not change as more arrives.
  const HttpRequestHead again = ParseHttpRequestHead(bytes, limit, &scan);
  if (head.status != HttpHeadStatus::kNeedMore) {
    FUZZ_CHECK(again.status == head.status, "a final answer changed");
    FUZZ_CHECK(again.head_bytes == head.head_bytes, "a final length changed");
  }
  return again;
}

void CheckSame(const HttpRequestHead& a, const HttpRequestHead& b) {
  FUZZ_CHECK(a.status == b.status, "the split of the bytes changed the status");
  FUZZ_CHECK(a.head_bytes == b.head_bytes, "the split of the bytes changed the length");
  FUZZ_CHECK(a.method == b.method, "the split of the bytes changed the method");
  FUZZ_CHECK(a.target == b.target, "the split of the bytes changed the target");
}

// Parses `bytes` under `limit` whole, in reads of sizes from `seed` (and byte by byte when
// `bytewise`), checks that all agree and what the answer says; returns it.
HttpRequestHead Check(std::string_view bytes, size_t limit, uint32_t seed, bool bytewise = false) {
  const HttpRequestHead whole = ParseHttpRequestHead(bytes, limit);
  CheckSame(ParseInReads(bytes, limit,
                         [&seed] {
                           seed = seed * 1103515245u + 12345u;
                           return size_t{1} + (seed >> 16) % 64;
                         }),
            whole);
  if (bytewise) CheckSame(ParseInReads(bytes, limit, [] { return size_t{1}; }), whole);

  switch (whole.status) {
    case HttpHeadStatus::kNeedMore:
      FUZZ_CHECK(bytes.size() <= limit, "more than the limit arrived and more is needed");
      break;
    case HttpHeadStatus::kTooLarge:
      FUZZ_CHECK(bytes.size() > limit, "too large before the limit was reached");
      FUZZ_CHECK(*whole.error != '\0', "too large without a reason");
      break;
    case HttpHeadStatus::kBadRequest:
      FUZZ_CHECK(*whole.error != '\0', "a bad request without a reason");
      break;
    case HttpHeadStatus::kComplete: {
      FUZZ_CHECK(whole.head_bytes <= limit && whole.head_bytes <= bytes.size(),
                 "a complete head longer than the limit or the bytes");
      const std::string_view head = bytes.substr(0, whole.head_bytes);
      FUZZ_CHECK(head.ends_with("\n\n") || head.ends_with("\n\r\n"), "no blank line at the end");
      // The request line is METHOD SP TARGET SP HTTP/1.x, and nothing before the blank line
      // is blank.
      const std::string_view line = head.substr(0, head.find('\n'));
      FUZZ_CHECK(line.starts_with(std::string(whole.method) + " " + std::string(whole.target) +
                                  " HTTP/1."),
                 "method and target are not those of the request line");
      FUZZ_CHECK(!whole.method.empty() && whole.method.size() <= kMaxHttpMethodBytes,
                 "method length");
      FUZZ_CHECK(!whole.target.empty() && whole.target.find_first_of(std::string_view(
                                              " \r\n\t\0", 5)) == std::string_view::npos,
                 "a target that is empty or holds spaces or controls");
      const size_t blank = std::min(head.find("\n\n"), head.find("\n\r\n"));
      FUZZ_CHECK(blank + (head[blank + 1] == '\r' ? 3 : 2) == head.size(),
                 "a blank line before the end of the head");
      break;
    }
  }
  return whole;
}

}  // namespace
}  // namespace chord

// Longest input also parsed under limits at its edges.
constexpr size_t kMaxEdgeBytes = 2048;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using chord::HttpHeadStatus;
  if (size < 2) return 0;
  const size_t limit =
      (data[0] & 0x80) != 0 ? size_t{8} << 10 : 1 + 3 * static_cast<size_t>(data[0] & 0x7f);
  const uint32_t seed = data[1];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);

  chord::Check(bytes, limit, seed, /*bytewise=*/true);
  // At the edges of the limit: all of the bytes just fit, or just do not; a complete head is
  // complete under a limit of its own length, too large under one less. (On short inputs
  // only: the edges are the same at any length, and long ones are slow under the sanitizers.)
  if (bytes.size() > kMaxEdgeBytes) return 0;
  chord::Check(bytes, bytes.size(), seed);
  if (!bytes.empty()) chord::Check(bytes, bytes.size() - 1, seed);
  const chord::HttpRequestHead head = chord::Check(bytes, bytes.size() + 1, seed);
  if (head.status == HttpHeadStatus::kComplete) {
    const chord::HttpRequestHead fits = chord::Check(bytes, head.head_bytes, seed);
    FUZZ_CHECK(fits.status == HttpHeadStatus::kComplete && fits.head_bytes == head.head_bytes,
               "a complete head is not complete under a limit of its length");
    FUZZ_CHECK(chord::Check(bytes, head.head_bytes - 1, seed).status == HttpHeadStatus::kTooLarge,
               "a complete head is not too large under a limit of one byte less");
  }
  return 0;
}
