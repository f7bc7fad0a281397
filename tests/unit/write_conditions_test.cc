// The compare-and-set and TTL rules of write_conditions.h, and expiry on the simulated ring:
// a put with a TTL reads as absent once its time passed and every holder turns it into the
// same tombstone (version + 1, expired), counted in keys_expired.
#include "node/core/data/write_conditions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "node/core/chord_node.h"
#include "node/core/node_context.h"
#include "node/core/replication/expiry_sweeper.h"
#include "node/storage/ledger_store.h"
#include "node/storage/memory_store.h"
#include "protocol/id.h"
#include "tests/unit/forwarding_store.h"
#include "tests/unit/sim_test_options.h"
#include "tests/unit/store_test_records.h"
#include "tools/sim/sim_network.h"

namespace chord {
namespace {

wire::Record Live(uint64_t version, uint64_t expires = 0) {
  wire::Record r;
  r.set_key("k");
  r.set_value("v");
  r.set_version(version);
  r.set_expires_unix_ms(expires);
  return r;
}

TEST(WriteConditionsTest, IfAbsentHoldsOnlyWhenNoLiveRecord) {
  WriteCondition c;
  c.if_absent = true;
  EXPECT_TRUE(CheckCondition(c, nullptr, 1000).holds);
  wire::Record tomb = Live(7);
  tomb.set_deleted(true);
  EXPECT_TRUE(CheckCondition(c, &tomb, 1000).holds);
  const wire::Record expired = Live(7, 999);
  EXPECT_TRUE(CheckCondition(c, &expired, 1000).holds);
  const wire::Record live = Live(7, 1001);
  const ConditionOutcome o = CheckCondition(c, &live, 1000);
  EXPECT_FALSE(o.holds);
  EXPECT_EQ(o.current_version, 7u);
  EXPECT_NE(o.error.find("7"), std::string::npos);
}

TEST(WriteConditionsTest, IfVersionHoldsOnlyAtExactlyThatLiveVersion) {
  WriteCondition c;
  c.if_version = 7;
  const wire::Record live = Live(7);
  EXPECT_TRUE(CheckCondition(c, &live, 1000).holds);
  const wire::Record newer = Live(8);
  ConditionOutcome o = CheckCondition(c, &newer, 1000);
  EXPECT_FALSE(o.holds);
  EXPECT_EQ(o.current_version, 8u);
  EXPECT_NE(o.error.find("version 8, not 7"), std::string::npos) << o.error;
  o = CheckCondition(c, nullptr, 1000);
  EXPECT_FALSE(o.holds);
  EXPECT_EQ(o.current_version, 0u);
  wire::Record tomb = Live(7);
  tomb.set_deleted(true);  // a tombstone at that version is not a live record
  EXPECT_FALSE(CheckCondition(c, &tomb, 1000).holds);
  const wire::Record expired = Live(7, 1000);  // expires at 1000: gone at 1000
  EXPECT_FALSE(CheckCondition(c, &expired, 1000).holds);
  EXPECT_TRUE(CheckCondition(c, &expired, 999).holds);
  EXPECT_TRUE(CheckCondition(WriteCondition{}, &newer, 1000).holds);  // no condition
}

TEST(WriteConditionsTest, TtlBoundsAndExpiryTime) {
  EXPECT_EQ(TtlProblem(0), "");
  EXPECT_EQ(TtlProblem(1), "");
  EXPECT_EQ(TtlProblem(kMaxTtlMs), "");
  EXPECT_NE(TtlProblem(kMaxTtlMs + 1), "");
  EXPECT_EQ(ExpiryOf(uint64_t{5000} << 16 | 3, 250), 5250u);
  EXPECT_EQ(ExpiryOf(uint64_t{5000} << 16, 0), 0u);
  wire::Envelope both;
  both.mutable_put()->set_key("k");
  both.mutable_put()->set_if_absent(true);
  both.mutable_put()->set_if_version(3);
  EXPECT_NE(ConditionProblem(both), "");
  wire::Envelope long_ttl;
  long_ttl.mutable_put()->set_ttl_ms(kMaxTtlMs + 1);
  EXPECT_NE(ConditionProblem(long_ttl), "");
  wire::Envelope del;
  del.mutable_del()->set_if_version(3);
  EXPECT_EQ(ConditionProblem(del), "");
  EXPECT_EQ(ConditionOf(del).if_version, 3u);
}

// --- on the simulated ring ------------------------------------------------------------------

std::string Addr(int i) { return "10.0.3." + std::to_string(i) + ":4000"; }

NodeConfig Config() {
  NodeConfig c;
  c.successors = 4;
  c.replicas = 3;
  c.stabilize_ms = 200;
  c.rpc_timeout_ms = 300;
  c.anti_entropy_ms = 1000;
  return c;
}

std::optional<wire::DataResponse> Put(sim::SimNetwork& net, const std::string& addr,
                                      const std::string& k, uint64_t ttl_ms,
                                      uint64_t if_version = 0) {
  wire::Envelope e;
  e.mutable_put()->set_key(k);
  e.mutable_put()->set_value("value of " + k);
  e.mutable_put()->set_ttl_ms(ttl_ms);
  e.mutable_put()->set_if_version(if_version);
  return test_support::DataCall(net, addr, std::move(e));
}

std::optional<wire::DataResponse> Get(sim::SimNetwork& net, const std::string& addr,
                                      const std::string& k) {
  wire::Envelope e;
  e.mutable_get()->set_key(k);
  return test_support::DataCall(net, addr, std::move(e));
}

TEST(ExpirySweeperTest, AnExpiredKeyBecomesTheSameTombstoneOnEveryHolder) {
  sim::SimNetwork net(test_support::Net(7));
  std::vector<std::string> addrs;
  for (int i = 1; i <= 4; ++i) {
    addrs.push_back(Addr(i));
    net.AddNode(Addr(i), Config(), i == 1 ? "" : Addr(1));
    net.RunFor(300);
  }
  net.RunFor(5000);
  auto put = Put(net, Addr(2), "short", 3000);
  ASSERT_TRUE(put && put->code() == wire::OK);
  auto keep = Put(net, Addr(2), "long", 600000);
  ASSERT_TRUE(keep && keep->code() == wire::OK);
  auto read = Get(net, Addr(3), "short");
  ASSERT_TRUE(read && read->code() == wire::OK);
  EXPECT_EQ(read->expires_unix_ms(), (put->version() >> 16) + 3000);
  net.RunFor(4000);
  read = Get(net, Addr(4), "short");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->code(), wire::NOT_FOUND);
  read = Get(net, Addr(4), "long");
  ASSERT_TRUE(read && read->code() == wire::OK);
  // Every holder stores the tombstone {version + 1, same writer, expired}.
  int tombstones = 0;
  uint64_t expired_count = 0;
  for (const auto& a : addrs) {
    wire::Record rec;
    if (net.store(a)->Get(Id::Sha1("short"), "short", &rec).ok()) {
      EXPECT_TRUE(rec.deleted()) << a;
      EXPECT_TRUE(rec.expired()) << a;
      EXPECT_EQ(rec.version(), put->version() + 1) << a;
      ++tombstones;
    }
  }
  for (const ChordNode* n : net.LiveNodes()) expired_count += n->counters().keys_expired;
  EXPECT_EQ(tombstones, 3);
  // Each holder expires it itself, unless anti-entropy brought the same tombstone first.
  EXPECT_GE(expired_count, 1u);
  EXPECT_LE(expired_count, 3u);
  // A conditional write on the expired key sees it absent (version 0).
  auto cas = Put(net, Addr(1), "short", 0, put->version());
  ASSERT_TRUE(cas);
  EXPECT_EQ(cas->code(), wire::CONFLICT);
  EXPECT_EQ(cas->version(), 0u);
}

std::optional<wire::DataResponse> Delete(sim::SimNetwork& net, const std::string& addr,
                                         const std::string& k) {
  wire::Envelope e;
  e.mutable_del()->set_key(k);
  return test_support::DataCall(net, addr, std::move(e));
}

// More keys with an expiry than the sweeper's index holds: the sweeper scans the store in
// slices, and keys the index never held expire on time all the same. The scan goes on while
// the index is short of room, and stops after a whole pass once the index holds every such key
// again (before, it went on until a restart).
TEST(ExpirySweeperTest, KeysBeyondTheIndexExpireAndTheScanStopsOnceTheIndexHoldsThemAll) {
  NodeConfig config = Config();
  config.replicas = 1;
  config.max_expiry_index_entries = 4;
  sim::SimNetwork net(test_support::Net(11));
  const std::string a = Addr(1);
  net.AddNode(a, config, "");
  net.RunFor(1000);
  auto slices = [&] { return net.node(a)->counters().expiry_scan_slices; };
  for (int i = 0; i < 10; ++i) {
    auto put = Put(net, a, "short" + std::to_string(i), 3000);
    ASSERT_TRUE(put && put->code() == wire::OK) << i;
  }
  for (int i = 0; i < 6; ++i) {
    auto put = Put(net, a, "long" + std::to_string(i), 600'000);
    ASSERT_TRUE(put && put->code() == wire::OK) << i;
  }
  net.RunFor(4000);
  // Every short key expired, though the index held at most four of them.
  for (int i = 0; i < 10; ++i) {
    const std::string k = "short" + std::to_string(i);
    wire::Record rec;
    ASSERT_TRUE(net.store(a)->Get(Id::Sha1(k), k, &rec).ok()) << k;
    EXPECT_TRUE(rec.deleted() && rec.expired()) << k;
  }
  EXPECT_EQ(net.node(a)->counters().keys_expired, 10u);
  // Six long keys, room for four: the scan goes on.
  const uint64_t while_full = slices();
  EXPECT_GT(while_full, 0u);
  net.RunFor(3000);
  EXPECT_GT(slices(), while_full);
  // Two of them deleted: the index has room for the rest, and the scan stops after its pass.
  for (int i = 0; i < 2; ++i) {
    auto del = Delete(net, a, "long" + std::to_string(i));
    ASSERT_TRUE(del && del->code() == wire::OK) << i;
  }
  net.RunFor(3000);
  const uint64_t after_pass = slices();
  net.RunFor(5000);
  EXPECT_EQ(slices(), after_pass);
  for (int i = 2; i < 6; ++i) {
    auto read = Get(net, a, "long" + std::to_string(i));
    ASSERT_TRUE(read && read->code() == wire::OK) << i;
  }
}

// The same over passes of several slices (more records than one slice visits): the overflow
// ends only after a pass that went all the way round the store from where it began.
TEST(ExpirySweeperTest, TheScanStopsAfterAPassOfSeveralSlices) {
  NodeConfig config = Config();
  config.replicas = 1;
  config.max_expiry_index_entries = 5'000;
  sim::SimNetwork net(test_support::Net(12));
  const std::string a = Addr(1);
  net.AddNode(a, config, "");
  net.RunFor(1000);
  auto slices = [&] { return net.node(a)->counters().expiry_scan_slices; };
  const int keys = 5'100;  // more than a slice (4,096), 100 more than the index holds
  for (int i = 0; i < keys; ++i) {
    auto put = Put(net, a, "long" + std::to_string(i), 600'000);
    ASSERT_TRUE(put && put->code() == wire::OK) << i;
  }
  net.RunFor(3000);
  const uint64_t while_full = slices();
  EXPECT_GT(while_full, 0u);
  net.RunFor(3000);
  EXPECT_GE(slices(), while_full + 2);
  for (int i = 0; i < 200; ++i) {
    auto del = Delete(net, a, "long" + std::to_string(i));
    ASSERT_TRUE(del && del->code() == wire::OK) << i;
  }
  net.RunFor(6000);
  const uint64_t after_pass = slices();
  net.RunFor(5000);
  EXPECT_EQ(slices(), after_pass);
  EXPECT_GE(after_pass, while_full + 4);
}

// Two keys whose SHA-1s collide share an id; the sweeper's next slice starts after the last
// id the slice visited, so a slice must never end between them. Here the store holds exactly
// one slice and one record more: 4,095 records, then the two keys of one id, both expired.
// Were a slice to end between the two, every slice would end there again, and the second key
// would never expire while the index has no room for it.
TEST(ExpirySweeperTest, ASliceNeverEndsBetweenTwoKeysOfOneId) {
  MemoryStore memory;
  LedgerStore store(&memory);
  NodeConfig config = Config();
  config.replicas = 1;
  config.max_expiry_index_entries = 1;
  NodeContext ctx(config, NodeRef::ForAddress(Addr(1)), &store, 1);
  ctx.now.wall_ms = 1'800'000'000'000;
  ctx.now.mono_ms = 1'000;
  ASSERT_EQ(ExpirySweeper::kScanSlice, 4096u);
  char hex[16];
  for (int i = 1; i < 4096; ++i) {
    std::snprintf(hex, sizeof(hex), "%x", i);
    ASSERT_TRUE(store
                    .Put(test_support::IdOf(hex),
                         test_support::MakeRecord("filler" + std::to_string(i), "v"))
                    .ok());
  }
  const Id twin_id = test_support::IdOf("1000");  // 4096
  for (const char* key : {"twin-a", "twin-b"}) {
    // Written 2 s ago (a version carries its wall-clock ms above 16 bits), expired 1 s ago.
    wire::Record rec = test_support::MakeRecord(key, "v", (ctx.now.wall_ms - 2000) << 16);
    rec.set_expires_unix_ms(ctx.now.wall_ms - 1000);
    ASSERT_TRUE(store.Put(twin_id, rec).ok());
  }
  // The index has room for one: two keys it was asked to note leave it overflowed, so the
  // sweeper scans the store.
  ctx.records.expiry().Note(ctx.now.wall_ms + 600'000, test_support::IdOf("ffff0"), "x");
  ctx.records.expiry().Note(ctx.now.wall_ms + 600'000, test_support::IdOf("ffff1"), "y");
  ASSERT_TRUE(ctx.records.expiry().overflowed());
  ExpirySweeper sweeper(ctx);
  for (int i = 0; i < 4; ++i) sweeper.Sweep();
  for (const char* key : {"twin-a", "twin-b"}) {
    wire::Record rec;
    ASSERT_TRUE(store.Get(twin_id, key, &rec).ok()) << key;
    EXPECT_TRUE(rec.deleted() && rec.expired()) << key;
  }
}

// A MemoryStore whose reads or writes of records fail while told to, and whose reads of one
// key always fail (as a RocksDB store does on an I/O error, or on a corrupt block).
class FlakyStore final : public test_support::ForwardingStore {
 public:
  bool fail_reads = false;
  bool fail_writes = false;
  std::string unreadable_key;

  Status Put(const Id& key_id, const wire::Record& record) override {
    return fail_writes ? Status::IoError("write failed") : ForwardingStore::Put(key_id, record);
  }
  Status Get(const Id& key_id, std::string_view key, wire::Record* out) override {
    if (fail_reads || key == unreadable_key) return Status::IoError("read failed");
    return ForwardingStore::Get(key_id, key, out);
  }
  Status Erase(const Id& key_id, std::string_view key) override {
    return fail_writes ? Status::IoError("write failed") : ForwardingStore::Erase(key_id, key);
  }
  Status Write(const StoreBatch& batch) override {
    return fail_writes ? Status::IoError("write failed") : ForwardingStore::Write(batch);
  }
};

// A node over `flaky` whose index holds `keys`, stored live with an expiry that passed 1 s ago
// (the first key's 1 ms earlier, so the sweeper takes it first).
struct ExpiredKeys {
  explicit ExpiredKeys(FlakyStore* flaky, const std::vector<std::string>& keys)
      : store(flaky), ctx(SweeperConfig(), NodeRef::ForAddress(Addr(1)), &store, 1) {
    ctx.now.wall_ms = 1'800'000'000'000;
    ctx.now.mono_ms = 1'000;
    for (size_t i = 0; i < keys.size(); ++i) {
      // Written 2 s ago (a version carries its wall-clock ms above 16 bits).
      wire::Record rec = test_support::MakeRecord(keys[i], "v", (ctx.now.wall_ms - 2000) << 16);
      rec.set_expires_unix_ms(ctx.now.wall_ms - 1000 - (i == 0 ? 1 : 0));
      EXPECT_TRUE(store.Put(Id::Sha1(keys[i]), rec).ok());
      ctx.records.expiry().Note(rec.expires_unix_ms(), Id::Sha1(keys[i]), keys[i]);
    }
  }
  static NodeConfig SweeperConfig() {
    NodeConfig config = Config();
    config.replicas = 1;
    return config;
  }
  // Whether `key` is stored as its expiry tombstone.
  bool Expired(const std::string& key) {
    wire::Record rec;
    EXPECT_TRUE(store.Get(Id::Sha1(key), key, &rec).ok()) << key;
    return rec.deleted() && rec.expired();
  }

  LedgerStore store;
  NodeContext ctx;
};

// The sweeper takes due keys out of the index before it stores their tombstones. When the
// store fails (a read or a write), the sweep stops and every key it took goes back in: the one
// it failed on to be tried again after kRetryMs, the rest for the next sweep. Before, they were
// dropped and stayed live on this node until a restart rebuilt the index.
TEST(ExpirySweeperTest, KeysTheStoreFailedToExpireExpireOnALaterSweep) {
  for (const bool reads : {true, false}) {
    SCOPED_TRACE(reads ? "reads fail" : "writes fail");
    FlakyStore flaky;
    const std::vector<std::string> keys = {"lease-a", "lease-b", "lease-c"};
    ExpiredKeys node(&flaky, keys);
    ExpirySweeper sweeper(node.ctx);
    (reads ? flaky.fail_reads : flaky.fail_writes) = true;
    sweeper.Sweep();
    EXPECT_EQ(node.ctx.records.expiry().size(), keys.size());
    EXPECT_EQ(node.ctx.counters.keys_expired, 0u);
    flaky.fail_reads = flaky.fail_writes = false;
    for (const std::string& key : keys) EXPECT_FALSE(node.Expired(key)) << key;
    // The next sweep expires the keys after the one that failed; that one, kRetryMs later.
    node.ctx.now.wall_ms += 1000;
    sweeper.Sweep();
    EXPECT_FALSE(node.Expired(keys[0]));
    EXPECT_TRUE(node.Expired(keys[1]));
    EXPECT_TRUE(node.Expired(keys[2]));
    node.ctx.now.wall_ms += ExpirySweeper::kRetryMs;
    sweeper.Sweep();
    EXPECT_TRUE(node.Expired(keys[0]));
    EXPECT_EQ(node.ctx.counters.keys_expired, keys.size());
    EXPECT_EQ(node.ctx.records.expiry().size(), 0u);
  }
}

// A key the store can never read (a corrupt block) fails every time it is tried; it stays in
// the index and holds up none of the others, though it is the first due.
TEST(ExpirySweeperTest, AKeyThatAlwaysFailsHoldsUpNoOther) {
  FlakyStore flaky;
  const std::vector<std::string> keys = {"corrupt", "lease-b", "lease-c"};
  ExpiredKeys node(&flaky, keys);
  flaky.unreadable_key = keys[0];
  ExpirySweeper sweeper(node.ctx);
  for (int i = 0; i < 4; ++i) {
    sweeper.Sweep();
    node.ctx.now.wall_ms += ExpirySweeper::kRetryMs;
  }
  EXPECT_TRUE(node.Expired(keys[1]));
  EXPECT_TRUE(node.Expired(keys[2]));
  EXPECT_EQ(node.ctx.counters.keys_expired, 2u);
  EXPECT_EQ(node.ctx.records.expiry().size(), 1u);  // the corrupt key, to be tried again
}

// The same for `chordctl dump`'s pages (ListKeys), which continue after the last key id listed.
TEST(ListKeysTest, APageNeverEndsBetweenTwoKeysOfOneId) {
  NodeConfig config = Config();
  config.replicas = 1;
  sim::SimNetwork net(test_support::Net(13));
  const std::string a = Addr(1);
  net.AddNode(a, config, "");
  net.RunFor(1000);
  std::set<std::string> all;
  std::map<std::string, Id> id_of;
  for (int i = 0; i < 12; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(net.store(a)->Put(Id::Sha1(key), test_support::MakeRecord(key, "v")).ok());
    all.insert(key);
    id_of.emplace(key, Id::Sha1(key));
    if (i % 3 != 0) continue;
    const std::string twin = key + "-twin";  // the same id, as a collision would make
    ASSERT_TRUE(net.store(a)->Put(Id::Sha1(key), test_support::MakeRecord(twin, "v")).ok());
    all.insert(twin);
    id_of.emplace(twin, Id::Sha1(key));
  }
  for (uint32_t limit : {1u, 2u, 3u}) {
    SCOPED_TRACE("limit " + std::to_string(limit));
    std::multiset<std::string> got;
    std::string after;
    for (int pages = 0; pages < 100; ++pages) {
      wire::Envelope e;
      e.mutable_list_keys()->set_limit(limit);
      e.mutable_list_keys()->set_after_key_id(after);
      auto r = test_support::CallAndWait(net, a, std::move(e));
      ASSERT_TRUE(r && r->has_list_keys_resp());
      const auto& resp = r->list_keys_resp();
      for (const auto& rec : resp.records()) got.insert(rec.key());
      if (!resp.more() || resp.records().empty()) break;
      const Id last_id = id_of.at(resp.records(resp.records_size() - 1).key());
      after.assign(reinterpret_cast<const char*>(last_id.bytes().data()), Id::kBytes);
    }
    EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), all);
    EXPECT_EQ(got.size(), all.size());
  }
}

}  // namespace
}  // namespace chord
