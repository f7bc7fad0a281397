// ParseHttpRequestHead: the parser of an HTTP/1.x request head as MetricsServer reads it: the
// request line "METHOD SP TARGET SP HTTP/1.x", then header lines "Name: value", each ended by
// LF or CRLF, up to the blank line that ends the head. It tells a head that can no longer
// become valid as soon as its first wrong byte is there, and one longer than the size limit
// however it arrived (in one read or in many), so that the answer never depends on how the
// bytes were split. Pure functions, no I/O; any thread. MetricsServer, its tests and
// fuzz/metrics_http_fuzz.cc call them.
#ifndef CHORD_NODE_RUNTIME_HTTP_REQUEST_HEAD_H_
#define CHORD_NODE_RUNTIME_HTTP_REQUEST_HEAD_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace chord {

// Longest accepted method name.
inline constexpr size_t kMaxHttpMethodBytes = 16;

enum class HttpHeadStatus {
  kNeedMore,    // valid so far; the blank line that ends the head has not arrived yet
  kComplete,    // a valid head of head_bytes bytes; what follows it is not looked at
  kBadRequest,  // not the head of an HTTP/1.x request: close without an answer
  kTooLarge,    // no valid end within max_head_bytes: answer 431 and close
};

struct HttpRequestHead {
  HttpHeadStatus status = HttpHeadStatus::kNeedMore;
  std::string_view method;  // kComplete: e.g. "GET"; a view into the parsed bytes
  std::string_view target;  // kComplete: e.g. "/metrics?name=x"; a view into the parsed bytes
  size_t head_bytes = 0;    // kComplete: the head, up to and including its blank line
  const char* error = "";   // kBadRequest, kTooLarge: what is wrong, for a log line
};

// Where a parse of a head that has arrived in part stopped, so that the next call over the
// same bytes grown by a read goes on from there instead of starting again. Start with a
// value-initialized one; treat as opaque.
struct HttpHeadScan {
  size_t scanned = 0;  // bytes consumed
  uint8_t state = 0;
  size_t part_bytes = 0;  // bytes of the current method, target, version or header name
  size_t method_bytes = 0;
  size_t target_bytes = 0;
  HttpHeadStatus status = HttpHeadStatus::kNeedMore;  // once final, returned again
  const char* error = "";
};

// Parses the head at the start of `bytes`: a head is too large when its blank line would end
// past max_head_bytes (a wrong byte within the limit makes it kBadRequest first). With `scan`,
// `bytes` must extend the bytes of the previous call with the same `scan` and limit; the result
// is the same as a call without it.
HttpRequestHead ParseHttpRequestHead(std::string_view bytes, size_t max_head_bytes,
                                     HttpHeadScan* scan = nullptr);

}  // namespace chord

#endif  // CHORD_NODE_RUNTIME_HTTP_REQUEST_HEAD_H_
