#include "node/runtime/http_request_head.h"

namespace chord {

namespace {

// Where in the head the next byte goes. Every byte is looked at once, in order.
enum State : uint8_t {
  kMethod,         // request line: the method, upper-case letters
  kTarget,         // after the first space: the request target
  kVersion,        // after the second space: "HTTP/1.0" or "HTTP/1.1"
  kRequestLineCr,  // a CR ended the version; only LF may follow
  kLineStart,      // the first byte of a header line, or of the blank line
  kName,           // a header name, up to its colon
  kValue,          // a header value, up to the line end
  kLineCr,         // a CR ended a header value; only LF may follow
  kBlankCr,        // a CR began the blank line; only LF may follow
};

constexpr std::string_view kVersionPrefix = "HTTP/1.";

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }

bool IsTokenChar(char c) {
  if (IsUpper(c)) return true;
  if (c >= 'a' && c <= 'z') return true;
  if (c >= '0' && c <= '9') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

// Consumes one byte. Returns kBadRequest (with *error), kComplete after the LF of the blank
// line, else kNeedMore.
HttpHeadStatus Step(HttpHeadScan* s, char c, const char** error) {
  switch (static_cast<State>(s->state)) {
    case kMethod:
      if (c == ' ' && s->part_bytes > 0) {
        s->method_bytes = s->part_bytes;
        s->part_bytes = 0;
        s->state = kTarget;
        return HttpHeadStatus::kNeedMore;
      }
      if (!IsUpper(c)) {
        *error = "the request does not start with an upper-case method and a space";
        return HttpHeadStatus::kBadRequest;
      }
      if (++s->part_bytes > kMaxHttpMethodBytes) {
        *error = "the method is too long";
        return HttpHeadStatus::kBadRequest;
      }
      return HttpHeadStatus::kNeedMore;
    case kTarget:
      if (c == ' ' && s->part_bytes > 0) {
        s->target_bytes = s->part_bytes;
        s->part_bytes = 0;
        s->state = kVersion;
        return HttpHeadStatus::kNeedMore;
      }
      if (c == ' ' || IsControl(c)) {
        *error = "the request target is empty or holds a control character";
        return HttpHeadStatus::kBadRequest;
      }
      ++s->part_bytes;
      return HttpHeadStatus::kNeedMore;
    case kVersion:
      if (s->part_bytes < kVersionPrefix.size()) {
        if (c != kVersionPrefix[s->part_bytes]) break;
        ++s->part_bytes;
        return HttpHeadStatus::kNeedMore;
      }
      if (s->part_bytes == kVersionPrefix.size()) {
        if (c != '0' && c != '1') break;
        ++s->part_bytes;
        return HttpHeadStatus::kNeedMore;
      }
      if (c == '\r') {
        s->state = kRequestLineCr;
        return HttpHeadStatus::kNeedMore;
      }
      if (c == '\n') {
        s->state = kLineStart;
        return HttpHeadStatus::kNeedMore;
      }
      break;
    case kRequestLineCr:
    case kLineCr:
      if (c != '\n') {
        *error = "a line holds a CR that is not followed by LF";
        return HttpHeadStatus::kBadRequest;
      }
      s->state = kLineStart;
      return HttpHeadStatus::kNeedMore;
    case kLineStart:
      if (c == '\n') return HttpHeadStatus::kComplete;
      if (c == '\r') {
        s->state = kBlankCr;
        return HttpHeadStatus::kNeedMore;
      }
      if (!IsTokenChar(c)) {
        *error = "a header line does not start with a header name";
        return HttpHeadStatus::kBadRequest;
      }
      s->state = kName;
      return HttpHeadStatus::kNeedMore;
    case kName:
      if (c == ':') {
        s->state = kValue;
        return HttpHeadStatus::kNeedMore;
      }
      if (!IsTokenChar(c)) {
        *error = "a header name holds a character that is not allowed in one";
        return HttpHeadStatus::kBadRequest;
      }
      return HttpHeadStatus::kNeedMore;
    case kValue:
      if (c == '\r') {
        s->state = kLineCr;
        return HttpHeadStatus::kNeedMore;
      }
      if (c == '\n') {
        s->state = kLineStart;
        return HttpHeadStatus::kNeedMore;
      }
      if (IsControl(c) && c != '\t') {
        *error = "a header value holds a control character";
        return HttpHeadStatus::kBadRequest;
      }
      return HttpHeadStatus::kNeedMore;
    case kBlankCr:
      if (c != '\n') {
        *error = "a line holds a CR that is not followed by LF";
        return HttpHeadStatus::kBadRequest;
      }
      return HttpHeadStatus::kComplete;
  }
  *error = "the request line does not end in HTTP/1.0 or HTTP/1.1";
  return HttpHeadStatus::kBadRequest;
}

}  // namespace

HttpRequestHead ParseHttpRequestHead(std::string_view bytes, size_t max_head_bytes,
                                     HttpHeadScan* scan) {
  HttpHeadScan local;
  HttpHeadScan* s = scan != nullptr ? scan : &local;
  while (s->status == HttpHeadStatus::kNeedMore && s->scanned < bytes.size()) {
    if (s->scanned >= max_head_bytes) {
      s->status = HttpHeadStatus::kTooLarge;
      s->error = "the request head is larger than the limit";
      break;
    }
    s->status = Step(s, bytes[s->scanned], &s->error);
    if (s->status != HttpHeadStatus::kBadRequest) ++s->scanned;
  }
  HttpRequestHead head;
  head.status = s->status;
  head.error = s->error;
  if (head.status == HttpHeadStatus::kComplete) {
    head.head_bytes = s->scanned;
    head.method = bytes.substr(0, s->method_bytes);
    head.target = bytes.substr(s->method_bytes + 1, s->target_bytes);
  }
  return head;
}

}  // namespace chord
