// Multi-process tests of the node's resource bounds against connections that hold on to it:
// frames that never complete (sent slowly, or dribbled a byte at a time), many large partial
// frames at once (the node-wide input budget), readers that never read a large answer (the
// output budget), and one source address opening connection after connection (the per-host
// limit). After each, the node still serves clients and its peers, and its resident memory
// stays under the bound the README states.

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "protocol/chord.pb.h"
#include "tests/hostile_payloads.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/dribbling_peer.h"
#include "tests/integration/raw_connection.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

// A memory figure of the node in MiB from /proc/PID/status: "VmRSS" (resident now), "VmHWM"
// (its peak).
std::optional<uint64_t> StatusMiB(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) / 1024;
  }
  return std::nullopt;
}

std::optional<uint64_t> RssMiB(pid_t pid) { return StatusMiB(pid, "VmRSS"); }

// A whole frame of nearly 16 MiB of empty records (EmptyRecordsPayload).
std::string EmptyRecordsFrame(size_t overstated) {
  const std::string payload = EmptyRecordsPayload(16u << 20, overstated);
  return FrameHeader(static_cast<uint32_t>(payload.size())) + payload;
}

// A whole frame of a put with a 15 MiB value (refused by the node: over 1 MiB).
std::string BigPutFrame() {
  wire::Envelope put;
  put.set_request_id(1);
  put.mutable_put()->set_key("big");
  put.mutable_put()->set_value(std::string(15u << 20, 'b'));
  const std::string payload = put.SerializeAsString();
  return FrameHeader(static_cast<uint32_t>(payload.size())) + payload;
}

class ResourceTest : public ClusterTest {
 protected:
  // Three nodes with short deadlines, so that the tests do not wait long.
  NodeProcess* StartRing(const std::vector<std::string>& extra = {}) {
    NodeOptions o = FastNodes();
    o.extra_args = {"--frame-deadline-ms", "1000", "--idle-timeout-ms", "3000"};
    o.extra_args.insert(o.extra_args.end(), extra.begin(), extra.end());
    if (!cluster().StartNodes(3, o)) return nullptr;
    addrs_ = cluster().RunningAddrs();
    if (!WaitForRing(cluster(), addrs_)) return nullptr;
    return cluster().nodes()[1];
  }
  void ExpectServes(NodeProcess* target, const std::string& step) {
    SCOPED_TRACE("after " + step);
    ASSERT_TRUE(target->IsRunning()) << target->addr() << " died";
    ChordClient client(target->addr(), 5000);
    const std::string key = "after " + step;
    EXPECT_TRUE(IsOk(client.Put(key, "v")));
    auto got = client.Get(key);
    EXPECT_TRUE(IsOk(got)) << Describe(got);
    std::string why;
    EXPECT_TRUE(PointersMatch(addrs_, &why)) << why;
  }
  std::vector<std::string> addrs_;
};

TEST_F(ResourceTest, FramesThatDoNotCompleteInTimeAreClosed) {
  NodeProcess* target = StartRing();
  ASSERT_NE(target, nullptr);
  std::string error;
  // A frame that announces 16 MiB - 1 and stops after 1,000 bytes.
  RawConnection stalled;
  ASSERT_TRUE(stalled.Connect(target->port(), &error)) << error;
  stalled.Send(FrameHeader((16u << 20) - 1) + std::string(1000, 'x'));
  // A connection that dribbles one byte every 200 ms and never completes a frame: it keeps
  // the socket busy, but it is closed all the same.
  RawConnection dribbler;
  ASSERT_TRUE(dribbler.Connect(target->port(), &error)) << error;
  const std::string header = FrameHeader(100);
  bool dribbler_closed = false;
  for (int i = 0; i < 25 && !dribbler_closed; ++i) {
    dribbler.Send(i < 4 ? header.substr(static_cast<size_t>(i), 1) : std::string(1, 'y'));
    dribbler_closed = dribbler.WaitClosedByPeer(milliseconds(200));
  }
  EXPECT_TRUE(dribbler_closed) << "a frame dribbled over 5 s was not closed";
  EXPECT_TRUE(stalled.WaitClosedByPeer(milliseconds(4000)))
      << "a frame stalled for 5 s was not closed";
  // An idle connection (no frame at all) is closed after the idle timeout.
  RawConnection idle;
  ASSERT_TRUE(idle.Connect(target->port(), &error)) << error;
  EXPECT_TRUE(idle.WaitClosedByPeer(milliseconds(8000)));
  ExpectServes(target, "slow frames");
}

TEST_F(ResourceTest, PartialFramesAreBoundedNodeWide) {
  NodeProcess* target = StartRing();
  ASSERT_NE(target, nullptr);
  const uint64_t before = RssMiB(target->pid()).value_or(0);
  // 32 connections, each sending 15 MiB of a 16 MiB frame: 480 MiB, nearly twice the node's
  // 256 MiB budget for unfinished frames.
  std::vector<RawConnection> conns(32);
  std::string error;
  const std::string chunk(15u << 20, 'z');
  uint64_t peak = 0;
  for (RawConnection& conn : conns) {
    ASSERT_TRUE(conn.Connect(target->port(), &error)) << error;
    conn.Send(FrameHeader((16u << 20) - 1) + chunk);
    peak = std::max(peak, RssMiB(target->pid()).value_or(0));
  }
  std::this_thread::sleep_for(milliseconds(300));
  peak = std::max(peak, RssMiB(target->pid()).value_or(0));
  // The bound: 256 MiB of partial frames over what the node held before, plus slack for the
  // allocator and read buffers.
  EXPECT_LT(peak, before + 256 + 96) << "RSS went from " << before << " to " << peak << " MiB";
  std::cout << "RSS " << before << " MiB before, at most " << peak << " MiB while 480 MiB of "
            << "partial frames arrived\n";
  ExpectServes(target, "480 MiB of partial frames");
}

// Parsing a frame of 16 MiB of empty records would take the node some 700 MiB for a moment
// (45 times the frame): it is refused before it is parsed, its connection closed, and the
// node's peak memory stays within the frame's own bytes and read buffers. So is the same frame
// with its records' length one byte past its end, which the parser refuses only once it has
// allocated every record.
TEST_F(ResourceTest, AFrameThatWouldTakeTooMuchMemoryToParseIsRefusedUnparsed) {
  NodeProcess* target = StartRing();
  ASSERT_NE(target, nullptr);
  const uint64_t before = StatusMiB(target->pid(), "VmHWM").value_or(0);
  ASSERT_GT(before, 0u);
  for (const size_t overstated : {0, 1}) {
    SCOPED_TRACE("length overstated by " + std::to_string(overstated));
    RawConnection conn;
    std::string error;
    ASSERT_TRUE(conn.Connect(target->port(), &error)) << error;
    conn.Send(EmptyRecordsFrame(overstated));
    EXPECT_TRUE(conn.WaitClosedByPeer(milliseconds(10000)))
        << "the node kept the connection of a frame of 8 million empty records";
    const uint64_t after = StatusMiB(target->pid(), "VmHWM").value_or(0);
    EXPECT_LT(after, before + 160) << "peak RSS went from " << before << " to " << after << " MiB";
    std::cout << "peak RSS " << before << " MiB before, " << after << " MiB after a 16 MiB frame "
              << "of empty records (length overstated by " << overstated << ")\n";
  }
  ExpectServes(target, "a frame of empty records");
}

// Complete frames a connection holds for its next turn (past the 128 it delivers in one) are
// not unfinished frames: with the node's 256 MiB budget for those filled by others' partial
// frames to within 8 KiB, a client that pipelines 3,000 status requests (about 27 KiB, one
// read) in one write gets every answer rather than being closed for what it waits to deliver.
TEST_F(ResourceTest, APipeliningClientIsNotClosedForFramesHeldForItsNextTurn) {
  NodeOptions o = FastNodes();
  o.extra_args = {"--frame-deadline-ms", "30000", "--idle-timeout-ms", "30000"};
  NodeProcess* target = cluster().StartNode(o);
  ASSERT_NE(target, nullptr);
  addrs_ = {target->addr()};
  ASSERT_TRUE(WaitForRing(cluster(), addrs_));
  // Fifteen frames of 16 MiB - 1 sent but for their last byte, and one sent so far that the
  // budget (256 MiB) has 8 KiB left.
  constexpr size_t kBudget = size_t{256} << 20;
  constexpr uint32_t kFrame = (16u << 20) - 1;
  constexpr size_t kFull = kFrameHeaderBytes + kFrame - 1;
  const size_t last = kBudget - (8u << 10) - 15 * kFull - kFrameHeaderBytes;
  const uint64_t before = RssMiB(target->pid()).value_or(0);
  std::vector<RawConnection> partial(16);
  std::string error;
  for (size_t i = 0; i < partial.size(); ++i) {
    ASSERT_TRUE(partial[i].Connect(target->port(), &error)) << error;
    const size_t body = i < 15 ? kFrame - 1 : last;
    ASSERT_EQ(partial[i].Send(FrameHeader(kFrame) + std::string(body, 'p')),
              kFrameHeaderBytes + body);
  }
  // Read by the node: its resident memory has grown by nearly all of it (at most 10 s).
  uint64_t now = before;
  for (int i = 0; i < 100 && now < before + 250; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    now = RssMiB(target->pid()).value_or(0);
  }
  ASSERT_GE(now, before + 250) << "the node did not read the partial frames";
  for (RawConnection& conn : partial) {
    EXPECT_FALSE(conn.WaitClosedByPeer(milliseconds(1))) << "a partial frame was dropped";
  }
  constexpr int kRequests = 3000;
  std::string frames;
  wire::Envelope status;
  status.mutable_status();
  for (int i = 1; i <= kRequests; ++i) {
    status.set_request_id(static_cast<uint64_t>(i));
    ASSERT_TRUE(EncodeFrame(status, &frames));
  }
  RawConnection client;
  ASSERT_TRUE(client.Connect(target->port(), &error)) << error;
  ASSERT_EQ(client.Send(frames), frames.size());
  FrameDecoder decoder;
  wire::Envelope reply;
  int answered = 0;
  bool closed = false;
  char buf[65536];
  for (int guard = 0; guard < 100000 && answered < kRequests && !closed; ++guard) {
    pollfd pfd{client.fd(), POLLIN, 0};
    if (::poll(&pfd, 1, 10000) <= 0) break;
    const ssize_t n = ::recv(client.fd(), buf, sizeof(buf), 0);
    closed = n <= 0;
    if (closed) break;
    decoder.Feed(std::string_view(buf, static_cast<size_t>(n)));
    while (decoder.Next(&reply) == FrameDecoder::Result::kFrame) {
      EXPECT_EQ(reply.request_id(), static_cast<uint64_t>(answered + 1));
      EXPECT_TRUE(reply.has_status_resp());
      ++answered;
    }
  }
  EXPECT_EQ(answered, kRequests) << (closed ? "the node closed the pipelining client" : "");
  partial.clear();
  ExpectServes(target, "a pipelining client beside a full input budget");
}

TEST_F(ResourceTest, AStreamOfFramesIsNotMistakenForASlowOne) {
  NodeProcess* target = StartRing();
  ASSERT_NE(target, nullptr);
  // Status requests every 50 ms for 2 s (twice the frame deadline), each write ending four
  // bytes into the next frame, so that some frame is always incomplete.
  wire::Envelope status;
  status.mutable_status();
  std::string frames;
  for (int i = 0; i < 41; ++i) {
    status.set_request_id(static_cast<uint64_t>(i + 1));
    std::string payload;
    ASSERT_TRUE(status.SerializeToString(&payload));
    frames += FrameHeader(static_cast<uint32_t>(payload.size())) + payload;
  }
  const size_t frame_bytes = frames.size() / 41;
  RawConnection conn;
  std::string error;
  ASSERT_TRUE(conn.Connect(target->port(), &error)) << error;
  size_t sent = 0;
  for (int i = 0; i < 40; ++i) {
    const size_t upto = std::min(frames.size(), (static_cast<size_t>(i) + 1) * frame_bytes + 4);
    conn.Send(frames.substr(sent, upto - sent));
    sent = upto;
    ASSERT_FALSE(conn.WaitClosedByPeer(milliseconds(50)))
        << "closed after " << i << " frames although every frame arrived within 50 ms";
  }
}

TEST_F(ResourceTest, LargeFramesDoNotStayInMemoryOnceHandled) {
  NodeProcess* target = StartRing();
  ASSERT_NE(target, nullptr);
  const uint64_t before = RssMiB(target->pid()).value_or(0);
  // 24 connections each send one whole 15 MiB put (refused: the value is over 1 MiB) and stay
  // open.
  const std::string frame = BigPutFrame();
  std::vector<RawConnection> conns(24);
  std::string error;
  for (RawConnection& conn : conns) {
    ASSERT_TRUE(conn.Connect(target->port(), &error)) << error;
    conn.Send(frame);
  }
  std::this_thread::sleep_for(milliseconds(500));
  const uint64_t after = RssMiB(target->pid()).value_or(0);
  EXPECT_LT(after, before + 96) << "RSS went from " << before << " to " << after
                                << " MiB with 24 handled 15 MiB frames";
  ExpectServes(target, "24 handled 15 MiB frames");
}

TEST_F(ResourceTest, ALargeFrameDoesNotStayInMemoryWhileTheNextIsBegun) {
  // One node with a frame deadline far longer than the test, which would otherwise close the
  // connections and free everything before it ends.
  NodeOptions o = FastNodes();
  o.extra_args = {"--frame-deadline-ms", "120000"};
  NodeProcess* target = cluster().StartNode(o);
  ASSERT_NE(target, nullptr);
  addrs_ = {target->addr()};
  const uint64_t before = RssMiB(target->pid()).value_or(0);
  // 24 connections, one after the other (within the node's budget for unfinished frames),
  // each send one whole 15 MiB put (refused: over 1 MiB) and the first byte of another
  // frame, and stay: the node holds one byte of each, not the buffer the large frame needed.
  const std::string frames = BigPutFrame() + FrameHeader(100).substr(0, 1);
  std::vector<RawConnection> conns(24);
  std::string error;
  for (RawConnection& conn : conns) {
    ASSERT_TRUE(conn.Connect(target->port(), &error)) << error;
    conn.Send(frames);
    // Reads the answer to the put (the frame was handled); the node keeps the connection.
    ASSERT_FALSE(conn.WaitClosedByPeer(milliseconds(200)));
  }
  const uint64_t after = RssMiB(target->pid()).value_or(0);
  EXPECT_LT(after, before + 96) << "RSS went from " << before << " to " << after
                                << " MiB with 24 handled 15 MiB frames, each followed by a byte";
  ExpectServes(target, "24 handled 15 MiB frames, each followed by a byte");
}

TEST_F(ResourceTest, APeerThatDribblesItsAnswerIsDroppedByTheNodeThatDialedIt) {
  // The first join address answers with the head of a 1 MiB frame and then a byte every
  // 100 ms: the joining node gives up on it, joins through the second, and closes the
  // dribbled connection once the frame has not completed within the frame deadline.
  auto peer = std::make_unique<DribblingPeer>(FrameHeader(1u << 20));
  ASSERT_GT(peer->port(), 0) << "could not listen on 127.0.0.1";
  NodeOptions o = FastNodes();
  o.extra_args = {"--frame-deadline-ms", "1000"};
  NodeProcess* seed = cluster().StartNode(o);
  ASSERT_NE(seed, nullptr);
  NodeProcess* node = cluster().StartNode(o, LocalAddr(peer->port()) + "," + seed->addr());
  ASSERT_NE(node, nullptr);
  EXPECT_GE(peer->accepted(), 1);
  EXPECT_TRUE(PollUntil([&] { return peer->closed_by_node() >= 1; }, milliseconds(8000)))
      << "the node kept a dialed connection whose frame had dribbled in for 8 s";
  peer.reset();  // the node keeps probing the address it was given; now nothing listens there
  addrs_ = {seed->addr(), node->addr()};
  ASSERT_TRUE(WaitForRing(cluster(), addrs_));
  ExpectServes(node, "a dribbling join address");
}

TEST_F(ResourceTest, OneHostCannotTakeEveryConnection) {
  NodeProcess* target = StartRing({"--max-connections-per-host", "50"});
  ASSERT_NE(target, nullptr);
  std::string error;
  // 80 connections from 127.0.0.2: the 30 over the limit are closed at once.
  std::vector<RawConnection> conns(80);
  int refused = 0;
  for (RawConnection& conn : conns) {
    ASSERT_TRUE(conn.Connect(target->port(), &error, "127.0.0.2")) << error;
  }
  for (RawConnection& conn : conns) {
    if (conn.WaitClosedByPeer(milliseconds(50))) ++refused;
  }
  EXPECT_EQ(refused, 30);
  // Clients and peers from other addresses are served meanwhile.
  ExpectServes(target, "50 connections from one host");
  RawConnection other;
  ASSERT_TRUE(other.Connect(target->port(), &error, "127.0.0.3")) << error;
  EXPECT_FALSE(other.WaitClosedByPeer(milliseconds(300)));
}

}  // namespace
}  // namespace chord::testing
