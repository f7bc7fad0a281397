// The HTTP request head parser of the metrics server (node/runtime/http_request_head.h):
// complete heads and their method, target and length; every kind of byte that makes a head
// invalid, as soon as it arrives; the size limit, whether the head arrives in one read or
// many; and that a head split anywhere parses as it does whole.
#include "node/runtime/http_request_head.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace chord {
namespace {

constexpr size_t kLimit = 8 << 10;

const char* Name(HttpHeadStatus s) {
  switch (s) {
    case HttpHeadStatus::kNeedMore:
      return "need-more";
    case HttpHeadStatus::kComplete:
      return "complete";
    case HttpHeadStatus::kBadRequest:
      return "bad-request";
    case HttpHeadStatus::kTooLarge:
      return "too-large";
  }
  return "?";
}

// Parses `bytes` whole, then fed one byte at a time and in chunks of 7 through a scan, and
// checks that every way gives the same answer; returns the whole parse.
HttpRequestHead ParseEveryWay(const std::string& bytes, size_t limit = kLimit) {
  const HttpRequestHead whole = ParseHttpRequestHead(bytes, limit);
  for (size_t chunk : {size_t{1}, size_t{7}}) {
    HttpHeadScan scan;
    HttpRequestHead part;
    for (size_t end = 0; end < bytes.size();) {
      end = std::min(bytes.size(), end + chunk);
      part = ParseHttpRequestHead(std::string_view(bytes).substr(0, end), limit, &scan);
      if (part.status != HttpHeadStatus::kNeedMore) break;
    }
    if (bytes.empty()) part = ParseHttpRequestHead(bytes, limit, &scan);
    // Once final, the answer stays the same however much more arrives.
    const HttpRequestHead again = ParseHttpRequestHead(bytes, limit, &scan);
    EXPECT_EQ(Name(part.status), Name(whole.status)) << "chunks of " << chunk;
    EXPECT_EQ(Name(again.status), Name(whole.status)) << "chunks of " << chunk;
    EXPECT_EQ(part.head_bytes, whole.head_bytes) << "chunks of " << chunk;
    EXPECT_EQ(part.method, whole.method) << "chunks of " << chunk;
    EXPECT_EQ(part.target, whole.target) << "chunks of " << chunk;
  }
  return whole;
}

TEST(HttpRequestHeadTest, CompleteHeads) {
  struct Case {
    std::string bytes;
    std::string method;
    std::string target;
  };
  const std::vector<Case> cases = {
      {"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "GET", "/metrics"},
      {"HEAD /metrics HTTP/1.0\r\n\r\n", "HEAD", "/metrics"},
      {"GET /metrics?name[]=up&x=%20 HTTP/1.1\nHost: 127.0.0.1:9100\nAccept: */*\n\n", "GET",
       "/metrics?name[]=up&x=%20"},
      {"POST /other HTTP/1.1\r\nContent-Length: 0\r\nX-Empty:\r\nX-Tab:\ta\tb\r\n\r\n", "POST",
       "/other"},
      {"GET * HTTP/1.1\r\n\n", "GET", "*"},
      {"ABCDEFGHIJKLMNOP / HTTP/1.1\r\n\r\n", "ABCDEFGHIJKLMNOP", "/"},   // 16: the longest
      {"GET /\xc3\xa9 HTTP/1.1\r\nX: \xff\r\n\r\n", "GET", "/\xc3\xa9"},  // bytes over 0x7f
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.bytes);
    const HttpRequestHead head = ParseEveryWay(c.bytes);
    ASSERT_EQ(Name(head.status), Name(HttpHeadStatus::kComplete)) << head.error;
    EXPECT_EQ(head.method, c.method);
    EXPECT_EQ(head.target, c.target);
    EXPECT_EQ(head.head_bytes, c.bytes.size());
  }
}

TEST(HttpRequestHeadTest, WhatFollowsTheHeadIsNotLookedAt) {
  const std::string head = "GET /metrics HTTP/1.1\r\n\r\n";
  const HttpRequestHead parsed = ParseEveryWay(head + "\x01garbage" + std::string(20000, 'x'));
  ASSERT_EQ(Name(parsed.status), Name(HttpHeadStatus::kComplete));
  EXPECT_EQ(parsed.head_bytes, head.size());
}

TEST(HttpRequestHeadTest, IncompleteHeadsNeedMore) {
  for (const std::string bytes :
       {"", "G", "GET", "GET ", "GET /met", "GET /metrics ", "GET /metrics HTTP/1.",
        "GET /metrics HTTP/1.1", "GET /metrics HTTP/1.1\r", "GET /metrics HTTP/1.1\r\n",
        "GET / HTTP/1.1\r\nHost", "GET / HTTP/1.1\r\nHost: x", "GET / HTTP/1.1\r\nHost: x\r",
        "GET / HTTP/1.1\r\nHost: x\r\n", "GET / HTTP/1.1\r\nHost: x\r\n\r"}) {
    SCOPED_TRACE(bytes);
    EXPECT_EQ(Name(ParseEveryWay(bytes).status), Name(HttpHeadStatus::kNeedMore));
  }
}

TEST(HttpRequestHeadTest, BadRequestsAreToldAtTheirFirstWrongByte) {
  const std::vector<std::string> bad = {
      std::string("\x16\x03\x01\x00\xa5\x01", 6),            // a TLS client hello
      "get /metrics HTTP/1.1\r\n\r\n",                       // lower-case method
      " GET / HTTP/1.1\r\n\r\n",                             // no method
      "ABCDEFGHIJKLMNOPQ / HTTP/1.1\r\n\r\n",                // 17-byte method
      "GET  / HTTP/1.1\r\n\r\n",                             // empty target
      "GET /a b HTTP/1.1\r\n\r\n",                           // a space in the target
      "GET /a\tb HTTP/1.1\r\n\r\n",                          // a control character in the target
      "GET /metrics\r\n\r\n",                                // HTTP/0.9
      "GET /metrics SPDY/3\r\n\r\n",                         // another protocol
      "GET /metrics HTTP/2.0\r\n\r\n",                       // another version
      "GET /metrics HTTP/1.12\r\n\r\n",                      // a longer version
      "GET /metrics HTTP/1.1 \r\n\r\n",                      // a third space
      "GET /metrics HTTP/1.1\rX\n\r\n",                      // CR not before LF
      "GET / HTTP/1.1\r\nNo colon\r\n\r\n",                  // header without a colon
      "GET / HTTP/1.1\r\n: empty name\r\n\r\n",              // empty header name
      "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",               // space in a header name
      "GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",        // obsolete line folding
      "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",                   // CR inside a value
      std::string("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 26),  // NUL inside a value
      "GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n",                  // DEL inside a value
      "GET / HTTP/1.1\r\n\rX",                               // CR that does not end the head
  };
  for (const std::string& bytes : bad) {
    SCOPED_TRACE(bytes);
    const HttpRequestHead head = ParseEveryWay(bytes);
    EXPECT_EQ(Name(head.status), Name(HttpHeadStatus::kBadRequest));
    EXPECT_NE(std::string(head.error), "");
  }
  // Told before the line ends.
  EXPECT_EQ(Name(ParseEveryWay("HELLO THERE").status), Name(HttpHeadStatus::kNeedMore));
  EXPECT_EQ(Name(ParseEveryWay("HELLO THERE ").status), Name(HttpHeadStatus::kNeedMore));
  EXPECT_EQ(Name(ParseEveryWay("HELLO THERE X").status), Name(HttpHeadStatus::kBadRequest));
  EXPECT_EQ(Name(ParseEveryWay("GET /metrics HTTP/1.1\r\nX-Bad\x01").status),
            Name(HttpHeadStatus::kBadRequest));
}

// A head of many short header lines, `total` bytes long in all.
std::string HeadOfBytes(size_t total) {
  std::string head = "GET /metrics HTTP/1.1\r\n";
  while (head.size() + 2 < total) {
    const size_t line = std::min<size_t>(100, total - 2 - head.size());
    if (line < 5) {  // too short for "X: \r\n": pad the target instead
      head.insert(5, line, 'm');
      break;
    }
    head += "X: " + std::string(line - 5, 'a') + "\r\n";
  }
  return head + "\r\n";
}

TEST(HttpRequestHeadTest, TheSizeLimitHoldsForHeadsInOneReadOrMany) {
  // 16,000 bytes of short header lines in one buffer: too large, not served.
  const std::string big = HeadOfBytes(16000);
  ASSERT_EQ(big.size(), 16000u);
  EXPECT_EQ(Name(ParseEveryWay(big).status), Name(HttpHeadStatus::kTooLarge));

  // Exactly at the limit: complete; one byte more: too large.
  const std::string at = HeadOfBytes(kLimit);
  ASSERT_EQ(at.size(), kLimit);
  const HttpRequestHead fits = ParseEveryWay(at);
  EXPECT_EQ(Name(fits.status), Name(HttpHeadStatus::kComplete)) << fits.error;
  EXPECT_EQ(fits.head_bytes, kLimit);
  const std::string over = HeadOfBytes(kLimit + 1);
  ASSERT_EQ(over.size(), kLimit + 1);
  EXPECT_EQ(Name(ParseEveryWay(over).status), Name(HttpHeadStatus::kTooLarge));
  // Until the byte past the limit arrives, the head may still end in time.
  EXPECT_EQ(Name(ParseEveryWay(over.substr(0, kLimit)).status), Name(HttpHeadStatus::kNeedMore));

  // One long request line or header line without its end.
  EXPECT_EQ(Name(ParseEveryWay("GET /" + std::string(kLimit, 'a')).status),
            Name(HttpHeadStatus::kTooLarge));
  EXPECT_EQ(Name(ParseEveryWay("GET / HTTP/1.1\r\nX-Filler: " + std::string(9000, 'a')).status),
            Name(HttpHeadStatus::kTooLarge));

  // A wrong byte within the limit is a bad request, however much follows; past it, the size
  // is what is wrong.
  EXPECT_EQ(Name(ParseEveryWay("GET / HTTP/1.1\r\nBad Name" + std::string(20000, 'a')).status),
            Name(HttpHeadStatus::kBadRequest));
  EXPECT_EQ(Name(ParseEveryWay(HeadOfBytes(kLimit + 1) + "\x01").status),
            Name(HttpHeadStatus::kTooLarge));
  // Small limits work alike.
  EXPECT_EQ(Name(ParseEveryWay("GET / HTTP/1.1\r\n\r\n", 18).status),
            Name(HttpHeadStatus::kComplete));
  EXPECT_EQ(Name(ParseEveryWay("GET / HTTP/1.1\r\n\r\n", 17).status),
            Name(HttpHeadStatus::kTooLarge));
  EXPECT_EQ(Name(ParseEveryWay("G", 0).status), Name(HttpHeadStatus::kTooLarge));
}

}  // namespace
}  // namespace chord
