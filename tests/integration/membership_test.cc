// Multi-process tests of membership changes: a join moves exactly the keys of the new node's
// range and no other; a graceful leave (SIGTERM) hands every key to the successor and loses
// none. Expected placements are computed here from SHA-1 with OpenSSL. The nodes run with
// --replicas 1 so that each key has exactly one copy (R = 3 is in replication_test.cc).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cluster_fixture.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

constexpr int kKeys = 300;
constexpr int kMaxReported = 10;

// These tests check single-copy placement (each key on its owner only), so they run with
// --replicas 1, still a supported mode; replication_test.cc covers R = 3.
NodeOptions SingleCopy() { return WithReplicas(FastNodes(), 1); }

// key -> the one node holding it; adds a failure for keys held by zero or several nodes.
std::map<std::string, std::string> SingleHolders(const std::map<std::string, std::string>& keys,
                                                 const std::vector<std::string>& addrs) {
  const auto holders = HoldersByKey(addrs);
  std::map<std::string, std::string> out;
  int wrong = 0;
  for (const auto& [key, value] : keys) {
    const auto it = holders.find(key);
    if (it == holders.end() || it->second.size() != 1) {
      if (++wrong <= kMaxReported) {
        ADD_FAILURE() << key << " is held by " << (it == holders.end() ? 0 : it->second.size())
                      << " nodes, expected exactly one";
      }
      continue;
    }
    out[key] = it->second.front();
  }
  EXPECT_EQ(wrong, 0);
  return out;
}

void ExpectAllReadable(const std::string& addr, const std::map<std::string, std::string>& keys) {
  ChordClient client(addr);
  int wrong = 0;
  for (const auto& [key, value] : keys) {
    auto r = client.Get(key);
    if (!IsOk(r) || r->value() != value) {
      if (++wrong <= kMaxReported) ADD_FAILURE() << "get " << key << ": " << Describe(r);
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << keys.size() << " keys read through " << addr;
}

TEST_F(ClusterTest, JoinMovesExactlyTheKeysOfTheNewRange) {
  ASSERT_TRUE(cluster().StartNodes(4, SingleCopy()));
  const std::vector<std::string> old_addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), old_addrs));
  const auto keys = MakeKeys("join", kKeys);
  PutAll(old_addrs[0], keys);
  const auto before = SingleHolders(keys, old_addrs);
  ASSERT_EQ(before.size(), keys.size());

  NodeProcess* joiner = cluster().StartNode(SingleCopy(), old_addrs[1]);
  ASSERT_NE(joiner, nullptr);
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_EQ(addrs.size(), 5u);
  const std::vector<Member> ring = SortedRing(addrs);
  const Member& pred = PredecessorOf(joiner->addr(), ring);

  // The keys of the new range (pred(new), new].
  std::set<std::string> expected_moved;
  for (const auto& [key, value] : keys) {
    if (InHalfOpen(Sha1Hex(key), pred.id, joiner->id())) expected_moved.insert(key);
  }

  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  // The transfer is done when the new node holds exactly its range and no key is held twice;
  // require the count to stay put for one more poll.
  std::optional<size_t> last;
  std::string why;
  const bool settled = PollUntil(
      [&] {
        const auto mine = LiveRecordCount(joiner->addr());
        const auto total = TotalLiveRecords(addrs);
        const bool stable = mine && last && *mine == *last;
        last = mine;
        why = "new node holds " + (mine ? std::to_string(*mine) : "?") + " (expected " +
              std::to_string(expected_moved.size()) + "), ring holds " +
              (total ? std::to_string(*total) : "?") + " (expected " + std::to_string(keys.size()) +
              ")";
        return stable && *mine == expected_moved.size() && total && *total == keys.size();
      },
      milliseconds(15000));
  EXPECT_TRUE(settled) << "the key transfer did not settle: " << why;

  const auto after = SingleHolders(keys, addrs);
  size_t moved = 0;
  int wrong = 0;
  for (const auto& [key, value] : keys) {
    const auto it = after.find(key);
    if (it == after.end()) continue;  // already reported
    const std::string want = expected_moved.count(key) ? joiner->addr() : before.at(key);
    if (it->second != before.at(key)) ++moved;
    if (it->second != want && ++wrong <= kMaxReported) {
      ADD_FAILURE() << key << " (id " << Sha1Hex(key) << ") is on " << it->second << ", expected "
                    << want << " (was on " << before.at(key) << ")";
    }
  }
  EXPECT_EQ(wrong, 0);
  std::cout << "[join] keys moved to the new node: " << moved
            << "; keys in its range (pred, new]: " << expected_moved.size()
            << "; K/N = " << keys.size() << "/" << addrs.size() << " = "
            << keys.size() / addrs.size() << "\n";
  RecordProperty("keys_moved", static_cast<int>(moved));
  RecordProperty("keys_expected", static_cast<int>(expected_moved.size()));
  EXPECT_EQ(moved, expected_moved.size());

  // Nothing was lost on the way, and the new node serves reads too.
  ExpectAllReadable(joiner->addr(), keys);
}

TEST_F(ClusterTest, SigtermLeaveLosesNoKey) {
  ASSERT_TRUE(cluster().StartNodes(5, SingleCopy()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const auto keys = MakeKeys("leave", kKeys);
  PutAll(addrs[0], keys);
  const auto before = SingleHolders(keys, addrs);
  ASSERT_EQ(before.size(), keys.size());

  // The leaver: the node holding the most keys, other than the one the test reads through.
  std::map<std::string, std::vector<std::string>> keys_on;
  for (const auto& [key, holder] : before) keys_on[holder].push_back(key);
  std::string leaver_addr;
  for (const std::string& a : addrs) {
    if (a == addrs[0]) continue;
    if (leaver_addr.empty() || keys_on[a].size() > keys_on[leaver_addr].size()) leaver_addr = a;
  }
  const std::vector<std::string>& leaver_keys = keys_on[leaver_addr];
  ASSERT_FALSE(leaver_keys.empty());
  const Member successor = SuccessorOf(leaver_addr, SortedRing(addrs));
  NodeProcess* leaver = cluster().FindByAddr(leaver_addr);
  ASSERT_NE(leaver, nullptr);

  ASSERT_TRUE(leaver->Signal(SIGTERM));
  const auto status = leaver->WaitExit(milliseconds(10000));
  ASSERT_TRUE(status.has_value()) << leaver_addr << " did not exit within 10 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << leaver_addr << " ended with wait status " << *status << " after SIGTERM";

  const std::vector<std::string> remaining = cluster().RunningAddrs();
  ASSERT_EQ(remaining.size(), 4u);
  ASSERT_TRUE(WaitForRing(cluster(), remaining));

  ExpectAllReadable(remaining[0], keys);

  const auto after = SingleHolders(keys, remaining);
  int wrong = 0;
  for (const auto& [key, value] : keys) {
    const auto it = after.find(key);
    if (it == after.end()) continue;  // already reported
    const std::string want = before.at(key) == leaver_addr ? successor.addr : before.at(key);
    if (it->second != want && ++wrong <= kMaxReported) {
      ADD_FAILURE() << key << " is on " << it->second << ", expected " << want << " (was on "
                    << before.at(key) << ")";
    }
  }
  EXPECT_EQ(wrong, 0);
  std::cout << "[leave] " << leaver_addr << " handed " << leaver_keys.size()
            << " keys to its successor " << successor.addr << "\n";
}

// A successor that stops answering for a little longer than one RPC timeout (a pause: GC,
// a SIGSTOP, a loaded host) is asked once more before it is dropped. The second request must
// really be sent: it goes on a fresh connection, not on the one that stalled (which the node
// closes as it gives up on the first request, and which would take the second one down with
// it at once).
TEST_F(ClusterTest, ASuccessorSlowForOneTimeoutIsAskedAgainNotDropped) {
  NodeOptions options = FastNodes();
  options.log_level = "info";
  options.extra_args = {"--rpc-timeout-ms", "1000"};
  ASSERT_TRUE(cluster().StartNodes(3, options));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const auto ring = SortedRing(addrs);
  const std::string paused = ring[1].addr;
  NodeProcess* before = cluster().FindByAddr(PredecessorOf(paused, ring).addr);
  NodeProcess* target = cluster().FindByAddr(paused);
  ASSERT_NE(before, nullptr);
  ASSERT_NE(target, nullptr);
  // Stabilization asks every 200 ms; a request sent during the pause times out after 1 s,
  // and its second try is answered when the node runs again, within the second second.
  ASSERT_TRUE(target->Signal(SIGSTOP));
  std::this_thread::sleep_for(std::chrono::milliseconds(1400));
  ASSERT_TRUE(target->Signal(SIGCONT));
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  const std::string log = before->LogTail(100000);
  size_t dropped = 0;
  for (size_t at = log.find("successor "); at != std::string::npos;
       at = log.find("successor ", at + 1)) {
    const std::string line = log.substr(at, log.find('\n', at) - at);
    if (line.find("@" + paused + " did not answer") != std::string::npos) ++dropped;
  }
  EXPECT_EQ(dropped, 0u) << before->addr() << " dropped " << paused << " as dead:\n"
                         << before->LogTail(30);
  EXPECT_TRUE(WaitForRing(cluster(), addrs));
}

}  // namespace
}  // namespace chord::testing
