#include "tests/integration/http_test_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>

#include "tests/integration/cluster_fixture.h"

namespace chord::testing {
namespace {

using Clock = std::chrono::steady_clock;

milliseconds Left(Clock::time_point deadline) {
  return std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One poll + recv of at most `timeout` on `fd`: appends to *data. 1 data came, 0 nothing
// within the time, -1 end of stream or error.
int RecvSome(int fd, milliseconds timeout, std::string* data) {
  pollfd p{fd, POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, timeout.count())));
  if (ready < 0) return errno == EINTR ? 0 : -1;
  if (ready == 0) return 0;
  char buf[16384];
  const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  if (n < 0) return errno == EINTR || errno == EAGAIN ? 0 : -1;
  if (n == 0) return -1;
  data->append(buf, static_cast<size_t>(n));
  return 1;
}

// A response head: the status and the headers, from the bytes before "\r\n\r\n".
struct Head {
  int status = 0;
  std::map<std::string, std::string> headers;
};

std::optional<Head> ParseHead(const std::string& head, std::string* error) {
  Head h;
  size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 ||
      !std::isdigit(static_cast<unsigned char>(status_line[9]))) {
    *error = "bad status line: " + status_line.substr(0, 200);
    return std::nullopt;
  }
  h.status = std::stoi(status_line.substr(9, 3));
  while (line_end != std::string::npos) {
    const size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string line =
        head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    size_t value_start = colon + 1;
    while (value_start < line.size() && line[value_start] == ' ') ++value_start;
    h.headers[Lower(line.substr(0, colon))] = line.substr(value_start);
  }
  return h;
}

// Takes the complete chunks at the front of *raw into *out. Sets *ended at the last chunk
// (and its trailer), *bad on a malformed size line.
void DecodeChunks(std::string* raw, std::string* out, bool* ended, bool* bad) {
  size_t pos = 0;
  while (!*ended && !*bad) {
    const size_t line_end = raw->find("\r\n", pos);
    if (line_end == std::string::npos) break;
    std::string size_text = raw->substr(pos, line_end - pos);
    size_text = size_text.substr(0, size_text.find(';'));
    size_t size = 0;
    if (size_text.empty()) {
      *bad = true;
      break;
    }
    for (char c : size_text) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) || size > (size_t{1} << 40)) {
        *bad = true;
        break;
      }
      size = size * 16 + static_cast<size_t>(std::isdigit(static_cast<unsigned char>(c))
                                                 ? c - '0'
                                                 : std::tolower(c) - 'a' + 10);
    }
    if (*bad) break;
    if (size == 0) {
      // Trailers (none expected) end with an empty line.
      const size_t end = raw->find("\r\n\r\n", line_end);
      if (end == std::string::npos) break;
      pos = end + 4;
      *ended = true;
      break;
    }
    if (raw->size() < line_end + 2 + size + 2) break;
    out->append(*raw, line_end + 2, size);
    pos = line_end + 2 + size + 2;
  }
  raw->erase(0, pos);
}

}  // namespace

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

ReadOutcome ReadUntilClosed(int fd, milliseconds timeout) {
  ReadOutcome out;
  const auto deadline = Clock::now() + timeout;
  while (true) {
    const milliseconds left = Left(deadline);
    if (left.count() <= 0) {
      out.timed_out = true;
      return out;
    }
    if (RecvSome(fd, left, &out.data) < 0) {
      out.closed = true;
      return out;
    }
  }
}

std::string HttpResponse::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

HttpResponse HttpExchange(int port, const std::string& raw, milliseconds timeout,
                          milliseconds close_wait) {
  HttpResponse r;
  const int fd = ConnectLoopback(port);
  if (fd < 0) {
    r.error = "cannot connect to port " + std::to_string(port) + ": " + std::strerror(errno);
    return r;
  }
  // A server may answer and close before it has read everything (a refused body): read
  // what it said even when the send fails part-way.
  const bool sent = SendAll(fd, raw);
  const bool head_request = raw.rfind("HEAD ", 0) == 0;
  const auto deadline = Clock::now() + timeout;
  std::string data;
  std::optional<Head> head;
  size_t body_start = 0;
  bool complete = false;
  while (!complete) {
    if (!head) {
      const size_t head_end = data.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        head = ParseHead(data.substr(0, head_end), &r.error);
        if (!head) break;
        body_start = head_end + 4;
        r.status = head->status;
        r.headers = head->headers;
      }
    }
    if (head) {
      const std::string te = Lower(r.Header("transfer-encoding"));
      const std::string length = r.Header("content-length");
      if (head_request || r.status == 204 || r.status == 304 || r.status / 100 == 1) {
        complete = true;
      } else if (te.find("chunked") != std::string::npos) {
        std::string rest = data.substr(body_start);
        std::string body;
        bool ended = false;
        bool bad = false;
        DecodeChunks(&rest, &body, &ended, &bad);
        if (bad) {
          r.error = "malformed chunked body";
          break;
        }
        if (ended) {
          r.body = std::move(body);
          complete = true;
        }
      } else if (!length.empty()) {
        const size_t want = std::stoull(length);
        if (data.size() - body_start >= want) {
          r.body = data.substr(body_start, want);
          complete = true;
        }
      }
      if (complete) break;
    }
    const milliseconds left = Left(deadline);
    if (left.count() <= 0) {
      r.error = head ? "the response body did not arrive in time"
                     : "no complete response head within the time; got: " + data.substr(0, 200);
      break;
    }
    if (RecvSome(fd, left, &data) < 0) {
      r.closed = true;
      if (!head) {
        r.error = data.empty() ? std::string(sent ? "" : "cannot send the request; ") +
                                     "the server closed the connection without an answer"
                               : "no complete response head in: " + data.substr(0, 200);
      } else if (r.Header("content-length").empty() &&
                 Lower(r.Header("transfer-encoding")).find("chunked") == std::string::npos) {
        r.body = data.substr(body_start);  // framed by the close
        complete = true;
      } else {
        r.error = "the server closed the connection before the whole body";
      }
      break;
    }
  }
  if (complete && !r.closed) {
    // Did the server close after its answer?
    const auto close_deadline = Clock::now() + close_wait;
    std::string extra;
    while (Left(close_deadline).count() > 0) {
      if (RecvSome(fd, Left(close_deadline), &extra) < 0) {
        r.closed = true;
        break;
      }
    }
  }
  ::close(fd);
  return r;
}

HttpResponse HttpCall(int port, const std::string& method, const std::string& target,
                      const std::string& body, const HttpHeaderList& headers,
                      milliseconds timeout) {
  std::string raw = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                    "\r\nUser-Agent: chord-test\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) raw += name + ": " + value + "\r\n";
  if (!body.empty() || method == "PUT" || method == "POST") {
    raw += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  raw += "\r\n" + body;
  return HttpExchange(port, raw, timeout);
}

std::string PercentEncode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// --- SseStream --------------------------------------------------------------------------

SseStream::~SseStream() { Close(); }

void SseStream::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool SseStream::Open(int port, const std::string& target, const HttpHeaderList& headers,
                     milliseconds timeout) {
  Close();
  fd_ = ConnectLoopback(port);
  if (fd_ < 0) {
    error_ = "cannot connect to port " + std::to_string(port) + ": " + std::strerror(errno);
    return false;
  }
  std::string raw = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                    "\r\nAccept: text/event-stream\r\nUser-Agent: chord-test\r\n";
  for (const auto& [name, value] : headers) raw += name + ": " + value + "\r\n";
  raw += "\r\n";
  if (!SendAll(fd_, raw)) {
    error_ = "cannot send the request";
    return false;
  }
  const auto deadline = Clock::now() + timeout;
  std::string data;
  size_t head_end = std::string::npos;
  while ((head_end = data.find("\r\n\r\n")) == std::string::npos) {
    const milliseconds left = Left(deadline);
    if (left.count() <= 0) {
      error_ = "no response head within the time; got: " + data.substr(0, 200);
      return false;
    }
    if (RecvSome(fd_, left, &data) < 0) {
      error_ =
          "the server closed the connection before a response head; got: " + data.substr(0, 200);
      return false;
    }
  }
  std::optional<Head> head = ParseHead(data.substr(0, head_end), &error_);
  if (!head) return false;
  status_ = head->status;
  headers_ = head->headers;
  raw_ = data.substr(head_end + 4);
  auto it = headers_.find("transfer-encoding");
  chunked_ = it != headers_.end() && Lower(it->second).find("chunked") != std::string::npos;
  it = headers_.find("content-type");
  const std::string type = it == headers_.end() ? "" : it->second;
  if (status_ != 200 || type.rfind("text/event-stream", 0) != 0) {
    // An error answer: keep its body (briefly) for the failure message.
    const auto body_deadline = Clock::now() + milliseconds(2000);
    while (Left(body_deadline).count() > 0 && RecvSome(fd_, Left(body_deadline), &raw_) >= 0) {
    }
    head_body_ = raw_;
    if (chunked_) {
      std::string rest = raw_;
      std::string body;
      bool ended = false;
      bool bad = false;
      DecodeChunks(&rest, &body, &ended, &bad);
      head_body_ = body;
    }
    error_ = "the answer is " + std::to_string(status_) + " " + type +
             ", not a 200 event stream: " + head_body_.substr(0, 300);
    return false;
  }
  Parse();
  return true;
}

bool SseStream::ReadSome(milliseconds timeout) {
  if (ended_ || fd_ < 0) return false;
  if (RecvSome(fd_, timeout, &raw_) < 0) {
    Parse();
    ended_ = true;
    return false;
  }
  Parse();
  return !ended_;
}

void SseStream::Parse() {
  if (chunked_) {
    bool bad = false;
    DecodeChunks(&raw_, &text_, &ended_, &bad);
    if (bad) {
      error_ = "malformed chunked stream";
      ended_ = true;
    }
  } else {
    text_ += raw_;
    raw_.clear();
  }
  // Whole lines only; a line ends with \n (a \r before it is dropped).
  size_t pos = 0;
  size_t nl;
  while ((nl = text_.find('\n', pos)) != std::string::npos) {
    std::string line = text_.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      // Dispatch (a block without data, like `retry:` alone, is no event).
      if (pending_has_data_) events_.push_back(pending_);
      pending_ = SseEvent{};
      pending_has_data_ = false;
      continue;
    }
    if (line[0] == ':') continue;  // a comment (keep-alive)
    const size_t colon = line.find(':');
    const std::string field = line.substr(0, colon);
    std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.erase(0, 1);
    if (field == "event") {
      pending_.event = value;
    } else if (field == "data") {
      if (pending_has_data_) pending_.data += "\n";
      pending_.data += value;
      pending_has_data_ = true;
    } else if (field == "id") {
      pending_.id = value;
      pending_.has_id = true;
    }
  }
  text_.erase(0, pos);
}

bool SseStream::WaitForCount(size_t count, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (events_.size() < count) {
    const milliseconds left = Left(deadline);
    if (left.count() <= 0 || !ReadSome(left)) break;
  }
  return events_.size() >= count;
}

int SseStream::WaitFor(const std::function<bool(const SseEvent&)>& match, milliseconds timeout,
                       size_t from) {
  const auto deadline = Clock::now() + timeout;
  size_t checked = from;
  while (true) {
    for (; checked < events_.size(); ++checked) {
      if (match(events_[checked])) return static_cast<int>(checked);
    }
    const milliseconds left = Left(deadline);
    if (left.count() <= 0) return -1;
    if (!ReadSome(left)) {
      for (; checked < events_.size(); ++checked) {
        if (match(events_[checked])) return static_cast<int>(checked);
      }
      return -1;
    }
  }
}

void SseStream::ReadFor(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Left(deadline).count() > 0 && ReadSome(Left(deadline))) {
  }
}

}  // namespace chord::testing
