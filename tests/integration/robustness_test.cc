// Multi-process robustness test: hostile or idle TCP peers must not stop a chord-node from
// serving everyone else. Raw sockets speak to the node directly, bypassing the client.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace chord::testing
