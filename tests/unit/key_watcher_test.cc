// FollowKey (chordctl watch-key, the HTTP API's watches) against stand-ins of ring nodes on
// 127.0.0.1 that answer the chord protocol as a test script says: which node it polls after a
// NOT_OWNER that names the owner.
#include "tools/client/key_watcher.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "protocol/frame.h"
#include "tests/integration/loopback_listener.h"

namespace chord {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A listening socket on 127.0.0.1 at a port the kernel picks that answers every request
// frame with what `answer` makes of it, on one connection at a time. Serves for 20 s at
// most; stopped and joined when it goes out of scope.
class ScriptedNode {
 public:
  using AnswerFn = std::function<wire::Envelope(const wire::Envelope&)>;

  explicit ScriptedNode(AnswerFn answer) : answer_(std::move(answer)) {
    int port = 0;
    fd_ = testing::ListenOnLoopback(&port);
    if (fd_ < 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
      return;
    }
    addr_ = "127.0.0.1:" + std::to_string(port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedNode() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  ScriptedNode(const ScriptedNode&) = delete;
  ScriptedNode& operator=(const ScriptedNode&) = delete;

  const std::string& addr() const { return addr_; }
  int requests() const { return requests_; }

 private:
  void Serve() {
    const auto until = SteadyClock::now() + std::chrono::seconds(20);
    int conn = -1;
    FrameDecoder decoder;
    while (!stop_ && SteadyClock::now() < until) {
      pollfd p{conn >= 0 ? conn : fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      if (conn < 0) {
        conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        decoder = FrameDecoder();
        continue;
      }
      char buf[4096];
      const ssize_t n = ::read(conn, buf, sizeof(buf));
      if (n <= 0) {
        ::close(conn);
        conn = -1;
        continue;
      }
      decoder.Feed(std::string_view(buf, static_cast<size_t>(n)));
      wire::Envelope request;
      while (decoder.Next(&request) == FrameDecoder::Result::kFrame) {
        ++requests_;
        wire::Envelope reply = answer_(request);
        reply.set_request_id(request.request_id());
        std::string frame;
        if (!EncodeFrame(reply, &frame) ||
            ::write(conn, frame.data(), frame.size()) != static_cast<ssize_t>(frame.size())) {
          ADD_FAILURE() << "cannot answer";
        }
      }
    }
    if (conn >= 0) ::close(conn);
  }

  AnswerFn answer_;
  int fd_ = -1;
  std::string addr_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
};

void SetNode(const std::string& addr, wire::NodeInfo* out) {
  out->set_addr(addr);
  out->set_id(std::string(20, '\x01'));
}

TEST(KeyWatcherTest, AfterANotOwnerItPollsTheNodeTheAnswerNames) {
  // The node a lookup named no longer owns the key and says which node does; that node has
  // the change. The watcher must ask it next, not the node that refused (which refuses for
  // ever here, as a node that stays confused about its range would).
  ScriptedNode owner([](const wire::Envelope&) {
    wire::Envelope e;
    auto* w = e.mutable_watch_resp();
    w->set_code(wire::OK);
    auto* ev = w->add_events();
    ev->set_type(wire::WatchEvent::PUT);
    ev->set_version(7);
    ev->set_value("v");
    return e;
  });
  ScriptedNode former([&owner](const wire::Envelope&) {
    wire::Envelope e;
    auto* w = e.mutable_watch_resp();
    w->set_code(wire::NOT_OWNER);
    w->set_error("does not own the key");
    SetNode(owner.addr(), w->mutable_hint());
    return e;
  });
  ScriptedNode contact([&former](const wire::Envelope&) {
    wire::Envelope e;
    auto* l = e.mutable_lookup_resp();
    l->set_code(wire::OK);
    SetNode(former.addr(), l->mutable_owner());
    return e;
  });
  ASSERT_FALSE(owner.addr().empty());
  ASSERT_FALSE(former.addr().empty());
  ASSERT_FALSE(contact.addr().empty());

  KeyWatchOptions options;
  options.contacts = {contact.addr()};
  options.key = "k";
  options.start = false;
  options.wait_ms = 100;
  options.timeout_ms = 2000;
  options.give_up_ms = 5000;
  std::vector<uint64_t> seen;
  const auto until = SteadyClock::now() + std::chrono::seconds(5);
  const AnswerProblem end = FollowKey(
      options,
      [&seen](const wire::WatchEvent& e) {
        seen.push_back(e.version());
        return false;
      },
      [&until] { return SteadyClock::now() < until; });
  EXPECT_EQ(end.kind, AnswerKind::kOk) << end.sentence;
  EXPECT_EQ(seen, (std::vector<uint64_t>{7}));
  EXPECT_EQ(former.requests(), 1);
  EXPECT_EQ(owner.requests(), 1);
}

}  // namespace
}  // namespace chord
