// MetricsServer (node/runtime/metrics_server.h) on a libuv loop of its own thread, spoken to
// over 127.0.0.x sockets: a scrape is answered; a request head over the limit is answered 431
// and closed even when all of it arrives in one read; one source host cannot hold more than its
// share of connections, so other hosts are still served; a head that does not arrive in time
// has its connection closed without an answer.
#include "node/runtime/metrics_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace chord {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr char kBody[] = "chord_up 1\n";

// A MetricsServer on 127.0.0.1 whose loop runs on a thread of its own from construction to
// destruction.
class ServerThread {
 public:
  explicit ServerThread(MetricsServer::Options options) {
    uv_loop_init(&loop_);
    server_ = std::make_unique<MetricsServer>(
        &loop_, [] { return std::string(kBody); }, options);
    for (int attempt = 0; attempt < 10 && port_ == 0; ++attempt) {
      const int port = FreePort();
      sockaddr_in addr{};
      uv_ip4_addr("127.0.0.1", port, &addr);
      if (server_->Listen(addr, "127.0.0.1:" + std::to_string(port)).ok()) port_ = port;
    }
    uv_async_init(&loop_, &stop_, [](uv_async_t* async) {
      static_cast<ServerThread*>(async->data)->server_->Close();
      uv_close(reinterpret_cast<uv_handle_t*>(async), nullptr);
    });
    stop_.data = this;
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }
  ~ServerThread() {
    uv_async_send(&stop_);
    thread_.join();
    server_.reset();
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }
  ServerThread(const ServerThread&) = delete;
  ServerThread& operator=(const ServerThread&) = delete;

  int port() const { return port_; }

 private:
  static int FreePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    ::close(fd);
    return port;
  }

  uv_loop_t loop_;
  uv_async_t stop_;
  std::unique_ptr<MetricsServer> server_;
  int port_ = 0;
  std::thread thread_;
};

// A connection to 127.0.0.1:port from `source` (any 127.0.0.0/8 address); -1 on failure.
int Connect(int port, const char* source = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&from), sizeof(from)) != 0 ||
      ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

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

struct Received {
  std::string data;
  bool closed = false;  // end of stream or reset before the timeout
};

// Reads until the server closes the connection or `timeout` passes.
Received ReadUntilClosed(int fd, milliseconds timeout) {
  Received out;
  const auto deadline = SteadyClock::now() + timeout;
  char buf[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) return out;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      out.closed = true;
      return out;
    }
    out.data.append(buf, static_cast<size_t>(n));
  }
}

// Sends `request` from `source` and returns what the server answered before closing.
Received Exchange(int port, const std::string& request, const char* source = "127.0.0.1") {
  Received out;
  const int fd = Connect(port, source);
  if (fd < 0) return out;
  if (SendAll(fd, request)) {
    out = ReadUntilClosed(fd, milliseconds(5000));
  } else {
    out.closed = true;  // closed by the server before the request was taken
  }
  ::close(fd);
  return out;
}

const std::string kScrape = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";

MetricsServer::Options TestOptions() {
  MetricsServer::Options o;
  o.max_connections_per_host = 3;
  o.max_connections = 6;
  return o;
}

TEST(MetricsServerTest, AnswersAScrape) {
  ServerThread s(TestOptions());
  ASSERT_NE(s.port(), 0);
  const Received r = Exchange(s.port(), kScrape);
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.data.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r.data;
  EXPECT_NE(r.data.find("\r\n\r\nchord_up 1\n"), std::string::npos) << r.data;
}

TEST(MetricsServerTest, OversizedHeadsAre431EvenInOneRead) {
  ServerThread s(TestOptions());
  ASSERT_NE(s.port(), 0);
  // 16,000 bytes of short header lines, complete, in one write (one read on loopback): the
  // limit of 8 KiB holds although no line is long and the head ends.
  std::string head = "GET /metrics HTTP/1.1\r\n";
  while (head.size() < 16000 - 2 - 100) head += "X-Filler: " + std::string(88, 'a') + "\r\n";
  head += "\r\n";
  const Received big = Exchange(s.port(), head);
  EXPECT_TRUE(big.closed);
  EXPECT_EQ(big.data.rfind("HTTP/1.1 431 Request Header Fields Too Large\r\n", 0), 0u)
      << big.data.substr(0, 200);
  EXPECT_NE(big.data.find("Connection: close\r\n"), std::string::npos);

  // A head that never ends, in many writes.
  const int fd = Connect(s.port());
  ASSERT_GE(fd, 0);
  SendAll(fd, "GET /metrics HTTP/1.1\r\n");
  for (int i = 0; i < 100; ++i) {
    if (!SendAll(fd, "X-Filler: " + std::string(88, 'b') + "\r\n")) break;
  }
  const Received slow = ReadUntilClosed(fd, milliseconds(5000));
  ::close(fd);
  EXPECT_TRUE(slow.closed);
  EXPECT_EQ(slow.data.rfind("HTTP/1.1 431 ", 0), 0u) << slow.data.substr(0, 200);

  // Garbage is still closed without an answer, and scrapes are served.
  const Received garbage = Exchange(s.port(), "HELLO THERE\r\n\r\n");
  EXPECT_TRUE(garbage.closed);
  EXPECT_EQ(garbage.data, "");
  EXPECT_EQ(Exchange(s.port(), kScrape).data.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
}

TEST(MetricsServerTest, OneHostCannotTakeTheConnectionsOfOthers) {
  ServerThread s(TestOptions());
  ASSERT_NE(s.port(), 0);
  // 127.0.0.2 opens connections and sends nothing: it gets three, the fourth is closed at once.
  std::vector<int> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(Connect(s.port(), "127.0.0.2"));
    ASSERT_GE(idle.back(), 0);
  }
  const int refused = Connect(s.port(), "127.0.0.2");
  ASSERT_GE(refused, 0);
  const Received r = ReadUntilClosed(refused, milliseconds(2000));
  ::close(refused);
  EXPECT_TRUE(r.closed) << "the fourth connection of one host was kept";
  EXPECT_EQ(r.data, "");

  // Meanwhile other hosts are served.
  EXPECT_EQ(Exchange(s.port(), kScrape, "127.0.0.3").data.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(Exchange(s.port(), kScrape, "127.0.0.1").data.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);

  // Once one of its connections is closed, the host may open another.
  ::close(idle.back());
  idle.pop_back();
  bool served = false;
  for (int attempt = 0; attempt < 50 && !served; ++attempt) {
    served = Exchange(s.port(), kScrape, "127.0.0.2").data.rfind("HTTP/1.1 200 OK\r\n", 0) == 0;
    if (!served) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(served);
  for (int fd : idle) ::close(fd);
}

TEST(MetricsServerTest, TheTotalCapStillHolds) {
  ServerThread s(TestOptions());
  ASSERT_NE(s.port(), 0);
  std::vector<int> idle;
  for (const char* host : {"127.0.0.2", "127.0.0.3"}) {
    for (int i = 0; i < 3; ++i) {
      idle.push_back(Connect(s.port(), host));
      ASSERT_GE(idle.back(), 0);
    }
  }
  const Received r = Exchange(s.port(), kScrape, "127.0.0.4");
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.data, "") << "a seventh connection was served with a cap of six";
  for (int fd : idle) ::close(fd);
}

TEST(MetricsServerTest, AHeadThatDoesNotArriveInTimeIsClosed) {
  MetricsServer::Options options = TestOptions();
  options.head_timeout_ms = 200;
  ServerThread s(options);
  ASSERT_NE(s.port(), 0);
  const int fd = Connect(s.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "GET /metr"));
  const auto start = SteadyClock::now();
  const Received r = ReadUntilClosed(fd, milliseconds(5000));
  const auto waited = std::chrono::duration_cast<milliseconds>(SteadyClock::now() - start);
  ::close(fd);
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.data, "");
  EXPECT_LT(waited.count(), 2000);
  // A prompt scrape is still answered in full.
  EXPECT_EQ(Exchange(s.port(), kScrape).data.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
}

}  // namespace
}  // namespace chord
