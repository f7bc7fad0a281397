// WriteGather with real TcpConnections on 127.0.0.1: frames written in one turn of the loop
// wait until the turn ends and then arrive whole and in order; a turn that gathers more than
// the bound goes out at once; a reply written just before a close still reaches the peer. The
// peer is a plain socket read by the test, so what it sees is what went on the wire.
#include "node/runtime/write_gather.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "node/runtime/tcp_connection.h"
#include "protocol/frame.h"

namespace chord {
namespace {

// A listening socket on 127.0.0.1 with a port the kernel chose; the peer of the connection.
class Peer {
 public:
  Peer() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 4) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1: errno " << errno;
    }
    socklen_t len = sizeof(addr_);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr_), &len);
  }
  ~Peer() {
    if (fd_ >= 0) ::close(fd_);
    ::close(listen_fd_);
  }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  const sockaddr_in& addr() const { return addr_; }

  // Accepts the connection (it is already in the backlog once the dial completed).
  bool Accept() {
    timeval tv{5, 0};
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    fd_ = ::accept(listen_fd_, nullptr, nullptr);
    return fd_ >= 0;
  }

  // Reads what has arrived without waiting; false at end of stream or on a socket error.
  bool ReadAvailable() {
    if (fd_ < 0) return true;  // not accepted yet: nothing to read
    char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        received_.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) return false;  // end of stream
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;  // nothing more for now
    }
  }

  // Waits at most `ms` milliseconds for something to read (or the end of stream).
  void WaitReadable(int ms) {
    if (fd_ < 0) return;
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, ms);
  }

  // The request ids of the complete frames received so far, in order.
  std::vector<uint64_t> Frames() const {
    FrameDecoder decoder;
    decoder.Feed(received_);
    std::vector<uint64_t> ids;
    wire::Envelope e;
    while (decoder.Next(&e) == FrameDecoder::Result::kFrame) ids.push_back(e.request_id());
    return ids;
  }
  size_t received_bytes() const { return received_.size(); }

 private:
  int listen_fd_ = -1;
  int fd_ = -1;
  sockaddr_in addr_{};
  std::string received_;
};

wire::Envelope Envelope(uint64_t id, size_t padding = 0) {
  wire::Envelope e;
  e.set_request_id(id);
  e.mutable_put()->set_key("k");
  e.mutable_put()->set_value(std::string(padding, 'v'));
  return e;
}

std::string Frame(uint64_t id, size_t padding = 0) {
  std::string out;
  EXPECT_TRUE(EncodeFrame(Envelope(id, padding), &out));
  return out;
}

// Writes ids 0 .. count - 1 to `conn`, each with as many bytes of padding as its id: every
// `frame_every`-th as a frame encoded here, the others as envelopes the connection encodes.
void WriteMixed(TcpConnection* conn, uint64_t count, uint64_t frame_every) {
  for (uint64_t i = 0; i < count; ++i) {
    if (i % frame_every == 0) {
      ASSERT_TRUE(conn->Write(Frame(i, i)));
      continue;
    }
    bool too_large = true;
    ASSERT_TRUE(conn->WriteEnvelope(Envelope(i, i), kDefaultMaxFrameBytes, &too_large));
    EXPECT_FALSE(too_large);
  }
}

std::vector<uint64_t> Ids(uint64_t count) {
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < count; ++i) ids.push_back(i);
  return ids;
}

class WriteGatherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    ASSERT_TRUE(gather_.Start(&loop_).ok());
    TcpConnection::Options options;
    options.gather = &gather_;
    options.max_queued_bytes = MaxQueuedBytes();
    std::string error;
    conn_ = TcpConnection::Connect(&loop_, peer_.addr(), "peer", 1, options, &error);
    ASSERT_NE(conn_, nullptr) << error;
    conn_->SetCallbacks([](TcpConnection*, wire::Envelope&&) {},
                        [this](TcpConnection*, const Status&) { conn_ = nullptr; });
    ASSERT_TRUE(RunUntil([this] { return conn_ != nullptr && conn_->connected(); }));
    ASSERT_TRUE(peer_.Accept());
  }
  virtual size_t MaxQueuedBytes() const { return size_t{64} << 20; }
  void TearDown() override {
    if (conn_ != nullptr) conn_->Close();
    gather_.Close();
    for (int i = 0; i < 100 && uv_run(&loop_, UV_RUN_NOWAIT) != 0; ++i) {
    }
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  // Turns of the loop (each reading what the peer has received, after waiting up to 1 ms for
  // it) until `done`: at most 5 s and 10,000 turns.
  template <typename Done>
  bool RunUntil(Done done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (int turn = 0; turn < 10'000 && std::chrono::steady_clock::now() < end; ++turn) {
      if (done()) return true;
      uv_run(&loop_, UV_RUN_NOWAIT);
      if (conn_ != nullptr && conn_->connected()) {
        peer_.WaitReadable(1);
        peer_.ReadAvailable();
      }
    }
    return done();
  }

  // Turns of the loop, reading what the peer receives, until it sees the end of stream (true)
  // or 5 s have passed (false).
  bool PeerSeesTheEnd() {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < end) {
      uv_run(&loop_, UV_RUN_NOWAIT);
      if (!peer_.ReadAvailable()) return true;
    }
    return false;
  }

  // Writes 300 frames of about 1 KiB with `write` (true: written) in one turn: past the 256 KiB
  // a turn gathers before it writes. Before the turn ends, what passed the bound went to the
  // socket already (how much of it the kernel has handed over yet is its business; that some
  // has arrived is ours); then all arrive, in order.
  template <typename Write>
  void ExpectATurnPastTheBoundWritesAtOnce(Write write) {
    for (uint64_t i = 0; i < 300; ++i) ASSERT_TRUE(write(i)) << i;
    peer_.WaitReadable(2000);
    peer_.ReadAvailable();
    EXPECT_GT(peer_.received_bytes(), 0u);
    ASSERT_TRUE(RunUntil([this] { return peer_.Frames().size() == 300; }));
    EXPECT_EQ(peer_.Frames(), Ids(300));
  }

  uv_loop_t loop_{};
  WriteGather gather_;
  Peer peer_;
  TcpConnection* conn_ = nullptr;
};

TEST_F(WriteGatherTest, FramesOfOneTurnWaitForItsEndThenArriveWholeAndInOrder) {
  for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(conn_->Write(Frame(i)));
  // Nothing is written while the turn goes on.
  peer_.ReadAvailable();
  EXPECT_EQ(peer_.received_bytes(), 0u);
  ASSERT_TRUE(RunUntil([this] { return peer_.Frames().size() == 100; }));
  EXPECT_EQ(peer_.Frames(), Ids(100));
  // The next turn's frames follow them.
  for (uint64_t i = 100; i < 110; ++i) ASSERT_TRUE(conn_->Write(Frame(i)));
  ASSERT_TRUE(RunUntil([this] { return peer_.Frames().size() == 110; }));
  EXPECT_EQ(peer_.Frames(), Ids(110));
}

TEST_F(WriteGatherTest, ATurnThatGathersMoreThanTheBoundWritesAtOnce) {
  ExpectATurnPastTheBoundWritesAtOnce([this](uint64_t i) { return conn_->Write(Frame(i, 1024)); });
}

TEST_F(WriteGatherTest, AFrameWrittenJustBeforeACloseStillReachesThePeer) {
  ASSERT_TRUE(conn_->Write(Frame(7)));
  conn_->Close();
  EXPECT_EQ(conn_, nullptr);  // the close callback ran
  EXPECT_TRUE(PeerSeesTheEnd()) << "the peer saw no end of stream";
  EXPECT_EQ(peer_.Frames(), std::vector<uint64_t>{7});
}

TEST_F(WriteGatherTest, EnvelopesEncodedIntoTheTurnKeepTheirPlaceAmongFrames) {
  WriteMixed(conn_, 60, 3);
  peer_.ReadAvailable();
  EXPECT_EQ(peer_.received_bytes(), 0u);  // gathered until the turn ends
  ASSERT_TRUE(RunUntil([this] { return peer_.Frames().size() == 60; }));
  EXPECT_EQ(peer_.Frames(), Ids(60));
}

TEST_F(WriteGatherTest, AnEnvelopeOverTheFrameLimitIsNotSentAndTheConnectionGoesOn) {
  bool too_large = false;
  EXPECT_FALSE(conn_->WriteEnvelope(Envelope(0, 2048), /*max_frame_bytes=*/1024, &too_large));
  EXPECT_TRUE(too_large);
  ASSERT_NE(conn_, nullptr);
  ASSERT_TRUE(conn_->WriteEnvelope(Envelope(1, 10), 1024, &too_large));
  EXPECT_FALSE(too_large);
  ASSERT_TRUE(RunUntil([this] { return peer_.Frames().size() == 1; }));
  EXPECT_EQ(peer_.Frames(), std::vector<uint64_t>{1});
}

TEST_F(WriteGatherTest, EnvelopesPastTheBoundGoOutAtOnceAndKeepTheirOrder) {
  ExpectATurnPastTheBoundWritesAtOnce([this](uint64_t i) {
    bool too_large = true;
    const bool ok = conn_->WriteEnvelope(Envelope(i, 1024), kDefaultMaxFrameBytes, &too_large);
    return ok && !too_large;
  });
}

// Envelopes written to a connection still dialing wait for it (they are not gathered into a
// turn of a socket that is not up yet) and arrive whole, in order with frames, once it is.
TEST_F(WriteGatherTest, EnvelopesWrittenBeforeTheConnectionIsUpArriveOnceItIs) {
  Peer other;
  TcpConnection::Options options;
  options.gather = &gather_;
  std::string error;
  TcpConnection* dialing =
      TcpConnection::Connect(&loop_, other.addr(), "other", 2, options, &error);
  ASSERT_NE(dialing, nullptr) << error;
  bool closed = false;
  dialing->SetCallbacks([](TcpConnection*, wire::Envelope&&) {},
                        [&closed](TcpConnection*, const Status&) { closed = true; });
  ASSERT_FALSE(dialing->connected());
  WriteMixed(dialing, 20, 4);
  ASSERT_TRUE(RunUntil([dialing] { return dialing->connected(); }));
  ASSERT_TRUE(other.Accept());
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (int turn = 0; turn < 10'000 && std::chrono::steady_clock::now() < end; ++turn) {
    if (other.Frames().size() == 20) break;
    uv_run(&loop_, UV_RUN_NOWAIT);
    other.WaitReadable(1);
    other.ReadAvailable();
  }
  EXPECT_EQ(other.Frames(), Ids(20));
  EXPECT_FALSE(closed);
  dialing->Close();
  EXPECT_TRUE(closed);
}

// A connection whose queue holds at most 8 KiB.
class SmallQueueTest : public WriteGatherTest {
 protected:
  size_t MaxQueuedBytes() const override { return 8 << 10; }
};

TEST_F(SmallQueueTest, AnEnvelopePastTheQueueBoundClosesTheConnectionWithoutIt) {
  bool too_large = false;
  // Two frames of about 3 KiB fit within 8 KiB in one turn; the third does not.
  for (uint64_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(conn_->WriteEnvelope(Envelope(i, 3000), kDefaultMaxFrameBytes, &too_large));
  }
  EXPECT_FALSE(conn_->WriteEnvelope(Envelope(2, 3000), kDefaultMaxFrameBytes, &too_large));
  EXPECT_FALSE(too_large);
  EXPECT_EQ(conn_, nullptr);  // closed: the close callback ran
  EXPECT_TRUE(PeerSeesTheEnd()) << "the peer saw no end of stream";
  // What fit was gathered before the close and goes out with it (the socket takes 6 KiB at
  // once); the frame past the bound never.
  EXPECT_EQ(peer_.Frames(), (std::vector<uint64_t>{0, 1}));
}

}  // namespace
}  // namespace chord
