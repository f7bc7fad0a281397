// Multi-process tests of get/put/delete on a 5-node ring: values written through one node
// are read back through another, and every key is owned and stored by the successor of
// SHA-1(key), computed here with OpenSSL independently of the code under test. The nodes run
// with --replicas 1 so that each key has exactly one copy (R = 3 is in replication_test.cc).
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/cluster_fixture.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

constexpr int kKeys = 300;
constexpr int kMaxReported = 10;  // mismatches spelled out before summarising

// These tests check single-copy placement (each key on its owner only), so they run with
// --replicas 1, still a supported mode; replication_test.cc covers R = 3.
NodeOptions SingleCopy() { return WithReplicas(FastNodes(), 1); }

TEST_F(ClusterTest, KeysWrittenThroughOneNodeReadBackThroughAnother) {
  ASSERT_TRUE(cluster().StartNodes(5, SingleCopy()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));

  const auto keys = MakeKeys("rw", kKeys);
  PutAll(addrs[0], keys);

  ChordClient reader(addrs[1]);
  int wrong = 0;
  for (const auto& [key, value] : keys) {
    auto r = reader.Get(key);
    if (!IsOk(r) || r->value() != value) {
      if (++wrong <= kMaxReported) ADD_FAILURE() << "get " << key << ": " << Describe(r);
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << keys.size() << " keys read through " << addrs[1];

  // Delete every fourth key through a third node.
  ChordClient deleter(addrs[2]);
  std::set<std::string> deleted;
  int i = 0;
  for (const auto& [key, value] : keys) {
    if (i++ % 4 != 0) continue;
    auto r = deleter.Delete(key);
    EXPECT_TRUE(IsOk(r)) << "delete " << key << ": " << Describe(r);
    deleted.insert(key);
  }
  wrong = 0;
  for (const auto& [key, value] : keys) {
    auto r = reader.Get(key);
    const bool right = deleted.count(key) ? IsNotFound(r) : IsOk(r) && r->value() == value;
    if (!right && ++wrong <= kMaxReported) {
      ADD_FAILURE() << "get " << key << (deleted.count(key) ? " (deleted)" : " (live)") << ": "
                    << Describe(r);
    }
  }
  EXPECT_EQ(wrong, 0);

  // No node holds a live record of a deleted key; every other key is held exactly once.
  const auto holders = HoldersByKey(addrs);
  for (const auto& [key, value] : keys) {
    const auto it = holders.find(key);
    const size_t copies = it == holders.end() ? 0 : it->second.size();
    EXPECT_EQ(copies, deleted.count(key) ? 0u : 1u) << key;
  }

  // The CLI: a deleted key is "not found" (exit 1), a live one prints its value.
  const CommandResult gone = cluster().Chordctl({"--node", addrs[3], "get", *deleted.begin()});
  EXPECT_EQ(gone.exit_code, 1) << "stdout: " << gone.out << " stderr: " << gone.err;
  const std::string live = "rw-001";  // not deleted (1 % 4 != 0), printable value (1 % 3 != 0)
  ASSERT_EQ(deleted.count(live), 0u);
  const CommandResult found = cluster().Chordctl({"--node", addrs[3], "get", live});
  EXPECT_EQ(found.exit_code, 0) << found.err;
  EXPECT_EQ(found.out, keys.at(live) + "\n");

  // put, get, del, get through the CLI, each through a different node.
  CommandResult r = cluster().Chordctl({"--node", addrs[4], "put", "cli key", "cli value"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = cluster().Chordctl({"--node", addrs[0], "get", "cli key"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "cli value\n");
  r = cluster().Chordctl({"--node", addrs[2], "del", "cli key"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = cluster().Chordctl({"--node", addrs[1], "get", "cli key"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
}

TEST_F(ClusterTest, LookupOwnerAndStorageMatchTheSuccessorOfSha1) {
  ASSERT_TRUE(cluster().StartNodes(5, SingleCopy()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const std::vector<Member> ring = SortedRing(addrs);

  const auto keys = MakeKeys("owner", kKeys);
  PutAll(addrs[2], keys);

  // What `lookup --json` reports, asked through every node in turn.
  int wrong = 0;
  int i = 0;
  for (const auto& [key, value] : keys) {
    const std::string via = addrs[i++ % addrs.size()];
    const std::string key_id = Sha1Hex(key);
    const Member& want = OwnerOf(key_id, ring);
    const CommandResult r = cluster().Chordctl({"--node", via, "lookup", key, "--json"});
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    const bool well_formed = r.exit_code == 0 && j.is_object() && j.contains("owner") &&
                             j["owner"].is_object() && j.contains("hops") &&
                             j["hops"].is_number_unsigned();
    const bool right = well_formed && j.value("key_id", "") == key_id &&
                       j["owner"].value("addr", "") == want.addr &&
                       j["owner"].value("id", "") == want.id;
    if (!right && ++wrong <= kMaxReported) {
      ADD_FAILURE() << "lookup " << key << " (id " << key_id << ") via " << via << ": exit "
                    << r.exit_code << ", printed " << r.out << r.err << "; expected owner "
                    << want.addr << " (" << want.id << ")";
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << keys.size() << " lookups";

  // Where each key is actually stored: only on its owner.
  const auto holders = HoldersByKey(addrs);
  std::map<std::string, uint64_t> owned;  // addr -> keys it should own
  wrong = 0;
  for (const auto& [key, value] : keys) {
    const Member& want = OwnerOf(Sha1Hex(key), ring);
    ++owned[want.addr];
    const auto it = holders.find(key);
    const std::vector<std::string> got =
        it == holders.end() ? std::vector<std::string>{} : it->second;
    if (got != std::vector<std::string>{want.addr} && ++wrong <= kMaxReported) {
      std::string where;
      for (const std::string& a : got) where += " " + a;
      ADD_FAILURE() << key << " is stored on [" << where << " ], expected only on " << want.addr;
    }
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(holders.size(), keys.size()) << "nodes hold keys that were never written";

  // `ring --json` counts each node's primary keys.
  const CommandResult r = cluster().Chordctl({"--node", addrs[0], "ring", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("nodes") && j["nodes"].is_array()) << r.out;
  std::cout << "[data] keys per node:";
  for (const Member& m : ring) std::cout << " " << m.addr << "=" << owned[m.addr];
  std::cout << std::endl;
  for (const auto& node : j["nodes"]) {
    const std::string addr = node.value("addr", "");
    ASSERT_TRUE(node.contains("keys") && node["keys"].is_number_unsigned()) << node.dump();
    EXPECT_EQ(node["keys"].get<uint64_t>(), owned[addr]) << addr << " in " << r.out;
  }
}

}  // namespace
}  // namespace chord::testing
