// WriteGather with real TcpConnections on 127.0.0.1: frames written in one turn of the loop
// wait until the turn ends and then arrive whole and in order; a turn that gathers more than
// the bound goes out at once; a reply written just before a close still reaches the peer. The
// peer is a plain socket read by the test, so what it sees is what went on the wire. Over
// mutual TLS (member certificates scripts/certs.sh makes for the run's port), a turn's
// gathered frames and envelopes are encrypted together and reach an accepted TcpConnection
// whole and in order.
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
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "node/runtime/tcp_connection.h"
#include "node/runtime/tcp_listener.h"
#include "node/runtime/uv_handle.h"
#include "protocol/frame.h"
#include "protocol/tls_context.h"
#include "tests/unit/loop_turns.h"

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

// ---- over mutual TLS ----

// Runs a shell command; true when it exits 0 (its output is dropped).
bool Succeeds(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// A port on 127.0.0.1 that was free a moment ago: a Peer's, closed again (0 if it could not
// listen).
int FreePort() { return ntohs(Peer().addr().sin_port); }

// A listener and a dialed connection between two members over mutual TLS, both gathering
// their writes: the listener is the run's address by its certificate, the dialer
// "127.0.0.1:4001" by its own. The accepted end records the request ids of the frames it
// receives.
class TlsWriteGatherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Succeeds("command -v openssl")) GTEST_SKIP() << "the openssl command is missing";
    std::string dir = (std::filesystem::temp_directory_path() / "chord_gather_tls_XXXXXX");
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    // Listening first, so that the port cannot be taken while the certificates are made.
    const int port = FreePort();
    ASSERT_GT(port, 0);
    listen_addr_ = "127.0.0.1:" + std::to_string(port);
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    loop_open_ = true;
    ASSERT_TRUE(gather_.Start(&loop_).ok());
    sockaddr_in addr{};
    ASSERT_EQ(uv_ip4_addr("127.0.0.1", port, &addr), 0);
    auto listener = TcpListener::Listen(
        &loop_, addr, listen_addr_, [this](uv_stream_t* server) { OnAccept(server); },
        [](const std::string& error) { ADD_FAILURE() << error; });
    ASSERT_TRUE(listener.ok()) << listener.status().ToString();
    listener_ = listener.value();

    const std::string script = "bash '" + std::string(CHORD_SOURCE_DIR) + "/scripts/certs.sh' ";
    for (const std::string& args : {"ca '" + dir_ + "'", "member '" + dir_ + "' " + listen_addr_,
                                    "member '" + dir_ + "' 127.0.0.1:4001"}) {
      ASSERT_TRUE(Succeeds(script + args)) << "certs.sh " << args << " failed";
    }
    server_tls_ = Context("member-127.0.0.1_" + std::to_string(port));
    client_tls_ = Context("member-127.0.0.1_4001");
    ASSERT_NE(server_tls_, nullptr);
    ASSERT_NE(client_tls_, nullptr);

    std::string error;
    dialed_ =
        TcpConnection::Connect(&loop_, addr, listen_addr_, 1, Options(client_tls_.get()), &error);
    ASSERT_NE(dialed_, nullptr) << error;
    dialed_->SetCallbacks([](TcpConnection*, wire::Envelope&&) {},
                          [this](TcpConnection*, const Status& why) {
                            dialed_close_ = why;
                            dialed_ = nullptr;
                          });
    ASSERT_TRUE(RunUntil([this] {
      return dialed_ != nullptr && dialed_->peer_identity() != nullptr && accepted_ != nullptr &&
             accepted_->peer_identity() != nullptr;
    })) << "no TLS handshake: dialed end "
        << dialed_close_.ToString() << ", accepted end " << accepted_close_.ToString();
  }

  void TearDown() override {
    if (loop_open_) {
      if (dialed_ != nullptr) dialed_->Close();
      if (accepted_ != nullptr) accepted_->Close();
      if (listener_ != nullptr) listener_->Close();
      gather_.Close();
      for (int i = 0; i < 100 && uv_run(&loop_, UV_RUN_NOWAIT) != 0; ++i) {
      }
      EXPECT_EQ(uv_loop_close(&loop_), 0);
    }
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

  std::unique_ptr<TlsContext> Context(const std::string& base) const {
    auto ctx = TlsContext::Create(
        TlsFiles{dir_ + "/" + base + ".pem", dir_ + "/" + base + ".key", dir_ + "/ca.pem"});
    EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
    return ctx.ok() ? std::move(ctx).value() : nullptr;
  }
  TcpConnection::Options Options(const TlsContext* tls) {
    TcpConnection::Options options;
    options.tls = tls;
    options.gather = &gather_;
    return options;
  }
  void OnAccept(uv_stream_t* server) {
    std::string error;
    TcpConnection* conn = TcpConnection::Accept(server, 2, Options(server_tls_.get()), &error);
    ASSERT_NE(conn, nullptr) << error;
    if (accepted_ != nullptr) {
      conn->Close();
      ADD_FAILURE() << "a second connection was accepted";
      return;
    }
    accepted_ = conn;
    conn->SetCallbacks(
        [this](TcpConnection*, wire::Envelope&& e) { received_.push_back(e.request_id()); },
        [this](TcpConnection*, const Status& why) {
          accepted_close_ = why;
          accepted_ = nullptr;
        });
  }

  // Turns of the loop until `done`: at most 5 s.
  template <typename Done>
  bool RunUntil(Done done) {
    return TurnLoopUntil(&loop_, std::chrono::seconds(5), done);
  }

  // Writes `count` envelopes of about `padding` bytes each with ids from `first`; their bytes
  // on the wire (frames, before encryption).
  size_t WriteEnvelopes(uint64_t first, uint64_t count, size_t padding) {
    size_t bytes = 0;
    for (uint64_t i = first; i < first + count; ++i) {
      if (dialed_ == nullptr) {
        ADD_FAILURE() << "the connection closed after " << i - first << " envelopes";
        break;
      }
      bool too_large = true;
      EXPECT_TRUE(dialed_->WriteEnvelope(Envelope(i, padding), kDefaultMaxFrameBytes, &too_large));
      EXPECT_FALSE(too_large);
      bytes += Frame(i, padding).size();
    }
    return bytes;
  }

  std::string dir_;
  std::string listen_addr_;
  std::unique_ptr<TlsContext> server_tls_, client_tls_;
  uv_loop_t loop_{};
  bool loop_open_ = false;
  WriteGather gather_;
  TcpListener* listener_ = nullptr;
  TcpConnection* dialed_ = nullptr;
  TcpConnection* accepted_ = nullptr;
  Status dialed_close_, accepted_close_;
  std::vector<uint64_t> received_;
};

TEST_F(TlsWriteGatherTest, BothEndsKnowTheOtherMemberByItsCertificate) {
  EXPECT_EQ(dialed_->peer_identity()->role, Sender::Role::kMember);
  EXPECT_EQ(dialed_->peer_identity()->member_addr, listen_addr_);
  EXPECT_EQ(accepted_->peer_identity()->role, Sender::Role::kMember);
  EXPECT_EQ(accepted_->peer_identity()->member_addr, "127.0.0.1:4001");
}

TEST_F(TlsWriteGatherTest, FramesAndEnvelopesOfOneTurnWaitForItsEndThenArriveWholeAndInOrder) {
  WriteMixed(dialed_, 60, 3);
  ASSERT_NE(dialed_, nullptr);
  // Gathered, not yet encrypted or written: a write straight to the socket would leave nothing
  // queued on an idle loopback connection.
  EXPECT_GT(dialed_->queued_bytes(), 0u);
  ASSERT_TRUE(RunUntil([this] { return received_.size() >= 60; }));
  EXPECT_EQ(received_, Ids(60));
  // The next turn's follow them on the same session.
  WriteEnvelopes(60, 10, 0);
  ASSERT_NE(dialed_, nullptr);
  EXPECT_GT(dialed_->queued_bytes(), 0u);
  ASSERT_TRUE(RunUntil([this] { return received_.size() >= 70; }));
  EXPECT_EQ(received_, Ids(70));
  EXPECT_NE(dialed_, nullptr);
  EXPECT_NE(accepted_, nullptr);
}

TEST_F(TlsWriteGatherTest, EnvelopesPastTheBoundGoOutAtOnceAndArriveInOrder) {
  // 300 envelopes of about 1 KiB in one turn: past the 256 KiB a turn gathers, so what passed
  // the bound is encrypted and handed to the socket before the turn ends (the kernel takes some
  // of it at once); the rest goes at its end.
  const size_t written = WriteEnvelopes(0, 300, 1024);
  ASSERT_NE(dialed_, nullptr);
  EXPECT_GT(written, size_t{256} << 10);
  // Queued counts the plaintext still gathered and the ciphertext the socket has not taken
  // (a little more than its plaintext): without the early write, or with the early write
  // queued instead of tried at once, it is at least `written`.
  EXPECT_LT(dialed_->queued_bytes(), written);
  ASSERT_TRUE(RunUntil([this] { return received_.size() >= 300; }));
  EXPECT_EQ(received_, Ids(300));
}

TEST_F(TlsWriteGatherTest, AnEnvelopeOverTheFrameLimitIsNotSentAndTheSessionGoesOn) {
  bool too_large = false;
  EXPECT_FALSE(dialed_->WriteEnvelope(Envelope(0, 2048), /*max_frame_bytes=*/1024, &too_large));
  EXPECT_TRUE(too_large);
  ASSERT_TRUE(dialed_->WriteEnvelope(Envelope(1, 10), 1024, &too_large));
  EXPECT_FALSE(too_large);
  ASSERT_TRUE(RunUntil([this] { return !received_.empty(); }));
  EXPECT_EQ(received_, std::vector<uint64_t>{1});
}

}  // namespace
}  // namespace chord
