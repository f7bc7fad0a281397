// A node whose store cannot be read says so: its Status answer carries the store's error
// instead of key counts that read as 0, and chordctl's status (text and JSON), ring table and
// check show it as such rather than as an empty node.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "node/core/chord_node.h"
#include "node/runtime/prometheus_text.h"
#include "node/storage/memory_store.h"
#include "tests/unit/forwarding_store.h"
#include "tests/unit/status_reply.h"
#include "tools/chordctl/render.h"
#include "tools/chordctl/ring_check.h"
#include "tools/chordctl/ring_survey.h"
#include "tools/chordctl/ring_table.h"
#include "tools/client/wire_json.h"

namespace chord {
namespace {

constexpr char kDiskError[] = "the disk under /data/chord returned an I/O error";

// A MemoryStore whose scans fail (as a RocksDB store does on a read error of its files); point
// reads and writes work.
class UnreadableStore final : public test_support::ForwardingStore {
 public:
  Status Scan(const Id&, const Id&, const Visitor&) override { return Status::IoError(kDiskError); }
};

// The Status answer of a one-node ring over `store` after one put of a key.
wire::StatusResponse StatusOver(Store* store) {
  ChordNode node(store, NodeConfig{}, NodeRef::ForAddress("127.0.0.1:4000"), /*seed=*/7);
  node.Start(Clock{1000, 1700000000000}, {});
  (void)node.TakeReady();
  wire::Envelope put;
  put.set_request_id(41);
  put.mutable_put()->set_key("k");
  put.mutable_put()->set_value("v");
  node.OnRequest(Clock{1001, 1700000000001}, /*from=*/9, std::move(put));
  (void)node.TakeReady();
  return StatusReplyOf(node, Clock{1002, 1700000000002});
}

TEST(StoreErrorStatusTest, TheStatusAnswerCarriesTheStoresErrorInsteadOfCounts) {
  MemoryStore healthy;
  const wire::StatusResponse ok = StatusOver(&healthy);
  EXPECT_EQ(ok.store_error(), "");
  EXPECT_EQ(ok.keys(), 1u);

  UnreadableStore broken;
  const wire::StatusResponse s = StatusOver(&broken);
  EXPECT_NE(s.store_error().find(kDiskError), std::string::npos) << s.store_error();
  EXPECT_EQ(s.keys(), 0u);
  EXPECT_EQ(s.replica_keys(), 0u);
  EXPECT_TRUE(s.joined());  // the rest of the answer is there
}

TEST(StoreErrorStatusTest, ChordctlShowsTheErrorNotAnEmptyNode) {
  UnreadableStore broken;
  const wire::StatusResponse s = StatusOver(&broken);
  ASSERT_FALSE(s.store_error().empty());

  const std::string text = ctl::StatusText(s);
  EXPECT_NE(text.find("unknown: the store could not be read"), std::string::npos) << text;
  EXPECT_NE(text.find(kDiskError), std::string::npos) << text;
  EXPECT_EQ(StatusJson(s).value("store_error", ""), s.store_error());

  MemoryStore healthy;
  EXPECT_FALSE(StatusJson(StatusOver(&healthy)).contains("store_error"));

  // A one-node survey of it: check fails naming the error, the ring table shows "?" for its
  // counts.
  ctl::RingSurvey survey;
  ctl::SurveyNode node;
  node.id = Id::FromBytes(s.self().id()).value();
  node.addr = s.self().addr();
  node.status = s;
  survey.nodes.push_back(node);
  survey.walk.consistent = true;
  const ctl::RingVerdict verdict = ctl::CheckRing(survey);
  EXPECT_FALSE(verdict.ok);
  const std::string verdict_text = ctl::VerdictText(verdict);
  EXPECT_NE(verdict_text.find("[ERR] 127.0.0.1:4000 cannot read its store"), std::string::npos)
      << verdict_text;
  EXPECT_NE(verdict_text.find(kDiskError), std::string::npos) << verdict_text;
  const std::string table = ctl::RingTable(survey, verdict);
  // Its row: "?" in both count columns.
  const size_t row = table.find("127.0.0.1:4000");
  ASSERT_NE(row, std::string::npos) << table;
  const std::string row_text = table.substr(row, table.find('\n', row) - row);
  EXPECT_EQ(std::count(row_text.begin(), row_text.end(), '?'), 2) << table;
  EXPECT_NE(table.find("(not counting 1 node that cannot read its store)"), std::string::npos)
      << table;

  // ring --json (and the HTTP API's /v1/ring): the node's error, and how many were not counted.
  RingView view;
  view.nodes.push_back(RingNode{node.id, node.addr, s});
  view.nodes.push_back(RingNode{Id::Sha1("other"), "127.0.0.1:4001", StatusOver(&healthy)});
  const nlohmann::json ring = RingJson(view);
  EXPECT_EQ(ring["nodes"][0].value("store_error", ""), s.store_error());
  EXPECT_FALSE(ring["nodes"][1].contains("store_error"));
  EXPECT_EQ(ring["nodes_not_counted"], 1);
}

TEST(StoreErrorStatusTest, MetricsSayTheStoreCouldNotBeRead) {
  VnodeMetricsSample readable;
  readable.node = "127.0.0.1:4000";
  VnodeMetricsSample unreadable = readable;
  unreadable.node = "127.0.0.1:4000#1";
  unreadable.store_readable = false;
  const std::string text = RenderPrometheusText({readable, unreadable});
  EXPECT_NE(text.find("chord_key_counts_readable{node=\"127.0.0.1:4000\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("chord_key_counts_readable{node=\"127.0.0.1:4000#1\"} 0\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace chord
