// HttpServer on 127.0.0.1 with plain sockets as its clients, the loop turned by the test:
// a client that asks for a large answer (or opens a stream) and then takes nothing has its
// connection closed once the stall has lasted, and the server lets go of it, while a client
// that takes the same answer slowly, a little at a time, gets all of it. H2O 2.2 has no
// write timeout of its own: without CloseStalledConnections such a client holds its
// connection and the answer for as long as it likes.
#include "node/http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "node/runtime/uv_handle.h"
#include "tests/unit/loop_turns.h"

namespace chord {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr uint64_t kStallMs = 300;
constexpr uint64_t kSweepMs = 20;
// Larger than what the kernel buffers on loopback (tcp_wmem's 4 MiB at most on the sending
// side, the small receive buffer the clients ask for): most of it waits in the server.
constexpr size_t kLargeBody = size_t{16} << 20;

// Answers every request with `body`, or with a stream of it when the path is /stream.
class ServeBody : public HttpHandler {
 public:
  void OnRequest(const HttpRequest& request) override {
    if (request.target == "/stream") {
      if (server->StartStream(request.id, "text/event-stream")) {
        server->StreamWrite(request.id, body);
      }
      return;
    }
    server->Respond(request.id, 200, "application/octet-stream", body);
  }
  void OnGone(uint64_t) override { ++gone; }

  HttpServer* server = nullptr;
  std::string body;
  int gone = 0;
};

// A blocking client socket with a small receive buffer, connected to 127.0.0.1:port.
class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int small = 16 << 10;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  bool Send(const std::string& data) {
    return ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // Takes at most `max` bytes of what has arrived, without waiting: false once the server
  // has closed the connection (end of stream or reset).
  bool Take(size_t max) {
    std::string buf(max, '\0');
    const ssize_t n = ::recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n > 0) {
      received_ += static_cast<size_t>(n);
      return true;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
  size_t received() const { return received_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  size_t received_ = 0;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // As in chord-node (NodeRuntime): a write to a connection the server shut down fails
    // with EPIPE rather than ending the process.
    std::signal(SIGPIPE, SIG_IGN);
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    loop_open_ = true;
    handler_.body.assign(kLargeBody, 'v');
    server_ = std::make_unique<HttpServer>(&loop_, &handler_, HttpServer::Options{});
    handler_.server = server_.get();
    sockaddr_in addr{};
    ASSERT_EQ(uv_ip4_addr("127.0.0.1", 0, &addr), 0);
    ASSERT_TRUE(server_->Listen(addr, "127.0.0.1:0").ok());
    ASSERT_GT(server_->port(), 0);
    ASSERT_EQ(sweep_.Init([this](uv_timer_t* t) { return uv_timer_init(&loop_, t); }), 0);
    sweep_.get()->data = server_.get();
    ASSERT_EQ(uv_timer_start(
                  sweep_.get(),
                  [](uv_timer_t* t) {
                    if (t->data != nullptr) {
                      static_cast<HttpServer*>(t->data)->CloseStalledConnections(kStallMs);
                    }
                  },
                  kSweepMs, kSweepMs),
              0);
  }

  void TearDown() override {
    if (!loop_open_) return;
    sweep_.Close();
    if (server_ != nullptr) {
      server_->Close();
      RunFor(milliseconds(3000), [this] { return server_->connection_count() == 0; });
      server_.reset();
    }
    for (int i = 0; i < 1000 && uv_run(&loop_, UV_RUN_NOWAIT) != 0; ++i) {
    }
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  // Turns the loop until `done` or `limit` has passed; `between` runs after every turn.
  template <typename... Between>
  bool RunFor(milliseconds limit, auto done, Between... between) {
    return TurnLoopUntil(&loop_, limit, done, between...);
  }

  uv_loop_t loop_{};
  bool loop_open_ = false;
  ServeBody handler_;
  std::unique_ptr<HttpServer> server_;
  UvHandle<uv_timer_t> sweep_;
};

std::string Get(const std::string& path) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
}

TEST_F(HttpServerTest, AClientThatTakesNothingOfItsAnswerIsCutAfterTheStall) {
  Client client(server_->port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send(Get("/k")));
  ASSERT_TRUE(RunFor(milliseconds(2000), [&] { return server_->connection_count() == 1; }));
  // The client reads nothing: the server must let the connection and its answer go.
  EXPECT_TRUE(RunFor(milliseconds(10 * kStallMs + 3000), [&] {
    return server_->connection_count() == 0;
  })) << "a connection whose client took nothing of a 16 MiB answer was still open";
  // What the kernels held arrives, then the end: never the whole answer.
  bool open = true;
  RunFor(
      milliseconds(3000), [&] { return !open; }, [&] { open = client.Take(1 << 20); });
  EXPECT_FALSE(open) << "the connection did not end";
  EXPECT_LT(client.received(), kLargeBody);
}

TEST_F(HttpServerTest, AStreamItsClientDoesNotReadIsEndedAndTheHandlerHearsOfIt) {
  Client client(server_->port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send(Get("/stream")));
  ASSERT_TRUE(RunFor(milliseconds(2000), [&] { return server_->open_requests() == 1; }));
  EXPECT_TRUE(RunFor(milliseconds(10 * kStallMs + 3000),
                     [&] { return server_->connection_count() == 0 && handler_.gone == 1; }))
      << "connections " << server_->connection_count() << ", handler told " << handler_.gone;
  EXPECT_EQ(server_->open_requests(), 0u);
}

TEST_F(HttpServerTest, AClientThatTakesItsAnswerSlowlyGetsAllOfIt) {
  handler_.body.assign(size_t{6} << 20, 'v');  // more than the kernels hold: some must wait
  Client client(server_->port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send(Get("/k")));
  // 32 KiB every 20 ms at most: under 2 MiB a second, so the answer takes many stall periods
  // to arrive, while no pause is as long as one.
  auto last_take = steady_clock::now();
  bool open = true;
  const bool done = RunFor(
      milliseconds(60'000), [&] { return !open || client.received() > handler_.body.size(); },
      [&] {
        if (steady_clock::now() - last_take < milliseconds(kSweepMs)) return;
        last_take = steady_clock::now();
        open = client.Take(32 << 10);
      });
  EXPECT_TRUE(done);
  EXPECT_TRUE(open) << "the server cut a client that kept taking its answer, after "
                    << client.received() << " bytes";
  EXPECT_GT(client.received(), handler_.body.size());  // the body and its head
  EXPECT_EQ(server_->connection_count(), 1u);
}

}  // namespace
}  // namespace chord
