// RawConnection: a blocking TCP connection to a node on 127.0.0.0/8 that speaks bytes, not the
// client protocol, for tests that play a hostile or broken peer (garbage, huge frame headers,
// frames sent slowly, many connections from one source address). Closed on destruction. One
// thread.
#ifndef CHORD_TESTS_INTEGRATION_RAW_CONNECTION_H_
#define CHORD_TESTS_INTEGRATION_RAW_CONNECTION_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "protocol/frame.h"
#include "protocol/messages.h"

namespace chord::testing {

class RawConnection {
 public:
  RawConnection() = default;
  ~RawConnection() { Close(); }
  RawConnection(RawConnection&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  RawConnection& operator=(RawConnection&&) = delete;
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // Connects to 127.0.0.1:port from `source` (an address of 127.0.0.0/8; empty: the
  // kernel's choice), giving up after 5 s. False (with errno text in *error) on failure.
  bool Connect(int port, std::string* error, const std::string& source = "") {
    Close();
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      *error = std::strerror(errno);
      return false;
    }
    timeval tv{5, 0};  // bounds connect() and send()
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (!source.empty()) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      if (::inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 ||
          ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
        *error = "cannot bind to " + source + ": " + std::strerror(errno);
        Close();
        return false;
      }
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      *error = std::strerror(errno);
      Close();
      return false;
    }
    return true;
  }

  // Sends as much of `bytes` as the peer takes; errors (the node may close early) end it.
  // Returns the bytes sent.
  size_t Send(const std::string& bytes) {
    size_t sent = 0;
    for (int guard = 0; sent < bytes.size() && guard < 100000; ++guard) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
      } else if (!(n < 0 && errno == EINTR)) {
        break;
      }
    }
    return sent;
  }

  // Whether the peer closes the connection (EOF or reset) within `timeout`. Any bytes it
  // sends first (e.g. an error response) are read and ignored.
  bool WaitClosedByPeer(std::chrono::milliseconds timeout) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + timeout;
    char buf[4096];
    for (int guard = 0; guard < 100000; ++guard) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd pfd{fd_, POLLIN, 0};
      const int ready = ::poll(&pfd, 1, static_cast<int>(left));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return false;
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0 && errno != EINTR && errno != EAGAIN) return true;  // reset
    }
    return false;
  }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// Two framed requests, a get of `key` (request id 1) and a status request (id 2), as one
// string to send; empty if they cannot be framed.
inline std::string GetAndStatusFrames(const std::string& key) {
  wire::Envelope get = msg::Get(key);
  get.set_request_id(1);
  wire::Envelope status;
  status.mutable_status();
  status.set_request_id(2);
  std::string frames;
  if (!EncodeFrame(get, &frames) || !EncodeFrame(status, &frames)) return "";
  return frames;
}

// What a node answered to GetAndStatusFrames, by request id, read with `read(buf, size)` until
// the node closes the connection (`read` returns 0) or a read fails or times out (below 0);
// *closed says whether the node closed it. At most 1,000 reads.
template <typename Read>
std::map<uint64_t, wire::Envelope> RepliesUntilClosed(Read&& read, bool* closed) {
  FrameDecoder decoder;
  wire::Envelope reply;
  std::map<uint64_t, wire::Envelope> replies;
  *closed = false;
  char buf[16384];
  for (int guard = 0; guard < 1000; ++guard) {
    const long n = read(buf, sizeof(buf));
    if (n <= 0) {
      *closed = n == 0;
      break;
    }
    decoder.Feed(std::string_view(buf, static_cast<size_t>(n)));
    while (decoder.Next(&reply) == FrameDecoder::Result::kFrame) {
      replies[reply.request_id()] = reply;
    }
  }
  return replies;
}

// The 4-byte big-endian length prefix of a frame of `size` bytes.
inline std::string FrameHeader(uint32_t size) {
  return std::string{static_cast<char>(size >> 24), static_cast<char>(size >> 16),
                     static_cast<char>(size >> 8), static_cast<char>(size)};
}

}  // namespace chord::testing

#endif  // CHORD_TESTS_INTEGRATION_RAW_CONNECTION_H_
