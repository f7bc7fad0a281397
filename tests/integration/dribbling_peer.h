// DribblingPeer: a stand-in for a peer a node dials (a join address, a member's address) on
// 127.0.0.1 that never finishes what it starts sending: for each connection, one at a time,
// it waits for the node's first bytes, sends `opening` (the head of a frame, or of a TLS
// handshake record) and then one byte every 100 ms. It counts the connections it accepted
// and those the node closed. For tests of the node's deadlines on connections it dialed.
// Serves for 30 s at most; stopped and joined when it goes out of scope.
#ifndef CHORD_TESTS_INTEGRATION_DRIBBLING_PEER_H_
#define CHORD_TESTS_INTEGRATION_DRIBBLING_PEER_H_

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "tests/integration/loopback_listener.h"

namespace chord::testing {

class DribblingPeer {
 public:
  explicit DribblingPeer(std::string opening) : opening_(std::move(opening)) {
    fd_ = ListenOnLoopback(&port_);
    if (fd_ >= 0) thread_ = std::thread([this] { Serve(); });
  }
  ~DribblingPeer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  DribblingPeer(const DribblingPeer&) = delete;
  DribblingPeer& operator=(const DribblingPeer&) = delete;

  int port() const { return port_; }  // 0: could not listen
  int accepted() const { return accepted_; }
  int closed_by_node() const { return closed_by_node_; }

 private:
  using Clock = std::chrono::steady_clock;

  void Serve() {
    const auto end = Clock::now() + std::chrono::seconds(30);
    while (!stop_ && Clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      ++accepted_;
      if (Dribble(conn, end)) ++closed_by_node_;
      ::close(conn);
    }
  }

  // True when the node closed `conn`; false when the test ended first.
  bool Dribble(int conn, Clock::time_point end) {
    bool opened = false;
    while (!stop_ && Clock::now() < end) {
      pollfd c{conn, POLLIN, 0};
      if (::poll(&c, 1, 100) > 0) {
        char buf[4096];
        if (::recv(conn, buf, sizeof(buf), 0) <= 0) return true;  // EOF or reset
        if (!opened) {
          opened = true;
          if (Send(conn, opening_)) continue;
          return true;
        }
      }
      if (opened && !Send(conn, "y")) return true;
    }
    return false;
  }

  static bool Send(int conn, const std::string& bytes) {
    return ::send(conn, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }

  const std::string opening_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::atomic<int> closed_by_node_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace chord::testing

#endif  // CHORD_TESTS_INTEGRATION_DRIBBLING_PEER_H_
