// Multi-process tests of replication (R = 3): every key lives on its owner and the next two
// nodes clockwise. Crashes (SIGKILL, also of two neighbours at once, also of every node),
// joins, graceful leaves and a wiped disk must lose no acknowledged write, and the copies must
// come back to exactly the holders computed here: SHA-1 (OpenSSL) of the key and of the node
// addresses, the sorted ring, owner + next R - 1. What was acknowledged is recorded by the
// test from the answers it got, never asked of the nodes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
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

using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;

constexpr int kReplicas = 3;
constexpr int kMaxReported = 10;  // mismatches spelled out before summarising

NodeOptions ReplicatedNodes() { return WithReplicas(FastNodes(), kReplicas); }

class ReplicationTest : public ClusterTest {};

int64_t MsSince(Clock::time_point start) {
  return duration_cast<milliseconds>(Clock::now() - start).count();
}

// SIGKILL to every node first, then reap them: the crashes happen at (nearly) one moment.
void KillTogether(const std::vector<NodeProcess*>& nodes) {
  for (NodeProcess* n : nodes) EXPECT_TRUE(n->Signal(SIGKILL)) << n->addr() << " was not running";
  for (NodeProcess* n : nodes) n->Kill();
}

std::vector<std::string> Without(std::vector<std::string> addrs,
                                 const std::vector<std::string>& gone) {
  addrs.erase(std::remove_if(addrs.begin(), addrs.end(),
                             [&](const std::string& a) {
                               return std::find(gone.begin(), gone.end(), a) != gone.end();
                             }),
              addrs.end());
  return addrs;
}

// An answer that settles what the ring holds for a key: a value or "not found".
bool IsDefinitive(const Result<wire::DataResponse>& r) { return IsOk(r) || IsNotFound(r); }

// Gets `key`, asking again (every 200 ms) while the answer is not definitive (unreachable,
// UNAVAILABLE, NOT_OWNER ...) until `deadline`. *attempts counts the gets.
Result<wire::DataResponse> GetUntilAnswered(ChordClient& client, const std::string& key,
                                            Clock::time_point deadline, int* attempts) {
  *attempts = 0;
  for (int i = 0; i < 1000; ++i) {
    ++*attempts;
    auto r = client.Get(key);
    if (IsDefinitive(r) || Clock::now() >= deadline) return r;
    std::this_thread::sleep_for(milliseconds(200));
  }
  return client.Get(key);
}

// Reads every key through `addr` (retrying answers that are not definitive until `timeout`):
// keys in `live` must return their value, keys in `deleted` "not found". Adds a failure per
// wrong or missing answer.
void ExpectReads(const std::string& addr, const std::map<std::string, std::string>& live,
                 const std::set<std::string>& deleted, milliseconds timeout) {
  ChordClient client(addr);
  const auto deadline = Clock::now() + timeout;
  int wrong = 0;
  int attempts = 0;
  for (const auto& [key, value] : live) {
    auto r = GetUntilAnswered(client, key, deadline, &attempts);
    if ((!IsOk(r) || r->value() != value) && ++wrong <= kMaxReported) {
      ADD_FAILURE() << "get " << key << " through " << addr << " (acknowledged value of "
                    << value.size() << " bytes): " << Describe(r);
    }
  }
  for (const std::string& key : deleted) {
    auto r = GetUntilAnswered(client, key, deadline, &attempts);
    if (!IsNotFound(r) && ++wrong <= kMaxReported) {
      ADD_FAILURE() << "get " << key << " through " << addr
                    << " (deleted, acknowledged): " << Describe(r);
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << live.size() << " live and " << deleted.size()
                      << " deleted keys read through " << addr;
}

// --- 1. Two neighbours crash at once ----------------------------------------------------------

TEST_F(ReplicationTest, TwoAdjacentCrashesLoseNoKeyAndRestoreThreeCopies) {
  constexpr int kNodes = 7;
  ASSERT_TRUE(cluster().StartNodes(kNodes, ReplicatedNodes()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const std::vector<Member> ring = SortedRing(addrs);

  const auto acked = PutAllAcknowledged(addrs[0], MakeKeys("adjacent", 300));
  ASSERT_FALSE(acked.empty());
  const std::set<std::string> keys = KeySet(acked);
  ASSERT_TRUE(WaitForPlacement(addrs, kReplicas, keys, {}, milliseconds(20000)))
      << "keys were not on their 3 computed holders before the crash";

  // The two nodes right after the reader in ring order: the reader's own replicas die, and
  // every key it owns is left with a single live copy.
  const std::string reader = addrs[0];
  const Member& first = SuccessorOf(reader, ring);
  const Member& second = SuccessorOf(first.addr, ring);
  const std::vector<std::string> victims = {first.addr, second.addr};
  const std::vector<std::string> survivors = Without(addrs, victims);
  ASSERT_EQ(survivors.size(), static_cast<size_t>(kNodes - 2));
  size_t single_copy = 0;  // keys whose 3 holders include both victims
  for (const std::string& key : keys) {
    const auto want = ExpectedHolders(key, addrs, kReplicas);
    if (std::count_if(want.begin(), want.end(), [&](const std::string& a) {
          return a == first.addr || a == second.addr;
        }) == 2) {
      ++single_copy;
    }
  }
  std::cout << "[replication] killing ring neighbours " << first.addr << " and " << second.addr
            << "; " << single_copy << " of " << keys.size() << " keys keep one live copy\n";

  const auto killed_at = Clock::now();
  KillTogether({cluster().FindByAddr(first.addr), cluster().FindByAddr(second.addr)});

  // Reads through a survivor run while the ring heals and re-replicates.
  struct ReadStats {
    std::vector<std::string> failures;
    int retried = 0;
    int max_attempts = 0;
    int64_t pass_ms = 0;
  } reads;
  std::thread read_thread([&] {
    ChordClient client(reader);
    const auto deadline = Clock::now() + milliseconds(30000);
    for (const auto& [key, value] : acked) {
      int attempts = 0;
      auto r = GetUntilAnswered(client, key, deadline, &attempts);
      if (attempts > 1) ++reads.retried;
      reads.max_attempts = std::max(reads.max_attempts, attempts);
      if (!IsOk(r) || r->value() != value) {
        reads.failures.push_back("get " + key + " through " + reader + " after " +
                                 std::to_string(attempts) + " attempts: " + Describe(r));
      }
    }
    reads.pass_ms = MsSince(killed_at);
  });

  std::string why;
  const bool restored =
      PollUntil([&] { return PlacementMatches(survivors, kReplicas, keys, {}, &why); },
                milliseconds(60000), milliseconds(200));
  const int64_t restore_ms = MsSince(killed_at);
  read_thread.join();

  std::cout << "[replication] after killing 2 adjacent of " << kNodes << " nodes: every key back "
            << "to 3 copies on its computed holders " << (restored ? "after " : "NOT within ")
            << restore_ms << " ms; reads of " << acked.size() << " keys through " << reader
            << " took " << reads.pass_ms << " ms, " << reads.retried << " needed a retry (at most "
            << reads.max_attempts << " attempts)\n";
  RecordProperty("restore_three_copies_ms", static_cast<int>(restore_ms));
  RecordProperty("read_pass_ms", static_cast<int>(reads.pass_ms));
  EXPECT_TRUE(restored) << "within 60 s of the crash: " << why;
  for (size_t i = 0; i < reads.failures.size() && i < kMaxReported; ++i) {
    ADD_FAILURE() << reads.failures[i];
  }
  EXPECT_TRUE(reads.failures.empty())
      << reads.failures.size() << " of " << acked.size() << " acknowledged keys unreadable";

  EXPECT_TRUE(WaitForRing(cluster(), survivors, milliseconds(30000)));
  // Still exactly the computed holders once the ring is confirmed healed.
  EXPECT_TRUE(PlacementMatches(survivors, kReplicas, keys, {}, &why)) << why;
  ExpectReads(survivors.back(), acked, {}, milliseconds(10000));
}

// --- 2. Every node crashes and restarts on its data directory ---------------------------------

TEST_F(ReplicationTest, AllNodesKilledAndRestartedKeepAcknowledgedWritesAndDeletes) {
  constexpr int kNodes = 5;
  const NodeOptions options = OnDisk(ReplicatedNodes());
  ASSERT_TRUE(cluster().StartNodes(kNodes, options));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));

  // Write, overwrite every fifth key, delete every fourth; track what was acknowledged. A key
  // with an operation that was not acknowledged leaves the expectations (and fails the test).
  const auto keys = MakeKeys("durable", 200);
  std::map<std::string, std::string> live = PutAllAcknowledged(addrs[0], keys);
  std::set<std::string> deleted;
  {
    ChordClient writer(addrs[1]);
    int i = 0;
    for (const auto& [key, value] : keys) {
      if (i++ % 5 != 0 || !live.count(key)) continue;
      const std::string v2 = "second " + value;
      auto r = writer.Put(key, v2);
      EXPECT_TRUE(IsOk(r)) << "overwrite " << key << ": " << Describe(r);
      if (IsOk(r)) {
        live[key] = v2;
      } else {
        live.erase(key);
      }
    }
    ChordClient deleter(addrs[2]);
    i = 0;
    for (const auto& [key, value] : keys) {
      if (i++ % 4 != 0 || !live.count(key)) continue;
      auto r = deleter.Delete(key);
      EXPECT_TRUE(IsOk(r)) << "delete " << key << ": " << Describe(r);
      live.erase(key);
      if (IsOk(r)) deleted.insert(key);
    }
  }
  ASSERT_FALSE(live.empty());
  ASSERT_FALSE(deleted.empty());

  // Crash every node right after the last acknowledgement: nothing had time to settle.
  KillTogether(cluster().nodes());
  ASSERT_TRUE(cluster().RunningAddrs().empty());

  const auto restarted_at = Clock::now();
  ASSERT_NE(cluster().Restart(addrs[0]), nullptr);
  for (size_t i = 1; i < addrs.size(); ++i) {
    ASSERT_NE(cluster().Restart(addrs[i], addrs[0]), nullptr);
  }
  ASSERT_TRUE(WaitForRing(cluster(), addrs, milliseconds(30000)));
  std::cout << "[replication] " << kNodes << " nodes restarted on their data directories; ring "
            << "consistent after " << MsSince(restarted_at) << " ms; checking " << live.size()
            << " live and " << deleted.size() << " deleted keys\n";

  // Through two different nodes: every acknowledged value, every acknowledged delete.
  ExpectReads(addrs[3], live, deleted, milliseconds(20000));
  ExpectReads(addrs[4], live, deleted, milliseconds(10000));
  // And the copies end up where they belong, with no deleted key resurrected anywhere.
  const bool placed =
      WaitForPlacement(addrs, kReplicas, KeySet(live), deleted, milliseconds(30000));
  std::cout << "[replication] placement after the restart " << (placed ? "settled" : "NOT settled")
            << " " << MsSince(restarted_at) << " ms after the first restart\n";
}

// --- 3. Overwrites through two nodes during a crash and a join ---------------------------------

// What one key's writer saw: the last acknowledged value, and the value of the one attempt
// after it that got no acknowledgement (the writer stops writing a key after such an attempt).
struct KeyHistory {
  std::optional<std::string> acked;
  std::optional<std::string> unanswered;
  int acked_writes = 0;
  int64_t last_ack_ms = -1;  // since the writers started
};

TEST_F(ReplicationTest, OverwritesDuringCrashAndJoinKeepLastAcknowledgedValue) {
  constexpr int kNodes = 5;
  constexpr int kKeys = 50;
  ASSERT_TRUE(cluster().StartNodes(kNodes, ReplicatedNodes()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));

  // Writes go through X and Y (never stopped); V crashes; a new node joins through X.
  const std::string x = addrs[0];
  const std::string y = addrs[1];
  const std::string victim = addrs[3];
  NodeProcess* v = cluster().FindByAddr(victim);
  ASSERT_NE(v, nullptr);
  std::vector<std::string> key_names;
  for (int i = 0; i < kKeys; ++i) key_names.push_back("hot-" + std::to_string(i));

  // Two writers; writer t owns the keys i % 2 == t, so each key has one sequential history,
  // and alternates the coordinator it writes through (X, Y, X, ...) round by round. Key i is
  // written until 2 s + i * 200 ms, so the last writes of the keys are spread over the whole
  // run: before the crash (at 3 s), between crash and join (5 s), during and after the join.
  const auto write_until = [](int i) { return milliseconds(2000 + i * 200); };
  std::vector<KeyHistory> history(kKeys);
  std::atomic<bool> stop{false};
  std::atomic<int> failed_attempts{0};
  Clock::time_point started;  // set before the writers start
  auto writer = [&](int t) {
    ChordClient via_x(x, 12000);
    ChordClient via_y(y, 12000);
    const auto hard_stop = Clock::now() + milliseconds(40000);
    for (int round = 0; round < 100000 && !stop && Clock::now() < hard_stop; ++round) {
      bool any = false;
      for (int i = t; i < kKeys && !stop; i += 2) {
        KeyHistory& h = history[i];
        if (h.unanswered || Clock::now() - started >= write_until(i)) continue;  // retired
        any = true;
        const std::string value =
            key_names[i] + " round " + std::to_string(round) + " writer " + std::to_string(t);
        ChordClient& client = (round + t) % 2 == 0 ? via_x : via_y;
        auto r = client.Put(key_names[i], value);
        if (IsOk(r)) {
          h.acked = value;
          ++h.acked_writes;
          h.last_ack_ms = MsSince(started);
        } else {
          h.unanswered = value;
          ++failed_attempts;
        }
      }
      if (!any) break;
      // A breather per round: plenty of overwrites, without starving tests run alongside.
      std::this_thread::sleep_for(milliseconds(10));
    }
  };
  started = Clock::now();
  std::thread w0(writer, 0);
  std::thread w1(writer, 1);

  // No fatal assertion until the writers are joined.
  std::this_thread::sleep_for(milliseconds(3000));
  v->Kill();
  const int64_t killed_ms = MsSince(started);
  std::this_thread::sleep_for(milliseconds(2000));
  NodeProcess* joiner = cluster().StartNode(ReplicatedNodes(), x);
  const int64_t joined_ms = MsSince(started);
  if (joiner != nullptr) {
    std::this_thread::sleep_for(milliseconds(std::max<int64_t>(0, 12000 - MsSince(started))));
  }
  stop = true;
  w0.join();
  w1.join();
  ASSERT_NE(joiner, nullptr);
  const int64_t wrote_ms = MsSince(started);

  int acked_writes = 0;
  int last_before_kill = 0;
  int last_before_join = 0;
  for (const KeyHistory& h : history) {
    acked_writes += h.acked_writes;
    if (h.last_ack_ms >= 0 && h.last_ack_ms < killed_ms) ++last_before_kill;
    if (h.last_ack_ms >= killed_ms && h.last_ack_ms < joined_ms) ++last_before_join;
  }
  std::cout << "[replication] " << acked_writes << " acknowledged overwrites of " << kKeys
            << " keys through " << x << " and " << y << " in " << wrote_ms << " ms (" << victim
            << " SIGKILLed at " << killed_ms << " ms, " << joiner->addr() << " joined by "
            << joined_ms << " ms); " << failed_attempts << " attempts unanswered or failed; last "
            << "acknowledged write of " << last_before_kill << " keys before the crash, of "
            << last_before_join << " between crash and join\n";
  RecordProperty("acknowledged_writes", acked_writes);
  RecordProperty("failed_attempts", failed_attempts.load());
  EXPECT_GT(acked_writes, kKeys) << "the writers got almost nothing acknowledged";

  const std::vector<std::string> members = cluster().RunningAddrs();
  ASSERT_EQ(members.size(), static_cast<size_t>(kNodes));
  ASSERT_TRUE(WaitForRing(cluster(), members, milliseconds(30000)));

  // Settled: every key that exists is on exactly its 3 computed holders, all with one value.
  std::string why;
  std::optional<RecordsByKey> records;
  const bool settled = PollUntil(
      [&] {
        records = TryRecordsByKey(members, /*with_values=*/true, &why);
        if (!records) return false;
        for (const std::string& key : key_names) {
          const auto it = records->find(key);
          if (it == records->end()) continue;  // no copy anywhere: checked below
          std::vector<std::string> got;
          for (const auto& [addr, record] : it->second) {
            if (!record.deleted()) got.push_back(addr);
          }
          std::sort(got.begin(), got.end());
          if (got != ExpectedHolders(key, members, kReplicas)) {
            why = key + " is held by " + std::to_string(got.size()) +
                  " nodes, not its 3 computed holders";
            return false;
          }
          for (const auto& [addr, record] : it->second) {
            if (record.value() != it->second.front().second.value()) {
              why = key + " has different values on " + it->second.front().first + " and " + addr;
              return false;
            }
          }
        }
        return true;
      },
      milliseconds(30000), milliseconds(250));
  EXPECT_TRUE(settled) << "the copies did not converge within 30 s: " << why;

  // Each key: its last acknowledged value, or the value of the one later unanswered attempt.
  auto allowed = [&](int i, const std::optional<std::string>& got) {
    const KeyHistory& h = history[i];
    return got == h.acked || (h.unanswered && got == h.unanswered);
  };
  auto explain = [&](int i) {
    const KeyHistory& h = history[i];
    return "expected \"" + h.acked.value_or("<not found>") + "\"" +
           (h.unanswered ? " or \"" + *h.unanswered + "\"" : std::string());
  };
  int wrong = 0;
  for (const std::string& via : {x, joiner->addr()}) {
    ChordClient reader(via);
    const auto deadline = Clock::now() + milliseconds(10000);
    for (int i = 0; i < kKeys; ++i) {
      int attempts = 0;
      auto r = GetUntilAnswered(reader, key_names[i], deadline, &attempts);
      std::optional<std::string> got;
      if (IsOk(r)) got = r->value();
      if ((!IsDefinitive(r) || !allowed(i, got)) && ++wrong <= kMaxReported) {
        ADD_FAILURE() << "get " << key_names[i] << " through " << via << ": " << Describe(r)
                      << (got ? " \"" + *got + "\"" : std::string()) << "; " << explain(i);
      }
    }
  }
  if (records) {
    for (int i = 0; i < kKeys; ++i) {
      const auto it = records->find(key_names[i]);
      if (it == records->end()) continue;
      for (const auto& [addr, record] : it->second) {
        const std::optional<std::string> got =
            record.deleted() ? std::nullopt : std::optional<std::string>(record.value());
        if (!allowed(i, got) && ++wrong <= kMaxReported) {
          ADD_FAILURE() << "the copy of " << key_names[i] << " on " << addr << " is \""
                        << got.value_or("<deleted>") << "\"; " << explain(i);
        }
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

// --- 4. Anti-entropy refills a node whose disk was wiped --------------------------------------

TEST_F(ReplicationTest, AntiEntropyRefillsANodeWhoseDataWasWiped) {
  constexpr int kNodes = 5;
  NodeOptions options = OnDisk(ReplicatedNodes());
  options.anti_entropy_ms = 1000;
  ASSERT_TRUE(cluster().StartNodes(kNodes, options));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));

  const auto acked = PutAllAcknowledged(addrs[0], MakeKeys("wiped", 200));
  ASSERT_FALSE(acked.empty());
  const std::set<std::string> keys = KeySet(acked);
  ASSERT_TRUE(WaitForPlacement(addrs, kReplicas, keys, {}, milliseconds(20000)));

  const std::string victim = addrs[2];
  size_t expected_on_victim = 0;
  for (const std::string& key : keys) {
    const auto want = ExpectedHolders(key, addrs, kReplicas);
    if (std::find(want.begin(), want.end(), victim) != want.end()) ++expected_on_victim;
  }
  ASSERT_GT(expected_on_victim, 0u);

  NodeProcess* v = cluster().FindByAddr(victim);
  ASSERT_NE(v, nullptr);
  const std::string data_dir = cluster().DataDir(v->port());
  ASSERT_FALSE(data_dir.empty());
  v->Kill();
  std::error_code ec;
  std::filesystem::remove_all(data_dir, ec);
  ASSERT_FALSE(ec) << "rm -rf " << data_dir << ": " << ec.message();
  ASSERT_TRUE(std::filesystem::create_directories(data_dir, ec)) << data_dir << ec.message();
  const auto restarted_at = Clock::now();
  ASSERT_NE(cluster().Restart(victim, addrs[0]), nullptr);

  std::string why;
  std::optional<size_t> on_victim;
  const bool refilled = PollUntil(
      [&] {
        on_victim = LiveRecordCount(victim);
        if (on_victim != expected_on_victim) {
          why = victim + " holds " + (on_victim ? std::to_string(*on_victim) : "?") + " of the " +
                std::to_string(expected_on_victim) + " keys it should";
          return false;
        }
        return PlacementMatches(addrs, kReplicas, keys, {}, &why);
      },
      milliseconds(45000), milliseconds(250));
  const int64_t refill_ms = MsSince(restarted_at);
  std::cout << "[replication] " << victim << " restarted with an empty data directory; "
            << expected_on_victim << " keys it should hold "
            << (refilled ? "were all back after " : "were NOT all back within ") << refill_ms
            << " ms\n";
  RecordProperty("refill_ms", static_cast<int>(refill_ms));
  EXPECT_TRUE(refilled) << why;

  ExpectReads(victim, acked, {}, milliseconds(10000));
  ExpectReads(addrs[4], acked, {}, milliseconds(10000));
}

// --- 5. Reads from a replica; placement after joins, leaves, small rings ----------------------

TEST_F(ReplicationTest, GetSucceedsRightAfterTheOwnerIsKilled) {
  ASSERT_TRUE(cluster().StartNodes(5, ReplicatedNodes()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const std::vector<Member> ring = SortedRing(addrs);
  const auto acked = PutAllAcknowledged(addrs[0], MakeKeys("fallback", 150));
  ASSERT_TRUE(WaitForPlacement(addrs, kReplicas, KeySet(acked), {}, milliseconds(20000)));

  // The victim: the node other than the reader that owns the most keys.
  const std::string reader = addrs[0];
  std::map<std::string, std::vector<std::string>> owned;
  for (const auto& [key, value] : acked) owned[OwnerOf(Sha1Hex(key), ring).addr].push_back(key);
  std::string victim;
  for (const std::string& a : addrs) {
    if (a != reader && (victim.empty() || owned[a].size() > owned[victim].size())) victim = a;
  }
  ASSERT_FALSE(owned[victim].empty());

  cluster().FindByAddr(victim)->Kill();
  // One get per key, at once: the keys of the dead owner first, then all others.
  ChordClient client(reader);
  int wrong = 0;
  int64_t slowest_ms = 0;
  const auto killed_at = Clock::now();
  auto check = [&](const std::string& key) {
    const auto start = Clock::now();
    auto r = client.Get(key);
    slowest_ms = std::max(slowest_ms, MsSince(start));
    if ((!IsOk(r) || r->value() != acked.at(key)) && ++wrong <= kMaxReported) {
      ADD_FAILURE() << "get " << key << " (owner " << victim << " just killed) through " << reader
                    << ": " << Describe(r);
    }
  };
  for (const std::string& key : owned[victim]) check(key);
  const int64_t owned_ms = MsSince(killed_at);
  for (const auto& [key, value] : acked) {
    if (OwnerOf(Sha1Hex(key), ring).addr != victim) check(key);
  }
  std::cout << "[replication] " << owned[victim].size() << " keys of the killed owner " << victim
            << " read from replicas in " << owned_ms << " ms; all " << acked.size() << " in "
            << MsSince(killed_at) << " ms; slowest get " << slowest_ms << " ms\n";
  EXPECT_EQ(wrong, 0) << "single gets right after the owner's SIGKILL";
}

TEST_F(ReplicationTest, JoinLeavesEveryKeyOnExactlyItsThreeHolders) {
  ASSERT_TRUE(cluster().StartNodes(4, ReplicatedNodes()));
  const std::vector<std::string> old_addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), old_addrs));
  const auto acked = PutAllAcknowledged(old_addrs[0], MakeKeys("join3", 200));
  const std::set<std::string> keys = KeySet(acked);
  ASSERT_TRUE(WaitForPlacement(old_addrs, kReplicas, keys, {}, milliseconds(20000)));

  NodeProcess* joiner = cluster().StartNode(ReplicatedNodes(), old_addrs[1]);
  ASSERT_NE(joiner, nullptr);
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_EQ(addrs.size(), 5u);
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const auto joined_at = Clock::now();
  EXPECT_TRUE(WaitForPlacement(addrs, kReplicas, keys, {}, milliseconds(30000)));

  // How many copies had to move: computed, not measured (placement matched before and after).
  size_t changed_keys = 0;
  size_t on_joiner = 0;
  for (const std::string& key : keys) {
    const auto before = ExpectedHolders(key, old_addrs, kReplicas);
    const auto after = ExpectedHolders(key, addrs, kReplicas);
    if (before != after) ++changed_keys;
    if (std::find(after.begin(), after.end(), joiner->addr()) != after.end()) ++on_joiner;
  }
  std::cout << "[replication] join: " << on_joiner << " of " << keys.size()
            << " keys now on the new node (" << changed_keys
            << " keys changed holder sets), settled " << MsSince(joined_at)
            << " ms after the ring was consistent\n";

  // status --json: `keys` counts the keys a node owns, `replica_keys` the other copies.
  const std::vector<Member> ring = SortedRing(addrs);
  std::map<std::string, uint64_t> primary;
  std::map<std::string, uint64_t> replica;
  for (const std::string& key : keys) {
    const auto holders = ReplicaHoldersOf(Sha1Hex(key), ring, kReplicas);
    ++primary[holders.front().addr];
    for (size_t i = 1; i < holders.size(); ++i) ++replica[holders[i].addr];
  }
  std::string why;
  const bool counts_match = PollUntil(
      [&] {
        for (const std::string& addr : addrs) {
          const CommandResult r = cluster().Chordctl({"--node", addr, "status", "--json"});
          const auto j = nlohmann::json::parse(r.out, nullptr, false);
          if (r.exit_code != 0 || !j.is_object()) {
            why = "status --json of " + addr + ": exit " + std::to_string(r.exit_code) + " " +
                  r.out + r.err;
            return false;
          }
          if (j.value("keys", uint64_t{0}) != primary[addr] ||
              j.value("replica_keys", uint64_t{0}) != replica[addr]) {
            why = addr + " reports keys=" + j.value("keys", nlohmann::json()).dump() +
                  " replica_keys=" + j.value("replica_keys", nlohmann::json()).dump() +
                  ", expected " + std::to_string(primary[addr]) + " and " +
                  std::to_string(replica[addr]);
            return false;
          }
        }
        return true;
      },
      milliseconds(10000), milliseconds(500));
  EXPECT_TRUE(counts_match) << why;

  ExpectReads(joiner->addr(), acked, {}, milliseconds(10000));
}

TEST_F(ReplicationTest, SigtermLeaveKeepsThreeCopiesOnTheComputedHolders) {
  ASSERT_TRUE(cluster().StartNodes(5, ReplicatedNodes()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const auto acked = PutAllAcknowledged(addrs[0], MakeKeys("leave3", 200));
  const std::set<std::string> keys = KeySet(acked);
  ASSERT_TRUE(WaitForPlacement(addrs, kReplicas, keys, {}, milliseconds(20000)));

  const std::string leaver = addrs[2];
  NodeProcess* node = cluster().FindByAddr(leaver);
  ASSERT_TRUE(node->Signal(SIGTERM));
  const auto status = node->WaitExit(milliseconds(10000));
  ASSERT_TRUE(status.has_value()) << leaver << " did not exit within 10 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << leaver << " ended with wait status " << *status << " after SIGTERM";

  const std::vector<std::string> remaining = Without(addrs, {leaver});
  ASSERT_TRUE(WaitForRing(cluster(), remaining));
  EXPECT_TRUE(WaitForPlacement(remaining, kReplicas, keys, {}, milliseconds(30000)));
  ExpectReads(remaining.front(), acked, {}, milliseconds(10000));
}

TEST_F(ReplicationTest, FewerNodesThanReplicasEveryNodeHoldsEveryKey) {
  ASSERT_TRUE(cluster().StartNodes(2, ReplicatedNodes()));
  std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const auto acked = PutAllAcknowledged(addrs[1], MakeKeys("small", 60));
  const std::set<std::string> keys = KeySet(acked);
  // With 2 nodes and R = 3 each key is on both (and on all three after the join).
  std::vector<std::string> both = addrs;
  std::sort(both.begin(), both.end());
  for (const std::string& key : keys) ASSERT_EQ(ExpectedHolders(key, addrs, kReplicas), both);
  EXPECT_TRUE(WaitForPlacement(addrs, kReplicas, keys, {}, milliseconds(10000)));

  ASSERT_NE(cluster().StartNode(ReplicatedNodes(), addrs[0]), nullptr);
  addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  EXPECT_TRUE(WaitForPlacement(addrs, kReplicas, keys, {}, milliseconds(20000)));
  const auto copies = LiveCopiesByKey(addrs);
  for (const std::string& key : keys) {
    EXPECT_EQ(copies.count(key) ? copies.at(key) : 0u, 3u) << key;
  }
  ExpectReads(addrs.back(), acked, {}, milliseconds(10000));
}

}  // namespace
}  // namespace chord::testing
