// Delays on real processes: a key's owner is stopped with SIGSTOP (as a partitioned or
// overloaded machine would be) while two writes, A and then B, are acknowledged through other
// nodes; when the owner runs again 8 s later it reads the forward of A that waited in its
// socket. Every node must then read B: a late copy never outranks a write acknowledged after
// it. Also measures what a client sees meanwhile. Owners are computed here from SHA-1.
#include <signal.h>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cluster_fixture.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

class LateWriteTest : public ClusterTest {};

TEST_F(LateWriteTest, AWriteQueuedAtAStoppedOwnerNeverBeatsANewerAcknowledgedWrite) {
  ASSERT_TRUE(cluster().StartNodes(5, WithReplicas(FastNodes(), 3)));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const std::string key = "register";
  const std::string owner = OwnerOf(Sha1Hex(key), SortedRing(addrs)).addr;
  std::vector<std::string> others;
  for (const auto& a : addrs) {
    if (a != owner) others.push_back(a);
  }
  ChordClient first(others[0], 20000);
  ChordClient second(others[1], 20000);
  ASSERT_TRUE(IsOk(first.Put(key, "v0")));

  NodeProcess* stopped = cluster().FindByAddr(owner);
  ASSERT_TRUE(stopped->Signal(SIGSTOP));
  const auto stopped_at = Clock::now();
  const auto a = first.Put(key, "A");
  const int64_t a_ms = MsSince(stopped_at);
  const auto b = second.Put(key, "B");
  const int64_t b_ms = MsSince(stopped_at) - a_ms;
  ASSERT_TRUE(IsOk(a)) << Describe(a);
  ASSERT_TRUE(IsOk(b)) << Describe(b);
  std::cout << "[late-write] owner " << owner << " stopped: put A acknowledged after " << a_ms
            << " ms, put B after " << b_ms << " ms more\n";
  EXPECT_LT(a->version(), b->version());

  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::max<int64_t>(0, 8000 - MsSince(stopped_at))));
  ASSERT_TRUE(stopped->Signal(SIGCONT));
  // Whatever it does with what waited for it, the ring settles on B (bounded wait).
  std::string last;
  const bool all_b = PollUntil(
      [&] {
        for (const auto& via : addrs) {
          ChordClient c(via, 5000);
          auto r = c.Get(key);
          if (!IsOk(r) || r->value() != "B") {
            last = via + ": " + Describe(r);
            return false;
          }
        }
        return true;
      },
      std::chrono::milliseconds(20000), std::chrono::milliseconds(500));
  EXPECT_TRUE(all_b) << "after SIGCONT not every node reads B; last: " << last;
  // And it stays B: nothing delayed surfaces later.
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  for (const auto& via : addrs) {
    ChordClient c(via, 5000);
    auto r = c.Get(key);
    EXPECT_TRUE(IsOk(r) && r->value() == "B") << via << ": " << Describe(r);
  }
}

}  // namespace
}  // namespace chord::testing
