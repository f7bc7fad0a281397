// The Prometheus text renderer (node/runtime/prometheus_text.h): exact lines for hand-built
// figures, HELP/TYPE once per family, cumulative histogram buckets ending in +Inf == _count,
// value formatting and label escaping. Also the Histogram type (node/core/node_metrics.h) and
// the core's recording hooks, driven through the simulated network.
#include "node/runtime/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "node/core/node_metrics.h"
#include "tools/sim/sim_network.h"

namespace chord {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool HasLine(const std::string& text, const std::string& line) {
  for (const auto& l : Lines(text)) {
    if (l == line) return true;
  }
  return false;
}

// The lines that start with `prefix`, in order.
std::vector<std::string> LinesStartingWith(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& l : Lines(text)) {
    if (l.rfind(prefix, 0) == 0) out.push_back(l);
  }
  return out;
}

VnodeMetricsSample HandBuilt() {
  VnodeMetricsSample s;
  s.node = "127.0.0.1:4000";
  s.joined = true;
  s.keys = 3;
  s.replica_keys = 2;
  s.tombstones = 1;
  s.counters.lookups = 6;
  s.counters.stabilize_rounds = 7;
  s.counters.successor_changes = 2;
  s.counters.predecessor_changes = 1;
  s.counters.keys_sent = 11;
  s.counters.keys_received = 12;
  s.counters.bytes_sent = 1300;
  s.counters.anti_entropy_rounds = 14;
  s.counters.anti_entropy_clean = 13;
  s.counters.anti_entropy_bytes = 15000;
  s.counters.keys_repaired = 16;
  s.counters.keys_dropped = 17;
  s.counters.tombstones_purged = 18;
  s.counters.writes_replicated = 19;
  s.counters.writes_failed = 20;
  s.counters.hints_pending = 21;
  s.counters.hint_bytes = 2100;
  s.counters.hints_delivered = 22;
  for (double hops : {0, 1, 1, 3, 7, 25}) s.metrics.lookup_hops.Observe(hops);
  RpcTypeMetrics& gs = s.metrics.Rpc("get_state");
  gs.requests = 5;
  gs.timeouts = 1;
  for (double v : {0.0, 0.002, 0.002, 7.0}) gs.latency_seconds.Observe(v);
  s.metrics.Rpc("find_next_hop").requests = 2;
  return s;
}

TEST(PrometheusTextTest, FormatsValuesLikePrometheus) {
  EXPECT_EQ(FormatPrometheusValue(0), "0");
  EXPECT_EQ(FormatPrometheusValue(1), "1");
  EXPECT_EQ(FormatPrometheusValue(2.5), "2.5");
  EXPECT_EQ(FormatPrometheusValue(0.0005), "0.0005");
  EXPECT_EQ(FormatPrometheusValue(0.0025), "0.0025");
  EXPECT_EQ(FormatPrometheusValue(123456), "123456");
  EXPECT_EQ(FormatPrometheusValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatPrometheusValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatPrometheusValue(std::nan("")), "NaN");
  // Whatever the notation, the text reads back as the same number.
  for (double v : {1e6, 1e-7, 0.1 + 0.2, 12345.678}) {
    EXPECT_EQ(std::stod(FormatPrometheusValue(v)), v) << FormatPrometheusValue(v);
  }
}

TEST(PrometheusTextTest, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue("127.0.0.1:4000#3"), "127.0.0.1:4000#3");
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeLabelValue(""), "");

  VnodeMetricsSample s;
  s.node = "odd\"name\\\n";
  const std::string text = RenderPrometheusText({s});
  EXPECT_TRUE(HasLine(text, "chord_up{node=\"odd\\\"name\\\\\\n\"} 1")) << text;
  // An escaped line feed never splits a series over two lines.
  for (const auto& line : Lines(text)) {
    EXPECT_TRUE(line.rfind("chord_", 0) == 0 || line.rfind("# ", 0) == 0) << line;
  }
}

TEST(PrometheusTextTest, RendersExactLinesForOneVnode) {
  const std::string text = RenderPrometheusText({HandBuilt()});
  const std::string n = "node=\"127.0.0.1:4000\"";
  const std::vector<std::string> expected = {
      "# HELP chord_up 1 while the process serves this vnode's metrics.",
      "# TYPE chord_up gauge",
      "chord_up{" + n + "} 1",
      "# TYPE chord_joined gauge",
      "chord_joined{" + n + "} 1",
      "# TYPE chord_keys gauge",
      "chord_keys{" + n + "} 3",
      "chord_replica_keys{" + n + "} 2",
      "chord_tombstones{" + n + "} 1",
      "# TYPE chord_lookups_total counter",
      "chord_lookups_total{" + n + "} 6",
      "# TYPE chord_lookup_hops histogram",
      "chord_lookup_hops_bucket{" + n + ",le=\"0\"} 1",
      "chord_lookup_hops_bucket{" + n + ",le=\"1\"} 3",
      "chord_lookup_hops_bucket{" + n + ",le=\"2\"} 3",
      "chord_lookup_hops_bucket{" + n + ",le=\"3\"} 4",
      "chord_lookup_hops_bucket{" + n + ",le=\"6\"} 4",
      "chord_lookup_hops_bucket{" + n + ",le=\"8\"} 5",
      "chord_lookup_hops_bucket{" + n + ",le=\"20\"} 5",
      "chord_lookup_hops_bucket{" + n + ",le=\"+Inf\"} 6",
      "chord_lookup_hops_sum{" + n + "} 37",
      "chord_lookup_hops_count{" + n + "} 6",
      "# TYPE chord_rpc_requests_total counter",
      "chord_rpc_requests_total{" + n + ",type=\"find_next_hop\"} 2",
      "chord_rpc_requests_total{" + n + ",type=\"get_state\"} 5",
      "chord_rpc_timeouts_total{" + n + ",type=\"find_next_hop\"} 0",
      "chord_rpc_timeouts_total{" + n + ",type=\"get_state\"} 1",
      "# TYPE chord_rpc_latency_seconds histogram",
      "chord_rpc_latency_seconds_bucket{" + n + ",type=\"get_state\",le=\"0.0005\"} 1",
      "chord_rpc_latency_seconds_bucket{" + n + ",type=\"get_state\",le=\"0.001\"} 1",
      "chord_rpc_latency_seconds_bucket{" + n + ",type=\"get_state\",le=\"0.0025\"} 3",
      "chord_rpc_latency_seconds_bucket{" + n + ",type=\"get_state\",le=\"5\"} 3",
      "chord_rpc_latency_seconds_bucket{" + n + ",type=\"get_state\",le=\"+Inf\"} 4",
      "chord_rpc_latency_seconds_sum{" + n + ",type=\"get_state\"} 7.004",
      "chord_rpc_latency_seconds_count{" + n + ",type=\"get_state\"} 4",
      "chord_rpc_latency_seconds_count{" + n + ",type=\"find_next_hop\"} 0",
      "# TYPE chord_stabilize_rounds_total counter",
      "chord_stabilize_rounds_total{" + n + "} 7",
      "chord_successor_changes_total{" + n + "} 2",
      "chord_predecessor_changes_total{" + n + "} 1",
      "chord_keys_transferred_total{" + n + "} 11",
      "chord_keys_received_total{" + n + "} 12",
      "chord_bytes_transferred_total{" + n + "} 1300",
      "chord_anti_entropy_rounds_total{" + n + "} 14",
      "chord_anti_entropy_clean_rounds_total{" + n + "} 13",
      "chord_anti_entropy_bytes_total{" + n + "} 15000",
      "chord_keys_repaired_total{" + n + "} 16",
      "chord_keys_dropped_total{" + n + "} 17",
      "chord_tombstones_purged_total{" + n + "} 18",
      "chord_writes_coordinated_total{" + n + "} 19",
      "# TYPE chord_writes_coordinated_total counter",
      "chord_writes_failed_total{" + n + "} 20",
      "# TYPE chord_hints_pending gauge",
      "chord_hints_pending{" + n + "} 21",
      "chord_hint_bytes{" + n + "} 2100",
      "chord_hints_delivered_total{" + n + "} 22",
  };
  for (const auto& line : expected) EXPECT_TRUE(HasLine(text, line)) << line << "\n" << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST(PrometheusTextTest, EveryFamilyHasOneHelpAndOneTypeLineBeforeItsSeries) {
  VnodeMetricsSample a = HandBuilt();
  VnodeMetricsSample b = HandBuilt();
  b.node = "127.0.0.1:4000#1";
  const std::string text = RenderPrometheusText({a, b});
  std::map<std::string, int> helps;
  std::map<std::string, std::string> types;
  for (const auto& line : Lines(text)) {
    ASSERT_FALSE(line.empty());
    std::istringstream in(line);
    if (line.rfind("# HELP ", 0) == 0) {
      std::string hash, help, name;
      in >> hash >> help >> name;
      ++helps[name];
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::string hash, word, name, type;
      in >> hash >> word >> name >> type;
      EXPECT_EQ(types.count(name), 0u) << "second TYPE line for " << name;
      EXPECT_EQ(helps[name], 1) << "TYPE of " << name << " without exactly one HELP before it";
      EXPECT_TRUE(type == "counter" || type == "gauge" || type == "histogram") << line;
      if (type == "counter") {
        EXPECT_EQ(name.substr(name.size() - 6), "_total") << name;
      }
      types[name] = type;
      continue;
    }
    // A series: its family's TYPE line came before it.
    const std::string series = line.substr(0, line.find('{'));
    std::string family = series;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (family.size() > s.size() && family.compare(family.size() - s.size(), s.size(), s) == 0 &&
          types.count(family.substr(0, family.size() - s.size())) != 0) {
        family = family.substr(0, family.size() - s.size());
      }
    }
    EXPECT_EQ(types.count(family), 1u) << "series before its TYPE line: " << line;
    EXPECT_EQ(series.rfind("chord_", 0), 0u) << line;
  }
  // Both vnodes have their own series in each family.
  EXPECT_TRUE(HasLine(text, "chord_keys{node=\"127.0.0.1:4000\"} 3"));
  EXPECT_TRUE(HasLine(text, "chord_keys{node=\"127.0.0.1:4000#1\"} 3"));
  EXPECT_EQ(LinesStartingWith(text, "chord_lookup_hops_count{").size(), 2u);
}

TEST(PrometheusTextTest, HistogramBucketsAreCumulativeAndInfEqualsCount) {
  const std::string text = RenderPrometheusText({HandBuilt()});
  for (const std::string prefix : {"chord_lookup_hops_bucket{",
                                   "chord_rpc_latency_seconds_bucket{node=\"127.0.0.1:4000\","
                                   "type=\"get_state\""}) {
    const auto buckets = LinesStartingWith(text, prefix);
    ASSERT_FALSE(buckets.empty()) << prefix;
    long previous = -1;
    for (const auto& line : buckets) {
      const long value = std::stol(line.substr(line.rfind(' ') + 1));
      EXPECT_GE(value, previous) << line;
      previous = value;
    }
    EXPECT_NE(buckets.back().find("le=\"+Inf\""), std::string::npos) << buckets.back();
  }
  EXPECT_EQ(LinesStartingWith(text, "chord_lookup_hops_bucket{").size(),
            kLookupHopBuckets.size() + 1);
  EXPECT_TRUE(HasLine(text, "chord_lookup_hops_bucket{node=\"127.0.0.1:4000\",le=\"+Inf\"} 6"));
  EXPECT_TRUE(HasLine(text, "chord_lookup_hops_count{node=\"127.0.0.1:4000\"} 6"));
}

TEST(PrometheusTextTest, HistogramBoundsAreInclusiveUpperBounds) {
  Histogram h(kLookupHopBuckets);
  h.Observe(0);
  h.Observe(4);    // le="4"
  h.Observe(4.5);  // le="5"
  h.Observe(21);   // +Inf
  ASSERT_EQ(h.buckets().size(), kLookupHopBuckets.size() + 1);
  EXPECT_EQ(h.buckets()[0], 1u);
  EXPECT_EQ(h.buckets()[4], 1u);
  EXPECT_EQ(h.buckets()[5], 1u);
  EXPECT_EQ(h.buckets().back(), 1u);
  EXPECT_EQ(h.count(), 4u);
  EXPECT_DOUBLE_EQ(h.sum(), 29.5);
}

TEST(PrometheusTextTest, NoVnodesRendersOnlyFamilyHeaders) {
  const std::string text = RenderPrometheusText({});
  for (const auto& line : Lines(text)) EXPECT_EQ(line.rfind("# ", 0), 0u) << line;
}

// The core's hooks: a small simulated ring records RPCs by type, their latencies, and the hop
// counts of lookups.
TEST(PrometheusNodeMetricsTest, CoreRecordsRpcsByTypeAndLookupHops) {
  sim::SimOptions options;
  options.seed = 7;
  options.mean_latency_ms = 5;
  options.min_latency_ms = 1;
  sim::SimNetwork net(options);
  NodeConfig config;
  config.successors = 3;
  config.replicas = 1;
  config.stabilize_ms = 200;
  config.rpc_timeout_ms = 300;
  std::vector<std::string> addrs;
  for (int i = 1; i <= 8; ++i) {
    addrs.push_back("10.0.0." + std::to_string(i) + ":4000");
    net.AddNode(addrs.back(), config, i == 1 ? "" : addrs.front());
    net.RunFor(50);
  }
  net.RunFor(10000);
  int answered = 0;
  for (int k = 0; k < 40; ++k) {
    wire::Envelope req;
    req.mutable_lookup()->set_key("key-" + std::to_string(k));
    net.ClientCall(addrs[k % addrs.size()], req, 5000, [&answered](const wire::Envelope* resp) {
      if (resp != nullptr && resp->has_lookup_resp()) ++answered;
    });
  }
  net.RunFor(5000);
  EXPECT_EQ(answered, 40);

  uint64_t lookups = 0;
  uint64_t hop_observations = 0;
  uint64_t get_state = 0;
  uint64_t find_next_hop = 0;
  for (const ChordNode* node : net.LiveNodes()) {
    const NodeMetrics& m = node->metrics();
    lookups += node->counters().lookups;
    hop_observations += m.lookup_hops.count();
    EXPECT_EQ(m.rpc.count("none"), 0u) << node->self().addr << " sent a request without a body";
    for (const auto& [type, rpc] : m.rpc) {
      // Every request was answered, timed out, or is still in flight.
      EXPECT_LE(rpc.latency_seconds.count() + rpc.timeouts, rpc.requests) << type;
      uint64_t in_buckets = 0;
      for (uint64_t b : rpc.latency_seconds.buckets()) in_buckets += b;
      EXPECT_EQ(in_buckets, rpc.latency_seconds.count()) << type;
      EXPECT_GE(rpc.latency_seconds.sum(), 0.0) << type;
    }
    if (auto it = m.rpc.find("get_state"); it != m.rpc.end()) get_state += it->second.requests;
    if (auto it = m.rpc.find("find_next_hop"); it != m.rpc.end()) {
      find_next_hop += it->second.requests;
      // Simulated latency is at least 1 ms each way: answered lookups took some time.
      if (it->second.latency_seconds.count() > 0) {
        EXPECT_GT(it->second.latency_seconds.sum(), 0);
      }
    }
  }
  EXPECT_GT(get_state, 0u);
  EXPECT_GT(find_next_hop, 0u);
  EXPECT_GE(lookups, 40u);
  EXPECT_GE(hop_observations, 40u);
  EXPECT_LE(hop_observations, lookups);
}

}  // namespace
}  // namespace chord
