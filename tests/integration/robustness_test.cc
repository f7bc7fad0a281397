// Multi-process robustness test: hostile or idle TCP peers must not stop a chord-node from
// serving everyone else. Raw sockets speak to the node directly, bypassing the client.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "protocol/frame.h"
#include "protocol/messages.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/raw_connection.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

constexpr int kIdleConnections = 200;

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
    conn.Send(FrameHeader(0xFFFFFFFFu));
    EXPECT_TRUE(conn.WaitClosedByPeer(milliseconds(5000)))
        << "the node kept a connection whose frame claims 4 GiB";
    ExpectServes(target, "a 4 GiB frame header");
  }

  // (3) A valid length with a payload that is not an Envelope, and an Envelope with no body.
  {
    RawConnection conn;
    ASSERT_TRUE(conn.Connect(target->port(), &error)) << error;
    conn.Send(FrameHeader(32) + std::string(32, '\xff'));
    EXPECT_TRUE(conn.WaitClosedByPeer(milliseconds(5000)))
        << "the node kept a connection that sent a garbage payload";
    ExpectServes(target, "a garbage payload");
  }
  {
    RawConnection conn;
    ASSERT_TRUE(conn.Connect(target->port(), &error)) << error;
    conn.Send(FrameHeader(2) + std::string("\x08\x01", 2));  // request_id = 1, no body
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

// One connection's pipelined requests must take turns with the other connections rather than
// hold the node until they are all served. A client sends 20 puts of one key, 1 .. 20, each
// followed by 300 status requests (each reads the node's counts and /proc), in one write (one
// read of the node's); another client's get of that key, sent once the first put is answered,
// must be answered between two of the flood's turns: with a value below 20. Every request of the
// flood is still answered, in order, and the last put stays.
TEST_F(RobustnessTest, APipelinedFloodOnOneConnectionTakesTurnsWithTheOthers) {
  NodeProcess* node = cluster().StartNode(WithReplicas(FastNodes(), 1));
  ASSERT_NE(node, nullptr);
  constexpr int kPuts = 20;
  constexpr int kStatusPerPut = 300;
  const std::string key = "taking turns";
  std::string flood;
  uint64_t id = 0;
  std::vector<uint64_t> put_ids;
  for (int i = 1; i <= kPuts; ++i) {
    wire::Envelope put = msg::Put(key, std::to_string(i));
    put.set_request_id(++id);
    put_ids.push_back(id);
    ASSERT_TRUE(EncodeFrame(put, &flood));
    for (int j = 0; j < kStatusPerPut; ++j) {
      wire::Envelope status;
      status.mutable_status();
      status.set_request_id(++id);
      ASSERT_TRUE(EncodeFrame(status, &flood));
    }
  }
  ASSERT_LT(flood.size(), size_t{64} << 10);  // one read of the node's
  ChordClient other(node->addr());
  ASSERT_TRUE(IsOk(other.Put("warm-up", "x")));  // its connection is open
  RawConnection flooder;
  std::string error;
  ASSERT_TRUE(flooder.Connect(node->port(), &error)) << error;
  ASSERT_EQ(flooder.Send(flood), flood.size());

  // The flood's answers, read as they come: every request in order, the puts acknowledged.
  FrameDecoder decoder;
  wire::Envelope reply;
  uint64_t answered = 0;
  char buf[65536];
  auto read_answers = [&](uint64_t until) {
    for (int guard = 0; answered < until && guard < 100000; ++guard) {
      pollfd pfd{flooder.fd(), POLLIN, 0};
      if (::poll(&pfd, 1, 10000) <= 0) return;
      const ssize_t n = ::recv(flooder.fd(), buf, sizeof(buf), 0);
      if (n <= 0) return;
      decoder.Feed(std::string_view(buf, static_cast<size_t>(n)));
      while (decoder.Next(&reply) == FrameDecoder::Result::kFrame) {
        ++answered;
        EXPECT_EQ(reply.request_id(), answered);
        if (std::find(put_ids.begin(), put_ids.end(), reply.request_id()) != put_ids.end()) {
          EXPECT_EQ(reply.data_resp().code(), wire::OK) << reply.data_resp().error();
        }
      }
    }
  };
  // Once the first put is answered, the flood is being served: the get comes in the middle.
  read_answers(1);
  ASSERT_GE(answered, 1u);
  auto got = other.Get(key);
  ASSERT_TRUE(IsOk(got)) << Describe(got);
  const int seen = std::stoi(got->value());
  EXPECT_GE(seen, 1);
  EXPECT_LT(seen, kPuts) << "the get waited for the whole flood";
  read_answers(id);
  EXPECT_EQ(answered, id);
  auto last = other.Get(key);
  ASSERT_TRUE(IsOk(last)) << Describe(last);
  EXPECT_EQ(last->value(), std::to_string(kPuts));
  EXPECT_TRUE(node->IsRunning());
}

TEST_F(RobustnessTest, AClientThatShutsDownItsSendingSideStillGetsItsAnswers) {
  // A client may send its requests and then shut down its side of the connection (as
  // `nc -N` does): the node answers all it was asked, also an answer that needs another
  // node's reply first (a get of a key the asked node does not own), and then closes.
  NodeProcess* first = cluster().StartNode(WithReplicas(FastNodes(), 1));
  ASSERT_NE(first, nullptr);
  NodeProcess* second = cluster().StartNode(WithReplicas(FastNodes(), 1), first->addr());
  ASSERT_NE(second, nullptr);
  const std::vector<std::string> addrs{first->addr(), second->addr()};
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const std::string key = KeyOwnedBy(second->addr(), addrs, "half-closed");
  ASSERT_FALSE(key.empty());
  const std::string value = "answered after the end of input";
  ChordClient writer(second->addr());
  ASSERT_TRUE(IsOk(writer.Put(key, value)));

  const std::string frames = GetAndStatusFrames(key);
  ASSERT_FALSE(frames.empty());
  RawConnection client;
  std::string error;
  ASSERT_TRUE(client.Connect(first->port(), &error)) << error;
  ASSERT_EQ(client.Send(frames), frames.size());
  ASSERT_EQ(::shutdown(client.fd(), SHUT_WR), 0);

  bool closed = false;
  auto replies = RepliesUntilClosed(
      [&](char* buf, size_t size) -> long {
        pollfd pfd{client.fd(), POLLIN, 0};
        if (::poll(&pfd, 1, 10000) <= 0) return -1;
        const ssize_t n = ::recv(client.fd(), buf, size, 0);
        return n < 0 ? -1 : static_cast<long>(n);
      },
      &closed);
  EXPECT_TRUE(closed) << "the node did not close the connection once it had answered";
  EXPECT_EQ(replies.count(2), 1u) << "no answer to the status request";
  ASSERT_EQ(replies.count(1), 1u) << "no answer to the get sent before the end of input";
  EXPECT_EQ(replies[1].data_resp().code(), wire::OK) << replies[1].ShortDebugString();
  EXPECT_EQ(replies[1].data_resp().value(), value);
}

}  // namespace
}  // namespace chord::testing
