// Consistency per request and hinted hand-off on real processes (issue 14). Holders are
// computed here from SHA-1 of the key and the sorted node ids (cluster_fixture.h), never by
// asking the nodes; nodes are stopped by PID (SIGKILL, SIGSTOP / SIGCONT). Anti-entropy is
// slowed to 600 s where only a quorum read or a hint may be what repairs a copy.
#include <signal.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cluster_fixture.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

using std::chrono::milliseconds;

class ConsistencyTest : public ClusterTest {};

NodeOptions SlowAntiEntropy(NodeOptions o) {
  o.anti_entropy_ms = 600000;
  return WithReplicas(std::move(o), 3);
}

// The record `addr` holds for `key` (live or tombstone), from its ListKeys; nullopt if none.
std::optional<wire::Record> RecordOn(const std::string& addr, const std::string& key) {
  ChordClient c(addr, 5000);
  auto records = c.ListKeys(/*with_values=*/true);
  EXPECT_TRUE(records.ok()) << addr << ": " << records.status().message();
  if (!records.ok()) return std::nullopt;
  for (const auto& r : *records) {
    if (r.key() == key) return r;
  }
  return std::nullopt;
}

TEST_F(ConsistencyTest, QuorumSucceedsAndAllFailsWithOneReplicaKilled) {
  ASSERT_TRUE(cluster().StartNodes(3, WithReplicas(FastNodes(), 3)));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const std::string key = "consistency-key";
  const std::vector<Member> holders = ReplicaHoldersOf(Sha1Hex(key), SortedRing(addrs), 3);
  ASSERT_EQ(holders.size(), 3u);
  const std::string owner = holders[0].addr;
  const std::string victim = holders[2].addr;
  cluster().FindByAddr(victim)->Kill();

  const CommandResult put =
      cluster().Chordctl({"--node", owner, "put", key, "v1", "--consistency", "quorum", "--json"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  const auto put_doc = nlohmann::json::parse(put.out, nullptr, false);
  ASSERT_FALSE(put_doc.is_discarded()) << put.out;
  EXPECT_EQ(put_doc.value("acks", 0), 2) << put.out;
  EXPECT_EQ(put_doc.value("required", 0), 2) << put.out;

  const CommandResult get =
      cluster().Chordctl({"--node", owner, "get", key, "--consistency", "quorum"});
  EXPECT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(get.out, "v1\n");

  const CommandResult all =
      cluster().Chordctl({"--node", owner, "put", key, "v2", "--consistency", "all"});
  EXPECT_EQ(all.exit_code, 3) << all.out << all.err;
  EXPECT_NE(all.err.find("only 2 of 3 replicas stored the write (consistency all needs 3)"),
            std::string::npos)
      << all.err;

  const CommandResult get_all =
      cluster().Chordctl({"--node", owner, "get", key, "--consistency", "all"});
  EXPECT_EQ(get_all.exit_code, 3) << get_all.out << get_all.err;
  EXPECT_NE(get_all.err.find("replicas answered the read"), std::string::npos) << get_all.err;

  const auto status = StatusOf(cluster(), owner);
  ASSERT_TRUE(status);
  EXPECT_GE((*status)["data"].value("writes_failed", 0), 1) << status->dump();
}

TEST_F(ConsistencyTest, AQuorumReadRepairsAStaleReplica) {
  ASSERT_TRUE(cluster().StartNodes(3, SlowAntiEntropy(FastNodes())));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const std::string key = "repair-key";
  const std::vector<Member> holders = ReplicaHoldersOf(Sha1Hex(key), SortedRing(addrs), 3);
  const std::string owner = holders[0].addr;
  const std::string stale = holders[1].addr;
  ChordClient client(owner, 20000);
  // A ring that has just formed may not have filled the owner's successor list yet (the
  // pointers agree a round before the lists do): `all` needs every replica, so ask again.
  Result<wire::DataResponse> first = Status::Unavailable("not tried");
  PollUntil(
      [&] {
        first = client.Put(key, "old", DataOptions{wire::CONSISTENCY_ALL});
        return IsOk(first);
      },
      milliseconds(10000), milliseconds(200));
  ASSERT_TRUE(IsOk(first)) << Describe(first);

  // Stopped during the write, and long enough that the copy queued for it is past its
  // deadline when it runs again (refused then): it keeps "old".
  NodeProcess* stopped = cluster().FindByAddr(stale);
  ASSERT_TRUE(stopped->Signal(SIGSTOP));
  auto put = client.Put(key, "new", DataOptions{wire::CONSISTENCY_QUORUM});
  ASSERT_TRUE(IsOk(put)) << Describe(put);
  std::this_thread::sleep_for(milliseconds(4000));
  ASSERT_TRUE(stopped->Signal(SIGCONT));
  ASSERT_TRUE(WaitForRing(cluster(), addrs, milliseconds(30000)));
  auto before = RecordOn(stale, key);
  ASSERT_TRUE(before);
  ASSERT_EQ(before->value(), "old") << "the replica is not stale; the test cannot show repair";

  const CommandResult get =
      cluster().Chordctl({"--node", owner, "get", key, "--consistency", "all", "--json"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  const auto doc = nlohmann::json::parse(get.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << get.out;
  EXPECT_EQ(doc.value("value", ""), "new");
  EXPECT_EQ(doc.value("acks", 0), 3);
  EXPECT_EQ(doc.value("required", 0), 3);
  // The repair is sent as the read is answered: poll (bounded) until it has landed.
  std::string last;
  EXPECT_TRUE(PollUntil(
      [&] {
        auto rec = RecordOn(stale, key);
        last = rec ? rec->value() : "(none)";
        return rec && rec->value() == "new";
      },
      milliseconds(10000)))
      << "the stale replica " << stale << " still holds " << last;
}

// Pauses a node (SIGSTOP) of a 5-node ring whose stabilization is slow enough that the paused
// node stays in the successor lists while the writes run (so they take the hint path), and
// writes, at quorum, six keys it holds as a replica (not as owner), all at once, each straight
// to its owner. Returns key -> owner, or an empty map after a gtest failure.
std::map<std::string, std::string> PauseAndWriteHinted(Cluster& cluster, NodeOptions o,
                                                       std::string* paused_addr) {
  o = SlowAntiEntropy(std::move(o));
  o.stabilize_ms = 3000;
  o.extra_args = {"--rpc-timeout-ms", "500"};  // keeps the writes quick
  if (!cluster.StartNodes(5, o)) return {};
  const std::vector<std::string> addrs = cluster.RunningAddrs();
  if (!WaitForRing(cluster, addrs, milliseconds(60000))) return {};
  const std::vector<Member> ring = SortedRing(addrs);
  // Whole successor lists, not only the pointers: a write goes to the replica set the owner's
  // list names, and slow stabilization spreads the lists slowly.
  std::string why;
  const bool lists = PollUntil(
      [&] {
        for (size_t i = 0; i < ring.size(); ++i) {
          auto s = StatusOf(cluster, ring[i].addr);
          if (!s || !(*s)["successors"].is_array() || (*s)["successors"].size() < ring.size() - 1) {
            why = ring[i].addr + " has a short successor list";
            return false;
          }
          for (size_t j = 1; j < ring.size(); ++j) {
            const auto& n = (*s)["successors"][j - 1];
            if (!n.is_object() || n.value("addr", "") != ring[(i + j) % ring.size()].addr) {
              why = ring[i].addr + "'s successor list is not in ring order yet";
              return false;
            }
          }
        }
        return true;
      },
      milliseconds(60000), milliseconds(500));
  if (!lists) {
    ADD_FAILURE() << why;
    return {};
  }
  const std::string paused = ring[2].addr;
  *paused_addr = paused;
  std::map<std::string, std::string> owner_of;
  for (int i = 0; owner_of.size() < 6 && i < 10000; ++i) {
    const std::string key = "hinted-" + std::to_string(i);
    const auto holders = ReplicaHoldersOf(Sha1Hex(key), ring, 3);
    if (holders[0].addr != paused && (holders[1].addr == paused || holders[2].addr == paused)) {
      owner_of[key] = holders[0].addr;
    }
  }
  EXPECT_EQ(owner_of.size(), 6u);
  if (!cluster.FindByAddr(paused)->Signal(SIGSTOP)) {
    ADD_FAILURE() << "cannot stop " << paused;
    return {};
  }
  std::vector<std::pair<std::string, std::string>> jobs(owner_of.begin(), owner_of.end());
  std::vector<std::optional<Result<wire::DataResponse>>> results(jobs.size());
  std::vector<std::thread> writers;
  for (size_t i = 0; i < jobs.size(); ++i) {
    writers.emplace_back([&, i] {
      ChordClient c(jobs[i].second, 20000);
      results[i] =
          c.Put(jobs[i].first, "value-of-" + jobs[i].first, DataOptions{wire::CONSISTENCY_QUORUM});
    });
  }
  for (auto& t : writers) t.join();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto& r = *results[i];
    EXPECT_TRUE(IsOk(r)) << jobs[i].first << ": " << Describe(r);
    if (!IsOk(r)) return {};
    EXPECT_EQ(r->required(), 2u);
    EXPECT_GE(r->acks(), 2u);
  }
  return owner_of;
}

// Sum of a top-level status field over `addrs`; nullopt if a node does not answer.
std::optional<uint64_t> SumStatus(const Cluster& cluster, const std::vector<std::string>& addrs,
                                  const std::string& field, bool in_data = false) {
  uint64_t sum = 0;
  for (const auto& a : addrs) {
    auto s = StatusOf(cluster, a);
    if (!s) return std::nullopt;
    sum += in_data ? (*s)["data"].value(field, uint64_t{0}) : s->value(field, uint64_t{0});
  }
  return sum;
}

// After SIGCONT of `paused`: every hint delivered and every key on exactly its R holders.
void ExpectDeliveredAndPlaced(const Cluster& cluster, const std::string& paused,
                              const std::map<std::string, std::string>& owner_of) {
  ASSERT_TRUE(cluster.FindByAddr(paused)->Signal(SIGCONT));
  const std::vector<std::string> addrs = cluster.RunningAddrs();
  std::string last;
  const bool delivered = PollUntil(
      [&] {
        auto left = SumStatus(cluster, addrs, "hints_pending");
        if (!left) {
          last = "a node did not answer status";
          return false;
        }
        last = std::to_string(*left) + " hints pending";
        return *left == 0 && PlacementMatches(addrs, 3, KeySet(owner_of), {}, &last);
      },
      milliseconds(60000), milliseconds(500));
  EXPECT_TRUE(delivered) << last;
  auto delivered_count = SumStatus(cluster, addrs, "hints_delivered", /*in_data=*/true);
  ASSERT_TRUE(delivered_count);
  EXPECT_GT(*delivered_count, 0u);
  // Exactly R copies: the hint holders did not keep them as records.
  auto copies = LiveCopiesByKey(addrs);
  for (const auto& [key, owner] : owner_of) EXPECT_EQ(copies[key], 3u) << key;
}

TEST_F(ConsistencyTest, HintsKeepQuorumWritesAvailableAndAreDeliveredWhenTheReplicaReturns) {
  std::string paused;
  const auto owner_of = PauseAndWriteHinted(cluster(), FastNodes(), &paused);
  ASSERT_FALSE(owner_of.empty());
  std::vector<std::string> others;
  for (const auto& a : cluster().RunningAddrs()) {
    if (a != paused) others.push_back(a);
  }
  // Each key written again at once, while the replica is still away (and still in its
  // owner's successor list): its hint is replaced, not added.
  std::vector<std::thread> writers;
  for (const auto& [key, owner] : owner_of) {
    writers.emplace_back([&, key = key, owner = owner] {
      ChordClient c(owner, 20000);
      auto r = c.Put(key, "second-value-of-" + key, DataOptions{wire::CONSISTENCY_QUORUM});
      EXPECT_TRUE(IsOk(r)) << key << ": " << Describe(r);
    });
  }
  for (auto& t : writers) t.join();
  auto pending = SumStatus(cluster(), others, "hints_pending");
  ASSERT_TRUE(pending);
  EXPECT_GT(*pending, 0u) << "no write took the hint path";
  auto stored_now = SumStatus(cluster(), others, "hints_stored", /*in_data=*/true);
  auto replaced = SumStatus(cluster(), others, "hints_replaced", /*in_data=*/true);
  ASSERT_TRUE(stored_now && replaced);
  EXPECT_EQ(*stored_now, *pending) << "a second write of a key added a hint";
  EXPECT_GT(*replaced, 0u);
  // Longer than a request's deadline: the copies queued at the paused node are refused when
  // it runs again, so only the hints can bring them.
  std::this_thread::sleep_for(milliseconds(3500));
  ExpectDeliveredAndPlaced(cluster(), paused, owner_of);
  // Every hint stored was delivered or dropped, replaced ones not counted twice (no node
  // restarted, so none was loaded).
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  auto stored = SumStatus(cluster(), addrs, "hints_stored", /*in_data=*/true);
  auto delivered = SumStatus(cluster(), addrs, "hints_delivered", /*in_data=*/true);
  auto dropped = SumStatus(cluster(), addrs, "hints_dropped", /*in_data=*/true);
  ASSERT_TRUE(stored && delivered && dropped);
  EXPECT_EQ(*stored, *delivered + *dropped);
  // The paused replica holds the second values.
  auto listed = ChordClient(paused).ListKeys(/*with_values=*/true);
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  std::map<std::string, std::string> held;
  for (const wire::Record& r : *listed) held[r.key()] = r.value();
  for (const auto& [key, owner] : owner_of) EXPECT_EQ(held[key], "second-value-of-" + key) << key;
}

TEST_F(ConsistencyTest, HintsSurviveARestartOfTheirHolder) {
  std::string paused;
  const auto owner_of = PauseAndWriteHinted(cluster(), OnDisk(FastNodes()), &paused);
  ASSERT_FALSE(owner_of.empty());
  std::string holder;
  for (const auto& a : cluster().RunningAddrs()) {
    if (a == paused) continue;
    auto s = StatusOf(cluster(), a);
    ASSERT_TRUE(s) << a;
    if (s->value("hints_pending", uint64_t{0}) > 0) holder = a;
  }
  ASSERT_FALSE(holder.empty()) << "no write took the hint path";
  auto before = StatusOf(cluster(), holder);
  ASSERT_TRUE(before);
  const uint64_t held = before->value("hints_pending", uint64_t{0});
  std::string via;
  for (const auto& a : cluster().RunningAddrs()) {
    if (a != paused && a != holder) via = a;
  }
  cluster().FindByAddr(holder)->Kill();
  ASSERT_NE(cluster().Restart(holder, via), nullptr);
  auto after = StatusOf(cluster(), holder);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->value("hints_pending", uint64_t{0}), held);
  ExpectDeliveredAndPlaced(cluster(), paused, owner_of);
}

}  // namespace
}  // namespace chord::testing
