// A tiny HTTP/1.1 client for the multi-process tests of chord-node's HTTP listeners
// (--http-listen, --metrics-listen), over raw loopback sockets so that the tests see exactly
// what the server sends: the status line, the headers, the body (Content-Length or chunked,
// decoded here), and whether and when the server closes the connection. Requests built here
// say `Connection: close` (the server keeps connections alive otherwise). SseStream reads a
// text/event-stream answer event by event (`event:`, `data:`, `id:` lines, blank-line
// separated) with poll, up to a count of events or a deadline. Every wait is bounded. Not
// thread-safe: one object per thread.
#ifndef CHORD_TESTS_INTEGRATION_HTTP_TEST_CLIENT_H_
#define CHORD_TESTS_INTEGRATION_HTTP_TEST_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chord::testing {

using std::chrono::milliseconds;

// Sends all of `data` on `fd` (MSG_NOSIGNAL); false once the peer has gone.
bool SendAll(int fd, const std::string& data);

struct ReadOutcome {
  std::string data;
  bool closed = false;  // end of stream or reset seen
  bool timed_out = false;
};

// Reads until the server closes the connection or `timeout` passes.
ReadOutcome ReadUntilClosed(int fd, milliseconds timeout);

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;                            // decoded when it came in chunks
  bool closed = false;  // the server closed the connection after (or instead of) the answer
  std::string error;    // why there is no (complete) response; empty when there is one

  // The value of header `name` (lower case), or "" without one.
  std::string Header(const std::string& name) const;
};

// Sends `raw` (a whole request, as bytes) to 127.0.0.1:port and reads one response: until it
// is complete by its framing (Content-Length, chunks, nothing for HEAD / 204 / 304), or, without
// framing, until the server closes. Then waits up to `close_wait` for the server to close the
// connection (sets `closed`; a request that said `Connection: close` should see it).
HttpResponse HttpExchange(int port, const std::string& raw,
                          milliseconds timeout = milliseconds(15000),
                          milliseconds close_wait = milliseconds(2000));

using HttpHeaderList = std::vector<std::pair<std::string, std::string>>;

// A request to 127.0.0.1:port with Host, Connection: close, Content-Length (when there is a
// body or the method is PUT/POST) and `headers`; `target` is sent as given (percent-encode
// it yourself).
HttpResponse HttpCall(int port, const std::string& method, const std::string& target,
                      const std::string& body = "", const HttpHeaderList& headers = {},
                      milliseconds timeout = milliseconds(15000));
inline HttpResponse HttpGet(int port, const std::string& target,
                            const HttpHeaderList& headers = {}) {
  return HttpCall(port, "GET", target, "", headers);
}

// Every byte of `text` outside A-Z a-z 0-9 - . _ ~ written %XX ('/' too).
std::string PercentEncode(std::string_view text);

// One server-sent event.
struct SseEvent {
  std::string event = "message";  // the `event:` field, "message" without one
  std::string data;               // `data:` lines joined with '\n'
  std::string id;                 // the `id:` field, "" without one
  bool has_id = false;
};

// A GET of a text/event-stream path, read with poll.
class SseStream {
 public:
  SseStream() = default;
  ~SseStream();
  SseStream(const SseStream&) = delete;
  SseStream& operator=(const SseStream&) = delete;

  // Connects, sends the GET (Accept: text/event-stream, plus `headers`) and reads the
  // response head (at most `timeout`). False, with the reason in error(), unless the answer
  // is 200 with Content-Type text/event-stream; status() and head_body() tell what came.
  bool Open(int port, const std::string& target, const HttpHeaderList& headers = {},
            milliseconds timeout = milliseconds(10000));
  // Reads until at least `count` events have arrived in all (events() counts from the start)
  // or `timeout` passes or the stream ends. Returns whether `count` were reached.
  bool WaitForCount(size_t count, milliseconds timeout);
  // Reads until an event satisfying `match` has arrived after index `from` (or `timeout`
  // passes or the stream ends). Its index in events(), or -1.
  int WaitFor(const std::function<bool(const SseEvent&)>& match, milliseconds timeout,
              size_t from = 0);
  // Reads whatever arrives within `timeout` (for checking that nothing more came).
  void ReadFor(milliseconds timeout);

  const std::vector<SseEvent>& events() const { return events_; }
  int status() const { return status_; }
  const std::map<std::string, std::string>& headers() const { return headers_; }
  const std::string& head_body() const { return head_body_; }
  bool ended() const { return ended_; }  // the server ended the stream or closed
  const std::string& error() const { return error_; }
  int fd() const { return fd_; }
  void Close();

 private:
  // One poll/recv of at most `timeout`; false once the stream has ended.
  bool ReadSome(milliseconds timeout);
  // Turns what has arrived into body text and events.
  void Parse();

  int fd_ = -1;
  int status_ = 0;
  std::map<std::string, std::string> headers_;
  std::string head_body_;  // a non-stream answer's body (an error), for failure messages
  bool chunked_ = false;
  std::string raw_;   // received and not yet decoded (chunked framing)
  std::string text_;  // decoded body not yet split into events
  std::vector<SseEvent> events_;
  SseEvent pending_;
  bool pending_has_data_ = false;
  bool ended_ = false;
  std::string error_;
};

}  // namespace chord::testing

#endif  // CHORD_TESTS_INTEGRATION_HTTP_TEST_CLIENT_H_
