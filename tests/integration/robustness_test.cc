// Multi-process robustness test: hostile or idle TCP peers must not stop a chord-node from
// serving everyone else. Raw sockets speak to the node directly, bypassing the client.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/integration/cluster_fixture.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kIdleConnections = 200;

// A raw TCP connection to 127.0.0.1, closed on destruction.
class RawConnection {
 public:
  RawConnection() = default;
  ~RawConnection() { Close(); }
  RawConnection(RawConnection&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  RawConnection& operator=(RawConnection&&) = delete;
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // Connects, giving up after 5 s. False (with errno text in *error) on failure.
  bool Connect(int port, std::string* error) {
    Close();
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      *error = std::strerror(errno);
      return false;
    }
    timeval tv{5, 0};  // bounds connect() and send()
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
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
  void Send(const std::string& bytes) {
    size_t sent = 0;
    for (int guard = 0; sent < bytes.size() && guard < 100000; ++guard) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
      } else if (!(n < 0 && errno == EINTR)) {
        return;
      }
    }
  }

  // Whether the peer closes the connection (EOF or reset) within `timeout`. Any bytes it
  // sends first (e.g. an error response) are read and ignored.
  bool WaitClosedByPeer(milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    char buf[4096];
    for (int guard = 0; guard < 100000; ++guard) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
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

 private:
  int fd_ = -1;
};

std::string Header(uint32_t size) {
  return std::string{static_cast<char>(size >> 24), static_cast<char>(size >> 16),
                     static_cast<char>(size >> 8), static_cast<char>(size)};
}

class RobustnessTest : public ClusterTest {
 protected:
  // The target still answers put/get through ChordClient and chordctl, and is alive.
  void ExpectServes(NodeProcess* target, const std::string& step) {
    SCOPED_TRACE("after " + step);
    ASSERT_TRUE(target->IsRunning()) << "chord-node " << target->addr() << " died";
    const std::string key = "robust " + step;
    const std::string value = "value after " + step;
    ChordClient client(target->addr());
    auto put = client.Put(key, value);
    EXPECT_TRUE(IsOk(put)) << "put: " << Describe(put);
    auto get = client.Get(key);
    EXPECT_TRUE(IsOk(get)) << "get: " << Describe(get);
    if (IsOk(get)) {
      EXPECT_EQ(get->value(), value);
    }

    const CommandResult cput =
        cluster().Chordctl({"--node", target->addr(), "put", key + " (cli)", value});
    EXPECT_EQ(cput.exit_code, 0) << cput.err;
    const CommandResult cget =
        cluster().Chordctl({"--node", target->addr(), "get", key + " (cli)"});
    EXPECT_EQ(cget.exit_code, 0) << cget.err;
    EXPECT_EQ(cget.out, value + "\n");
    EXPECT_TRUE(target->IsRunning()) << "chord-node " << target->addr() << " died";
  }
};

TEST_F(RobustnessTest, HostileAndIdleConnectionsDoNotStopTheNode) {
  ASSERT_TRUE(cluster().StartNodes(3, FastNodes()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  NodeProcess* target = cluster().nodes()[1];
  std::string error;

  // (1) Random bytes.
  {
    std::mt19937 rng(20240229);
    std::string noise(64 * 1024, '\0');
    for (char& c : noise) c = static_cast<char>(rng());
    RawConnection conn;
    ASSERT_TRUE(conn.Connect(target->port(), &error)) << error;
    conn.Send(noise);
    ExpectServes(target, "random bytes");
  }

  // (2) A frame header claiming 4 GiB - 1: closed at once, without waiting for the payload.
  {
    RawConnection conn;
    ASSERT_TRUE(conn.Connect(target->port(), &error)) << error;
    conn.Send(Header(0xFFFFFFFFu));
    EXPECT_TRUE(conn.WaitClosedByPeer(milliseconds(5000)))
        << "the node kept a connection whose frame claims 4 GiB";
    ExpectServes(target, "a 4 GiB frame header");
  }

  // (3) A valid length with a payload that is not an Envelope, and an Envelope with no body.
  {
    RawConnection conn;
    ASSERT_TRUE(conn.Connect(target->port(), &error)) << error;
    conn.Send(Header(32) + std::string(32, '\xff'));
    EXPECT_TRUE(conn.WaitClosedByPeer(milliseconds(5000)))
        << "the node kept a connection that sent a garbage payload";
    ExpectServes(target, "a garbage payload");
  }
  {
    RawConnection conn;
    ASSERT_TRUE(conn.Connect(target->port(), &error)) << error;
    conn.Send(Header(2) + std::string("\x08\x01", 2));  // request_id = 1, no body
    EXPECT_TRUE(conn.WaitClosedByPeer(milliseconds(5000)))
        << "the node kept a connection that sent an envelope without a body";
    ExpectServes(target, "an envelope without a body");
  }

  // (4) Many idle connections, half of them stuck in the middle of a frame header.
  {
    std::vector<RawConnection> idle;
    idle.reserve(kIdleConnections);
    for (int i = 0; i < kIdleConnections; ++i) {
      RawConnection conn;
      ASSERT_TRUE(conn.Connect(target->port(), &error)) << "connection " << i << ": " << error;
      if (i % 2 == 1) conn.Send(std::string("\x00\x00", 2));
      idle.push_back(std::move(conn));
    }
    ExpectServes(target, std::to_string(kIdleConnections) + " idle connections");
    // The ring around it keeps working too.
    std::string why;
    EXPECT_TRUE(ChordctlRingMatches(cluster(), target->addr(), addrs, &why)) << why;
    EXPECT_TRUE(PointersMatch(addrs, &why)) << why;
  }  // all idle connections closed here
  ExpectServes(target, "closing the idle connections");
  for (NodeProcess* node : cluster().nodes()) {
    EXPECT_TRUE(node->IsRunning()) << node->addr() << " died";
  }
}

}  // namespace
}  // namespace chord::testing
