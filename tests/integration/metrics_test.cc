// Multi-process tests of `chord-node --metrics-listen HOST:PORT` (served by the node's H2O
// HTTP server, /metrics only): the Prometheus text served at GET /metrics is scraped with the
// raw-socket client of http_test_client.h, parsed line by line (name{labels} value), and
// checked against what the test did to the ring: the primary key counts add up to the keys
// written, stabilization shows up as get_state RPCs, lookups as hop observations, histograms
// are cumulative with +Inf equal to _count. Other paths are 404 with a JSON error, other
// methods 405 with an Allow header, HEAD is an empty 200; garbage and oversized request heads
// get a 4xx or a close (never a 200), slow and idle connections are closed within the
// server's request timeout, and the node keeps serving throughout.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/http_test_client.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

class MetricsTest : public ClusterTest {};

// --- the text format --------------------------------------------------------------------------

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;  // family -> counter / gauge / histogram
  std::set<std::string> helps;
  std::string error;  // the first line that could not be parsed
};

// Parses `name{k="v",...} value` lines and # HELP / # TYPE comments.
Exposition ParseExposition(const std::string& text) {
  Exposition e;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) {
      e.error = "the text does not end with a line feed";
      return e;
    }
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0) {
      e.helps.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      const size_t name_end = line.find(' ', 7);
      e.types[line.substr(7, name_end - 7)] = line.substr(name_end + 1);
      continue;
    }
    if (line[0] == '#') continue;
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') s.name += line[i++];
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string key;
        while (i < line.size() && line[i] != '=') key += line[i++];
        if (i + 1 >= line.size() || line[i + 1] != '"') {
          e.error = "bad label in: " + line;
          return e;
        }
        i += 2;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            ++i;
            value += line[i] == 'n' ? '\n' : line[i];
          } else {
            value += line[i];
          }
          ++i;
        }
        ++i;  // closing quote
        s.labels[key] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // closing brace
    }
    if (i >= line.size() || line[i] != ' ') {
      e.error = "no value in: " + line;
      return e;
    }
    const std::string value = line.substr(i + 1);
    if (value == "+Inf") {
      s.value = HUGE_VAL;
    } else {
      try {
        s.value = std::stod(value);
      } catch (const std::exception&) {
        e.error = "bad value in: " + line;
        return e;
      }
    }
    e.samples.push_back(std::move(s));
  }
  return e;
}

// Sum of the samples named `name` whose labels include every pair of `match`.
double Sum(const Exposition& e, const std::string& name,
           const std::map<std::string, std::string>& match = {}) {
  double total = 0;
  for (const Sample& s : e.samples) {
    if (s.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) ok = false;
    }
    if (ok) total += s.value;
  }
  return total;
}

// Checks every histogram of `e`: per series (labels without le) the buckets never decrease,
// the last is le="+Inf", and it equals _count. Returns the problems found.
std::vector<std::string> HistogramProblems(const Exposition& e) {
  std::vector<std::string> problems;
  for (const auto& [family, type] : e.types) {
    if (type != "histogram") continue;
    std::map<std::map<std::string, std::string>, std::vector<const Sample*>> buckets;
    std::map<std::map<std::string, std::string>, double> counts;
    for (const Sample& s : e.samples) {
      if (s.name == family + "_bucket") {
        auto labels = s.labels;
        labels.erase("le");
        buckets[labels].push_back(&s);
      } else if (s.name == family + "_count") {
        counts[s.labels] = s.value;
      }
    }
    for (const auto& [labels, list] : buckets) {
      std::string series = family;
      for (const auto& [k, v] : labels) series += " " + k + "=" + v;
      double previous = -1;
      double previous_le = -HUGE_VAL;
      for (const Sample* b : list) {
        if (b->value < previous) problems.push_back(series + ": a bucket decreases");
        const std::string le = b->labels.at("le");
        const double bound = le == "+Inf" ? HUGE_VAL : std::stod(le);
        if (bound <= previous_le) problems.push_back(series + ": le bounds not ascending");
        previous = b->value;
        previous_le = bound;
      }
      if (list.back()->labels.at("le") != "+Inf") {
        problems.push_back(series + ": the last bucket is not le=\"+Inf\"");
      }
      auto count = counts.find(labels);
      if (count == counts.end()) {
        problems.push_back(series + ": no _count");
      } else if (count->second != list.back()->value) {
        problems.push_back(series + ": +Inf bucket " + std::to_string(list.back()->value) +
                           " != _count " + std::to_string(count->second));
      }
    }
  }
  return problems;
}

NodeOptions WithMetrics() {
  NodeOptions o = FastNodes();
  o.port_flags = {"--metrics-listen"};
  return o;
}

int MetricsPort(const NodeProcess& node) { return node.FlagPort("--metrics-listen"); }

// Scrapes every port and parses the texts; adds a failure and returns nullopt on an error.
std::optional<std::vector<Exposition>> ScrapeAll(const std::vector<int>& ports) {
  std::vector<Exposition> out;
  for (int port : ports) {
    const HttpResponse r = HttpGet(port, "/metrics");
    if (!r.error.empty() || r.status != 200) {
      ADD_FAILURE() << "scrape of port " << port << ": " << r.error << " (status " << r.status
                    << ")";
      return std::nullopt;
    }
    out.push_back(ParseExposition(r.body));
    if (!out.back().error.empty()) {
      ADD_FAILURE() << "port " << port << ": " << out.back().error;
      return std::nullopt;
    }
  }
  return out;
}

// --- tests -------------------------------------------------------------------------------------

TEST_F(MetricsTest, ThreeNodesReportKeysRpcsAndLookups) {
  NodeProcess* first = cluster().StartNode(WithMetrics());
  ASSERT_NE(first, nullptr);
  NodeProcess* second = cluster().StartNode(WithMetrics(), first->addr());
  ASSERT_NE(second, nullptr);
  NodeProcess* third = cluster().StartNode(WithMetrics(), first->addr());
  ASSERT_NE(third, nullptr);
  const std::vector<int> metrics_ports = {MetricsPort(*first), MetricsPort(*second),
                                          MetricsPort(*third)};
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));

  const auto keys = MakeKeys("metrics", 40);
  PutAll(addrs[0], keys);
  ChordClient client(addrs[1]);
  for (int k = 0; k < 10; ++k) {
    auto r = client.Lookup("lookup-" + std::to_string(k));
    EXPECT_TRUE(r.ok()) << r.status().message();
  }

  // The response itself: status, content type, length.
  const HttpResponse r = HttpGet(metrics_ports[0], "/metrics");
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.Header("content-length"), std::to_string(r.body.size()));
  EXPECT_EQ(r.Header("connection"), "close");

  // Primary key counts settle on exactly the keys written (each key has one owner), and, with
  // three replicas on three nodes, every node comes to hold every key (a copy missed during
  // the ring's first moments is filled in by anti-entropy).
  const double want = static_cast<double>(keys.size());
  double keys_total = -1;
  std::optional<std::vector<Exposition>> scraped;
  PollUntil(
      [&] {
        scraped = ScrapeAll(metrics_ports);
        if (!scraped) return true;  // failure already reported
        keys_total = 0;
        bool every_copy = true;
        for (const Exposition& e : *scraped) {
          keys_total += Sum(e, "chord_keys");
          if (Sum(e, "chord_keys") + Sum(e, "chord_replica_keys") != want) every_copy = false;
        }
        return keys_total == want && every_copy;
      },
      milliseconds(20000), milliseconds(250));
  ASSERT_TRUE(scraped.has_value());
  EXPECT_EQ(keys_total, want) << "chord_keys summed over the nodes";

  double lookup_observations = 0;
  for (size_t i = 0; i < scraped->size(); ++i) {
    const Exposition& e = (*scraped)[i];
    const std::string node = addrs[i];
    SCOPED_TRACE("node " + node);
    // Every series names the node it describes, but the process's own (once per process: its
    // CPU and memory, and its store's, which the vnodes share).
    for (const Sample& s : e.samples) {
      if (s.name.rfind("process_", 0) == 0 || s.name.rfind("chord_store_", 0) == 0) {
        EXPECT_TRUE(s.labels.empty()) << s.name;
        continue;
      }
      EXPECT_EQ(s.labels.count("node"), 1u) << s.name;
      EXPECT_EQ(s.name.rfind("chord_", 0), 0u) << s.name;
    }
    EXPECT_EQ(Sum(e, "chord_up", {{"node", node}}), 1);
    EXPECT_EQ(Sum(e, "chord_joined", {{"node", node}}), 1);
    EXPECT_GT(Sum(e, "chord_rpc_requests_total", {{"node", node}, {"type", "get_state"}}), 0);
    EXPECT_GT(Sum(e, "chord_stabilize_rounds_total", {{"node", node}}), 0);
    // With three replicas on three nodes, every node holds every key.
    EXPECT_EQ(Sum(e, "chord_keys") + Sum(e, "chord_replica_keys"), want);
    EXPECT_EQ(Sum(e, "chord_tombstones"), 0);
    lookup_observations += Sum(e, "chord_lookup_hops_count");
    EXPECT_LE(Sum(e, "chord_lookup_hops_count"), Sum(e, "chord_lookups_total"));
    // Families are declared, counters end in _total.
    for (const char* family : {"chord_up",
                               "chord_joined",
                               "chord_keys",
                               "chord_replica_keys",
                               "chord_tombstones",
                               "chord_lookups_total",
                               "chord_lookup_hops",
                               "chord_rpc_requests_total",
                               "chord_rpc_timeouts_total",
                               "chord_rpc_latency_seconds",
                               "chord_stabilize_rounds_total",
                               "chord_successor_changes_total",
                               "chord_predecessor_changes_total",
                               "chord_keys_transferred_total",
                               "chord_bytes_transferred_total",
                               "chord_anti_entropy_rounds_total",
                               "chord_anti_entropy_bytes_total",
                               "chord_keys_repaired_total",
                               "chord_keys_dropped_total",
                               "chord_tombstones_purged_total",
                               "chord_writes_coordinated_total"}) {
      EXPECT_EQ(e.helps.count(family), 1u) << family;
      ASSERT_EQ(e.types.count(family), 1u) << family;
      const std::string type = e.types.at(family);
      if (type == "counter") {
        EXPECT_EQ(std::string(family).rfind("_total"), strlen(family) - 6) << family;
      }
    }
    EXPECT_EQ(e.types.at("chord_lookup_hops"), "histogram");
    EXPECT_EQ(e.types.at("chord_rpc_latency_seconds"), "histogram");
    for (const std::string& problem : HistogramProblems(e)) ADD_FAILURE() << problem;
  }
  EXPECT_GT(lookup_observations, 0);
  // Puts went through the first node, which coordinated or forwarded every one of them.
  double coordinated = 0;
  for (const Exposition& e : *scraped) coordinated += Sum(e, "chord_writes_coordinated_total");
  EXPECT_GE(coordinated, static_cast<double>(keys.size()));
}

// The standard process metrics: once per process (two vnodes, one series each), plausible,
// the same figures in `chordctl status --json` and its text form, and CPU time that grows
// with the load served.
TEST_F(MetricsTest, ProcessCpuAndMemoryInMetricsAndStatusGrowWithLoad) {
  NodeOptions o = WithMetrics();
  o.extra_args.insert(o.extra_args.end(), {"--vnodes", "2"});
  NodeProcess* node = cluster().StartNode(o);
  ASSERT_NE(node, nullptr);
  const int metrics_port = MetricsPort(*node);
  ASSERT_TRUE(PollUntil(
      [&] {
        for (const char* vnode : {"#0", "#1"}) {
          auto status = ChordClient(node->addr() + vnode, 1000).GetStatus();
          if (!status.ok() || !status->joined()) return false;
        }
        return true;
      },
      milliseconds(15000), milliseconds(100)))
      << "the two vnodes did not both report joined";

  const auto scrape = [&]() -> std::optional<Exposition> {
    auto all = ScrapeAll({metrics_port});
    if (!all) return std::nullopt;
    return (*all)[0];
  };
  const std::optional<Exposition> first = scrape();
  ASSERT_TRUE(first.has_value());
  for (const char* family :
       {"process_cpu_seconds_total", "process_resident_memory_bytes",
        "process_virtual_memory_bytes", "process_start_time_seconds", "process_open_fds"}) {
    int series = 0;
    for (const Sample& s : first->samples) series += s.name == family ? 1 : 0;
    EXPECT_EQ(series, 1) << family << ": one series per process, however many vnodes";
    EXPECT_EQ(first->helps.count(family), 1u) << family;
  }
  EXPECT_EQ(first->types.at("process_cpu_seconds_total"), "counter");
  EXPECT_EQ(first->types.at("process_resident_memory_bytes"), "gauge");
  // A node just started may not have used one clock tick (10 ms) of CPU yet; that the figure
  // grows is checked under load below.
  EXPECT_GE(Sum(*first, "process_cpu_seconds_total"), 0);
  EXPECT_GT(Sum(*first, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(Sum(*first, "process_virtual_memory_bytes"),
            Sum(*first, "process_resident_memory_bytes"));
  EXPECT_GT(Sum(*first, "process_open_fds"), 2);
  EXPECT_GT(Sum(*first, "process_start_time_seconds"), 1e9);

  const auto status_json = [&]() -> nlohmann::json {
    const CommandResult r = cluster().Chordctl({"--node", node->addr(), "status", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  };
  const nlohmann::json before = status_json();
  ASSERT_TRUE(before.is_object() && before.contains("process")) << before.dump();
  const double cpu_before = before["process"]["cpu_seconds_total"].get<double>();
  EXPECT_GE(cpu_before, 0);
  EXPECT_GT(before["process"]["resident_memory_bytes"].get<uint64_t>(), 1u << 20);
  EXPECT_GT(before["process"]["open_fds"].get<uint64_t>(), 2u);
  EXPECT_GT(before["process"]["start_time_seconds"].get<double>(), 1e9);
  const CommandResult text = cluster().Chordctl({"--node", node->addr(), "status"});
  EXPECT_NE(text.out.find("CPU seconds"), std::string::npos) << text.out;

  // Serve load until the node's CPU time has moved (clock ticks are 10 ms).
  ChordClient client(node->addr());
  double cpu_after = cpu_before;
  for (int round = 0; round < 50 && cpu_after <= cpu_before; ++round) {
    for (int k = 0; k < 500; ++k) {
      auto r = client.Put("load-" + std::to_string(k), std::string(100, 'v'));
      ASSERT_TRUE(r.ok()) << r.status().message();
    }
    const nlohmann::json after = status_json();
    ASSERT_TRUE(after.contains("process")) << after.dump();
    cpu_after = after["process"]["cpu_seconds_total"].get<double>();
  }
  EXPECT_GT(cpu_after, cpu_before) << "CPU time did not grow with 25,000 puts served";
  // A delete replaces a 100-byte value by a tombstone: the --memory store keeps the freed
  // block (the tombstone's smaller block may come off a free list: the gauge gains the
  // difference, more than 64 bytes).
  const std::optional<Exposition> before_delete = scrape();
  ASSERT_TRUE(before_delete.has_value());
  EXPECT_EQ(before_delete->types.at("chord_store_free_bytes"), "gauge");
  ASSERT_TRUE(client.Delete("load-0").ok());
  const std::optional<Exposition> last = scrape();
  ASSERT_TRUE(last.has_value());
  EXPECT_GE(Sum(*last, "process_cpu_seconds_total"), cpu_after);
  EXPECT_GE(Sum(*last, "chord_store_free_bytes"),
            Sum(*before_delete, "chord_store_free_bytes") + 64);
  // status shows the same figure. Nothing frees or reuses blocks between the two reads: one
  // process holds every copy (no replication, anti-entropy or hints), the test writes nothing
  // more, and no tombstone is purged within the hour's grace.
  const nlohmann::json after_delete = status_json();
  ASSERT_TRUE(after_delete.contains("store_free_bytes")) << after_delete.dump();
  EXPECT_EQ(after_delete["store_free_bytes"].get<double>(), Sum(*last, "chord_store_free_bytes"));
  const CommandResult text_after = cluster().Chordctl({"--node", node->addr(), "status"});
  const size_t at = text_after.out.find("store_free_bytes:");
  ASSERT_NE(at, std::string::npos) << text_after.out;
  std::istringstream text_line(text_after.out.substr(at + std::strlen("store_free_bytes:")));
  uint64_t text_free = 0;
  text_line >> text_free;
  EXPECT_EQ(text_free, after_delete["store_free_bytes"].get<uint64_t>()) << text_after.out;
}

TEST_F(MetricsTest, OtherPathsAre404AndGarbageClosesTheConnection) {
  NodeProcess* node = cluster().StartNode(WithMetrics());
  ASSERT_NE(node, nullptr);
  const int port = MetricsPort(*node);

  // Another path: 404 with a JSON error of one sentence.
  const HttpResponse other = HttpGet(port, "/other");
  ASSERT_TRUE(other.error.empty()) << other.error;
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(other.Header("content-length"), std::to_string(other.body.size()));
  EXPECT_EQ(other.Header("content-type"), "application/json");
  const nlohmann::json other_doc = nlohmann::json::parse(other.body, nullptr, false);
  ASSERT_TRUE(other_doc.is_object()) << other.body;
  EXPECT_EQ(other_doc.value("code", ""), "no_such_path") << other.body;
  EXPECT_NE(other_doc.value("error", "").find("/other"), std::string::npos) << other.body;
  EXPECT_EQ(other_doc.value("error", "").find('\n'), std::string::npos) << other.body;
  // This listener serves the metrics only, not the API.
  EXPECT_EQ(HttpGet(port, "/v1/status").status, 404);

  const HttpResponse post = HttpCall(port, "POST", "/metrics", "x");
  ASSERT_TRUE(post.error.empty()) << post.error;
  EXPECT_EQ(post.status, 405);
  EXPECT_NE(post.Header("allow").find("GET"), std::string::npos) << post.Header("allow");
  EXPECT_EQ(post.Header("allow").find("POST"), std::string::npos) << post.Header("allow");

  const HttpResponse head = HttpCall(port, "HEAD", "/metrics");
  ASSERT_TRUE(head.error.empty()) << head.error;
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());

  const HttpResponse query = HttpGet(port, "/metrics?format=text");
  EXPECT_EQ(query.status, 200) << query.error;

  // Binary garbage (a TLS hello), a request line that is not HTTP, an unknown protocol
  // version, and a request head over H2O's head limit (8,192 + 100 x 4,096 bytes) that never
  // ends: each gets the connection closed, never a 200 (a 4xx before the close is allowed;
  // H2O answers 400).
  const std::vector<std::pair<std::string, std::string>> garbage = {
      {"binary", std::string("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11)},
      {"not HTTP", "HELLO THERE\r\n\r\n"},
      {"bad version", "GET /metrics SPDY/3\r\n\r\n"},
      {"oversized", "GET /metrics HTTP/1.1\r\nX-Filler: " + std::string(500000, 'a')},
  };
  for (const auto& [what, bytes] : garbage) {
    SCOPED_TRACE(what);
    const int fd = ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    SendAll(fd, bytes);  // may fail part-way once the server has closed
    const ReadOutcome read = ReadUntilClosed(fd, milliseconds(15000));
    ::close(fd);
    EXPECT_TRUE(read.closed) << "the connection stayed open";
    EXPECT_EQ(read.data.find(" 200 "), std::string::npos) << read.data.substr(0, 200);
    if (!read.data.empty()) {
      EXPECT_EQ(read.data.rfind("HTTP/1.1 4", 0), 0u) << read.data.substr(0, 200);
    }
  }
  // A complete head of ~16,000 bytes in short lines, in one write: more header lines than
  // H2O takes (100), answered 4xx (H2O says 400) and closed.
  std::string big = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
  while (big.size() + 100 + 2 <= 16000) big += "X-Filler: " + std::string(88, 'a') + "\r\n";
  big += "\r\n";
  const HttpResponse too_large = HttpExchange(port, big);
  if (too_large.error.empty()) {
    EXPECT_GE(too_large.status, 400);
    EXPECT_LT(too_large.status, 500);
  }
  EXPECT_TRUE(too_large.closed) << too_large.error;
  EXPECT_NE(too_large.status, 200);

  // The node keeps serving metrics and its ring port.
  const HttpResponse after = HttpGet(port, "/metrics");
  EXPECT_EQ(after.status, 200) << after.error;
  EXPECT_NE(after.body.find("chord_up{node=\"" + node->addr() + "\"} 1"), std::string::npos);
  ChordClient client(node->addr());
  EXPECT_TRUE(client.GetStatus().ok());
  EXPECT_TRUE(node->IsRunning());
}

TEST_F(MetricsTest, SlowAndIdleConnectionsTimeOut) {
  NodeProcess* node = cluster().StartNode(WithMetrics());
  ASSERT_NE(node, nullptr);
  const int port = MetricsPort(*node);
  // One connection sends half a request, another nothing at all; both are closed, without an
  // answer, within H2O's request timeout (10 s, HttpServer::Options::request_timeout_ms in
  // node/http/http_server.h; asserted as 15 s), and meanwhile other scrapes are answered.
  const int half = ConnectLoopback(port);
  const int silent = ConnectLoopback(port);
  ASSERT_GE(half, 0);
  ASSERT_GE(silent, 0);
  ASSERT_TRUE(SendAll(half, "GET /metr"));
  EXPECT_EQ(HttpGet(port, "/metrics").status, 200);
  const auto start = std::chrono::steady_clock::now();
  const ReadOutcome a = ReadUntilClosed(half, milliseconds(20000));
  const ReadOutcome b = ReadUntilClosed(silent, milliseconds(20000));
  const auto waited =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
  ::close(half);
  ::close(silent);
  EXPECT_TRUE(a.closed);
  EXPECT_TRUE(b.closed);
  EXPECT_TRUE(a.data.empty()) << a.data;
  EXPECT_LT(waited.count(), 15000);
  EXPECT_EQ(HttpGet(port, "/metrics").status, 200);
  EXPECT_TRUE(node->IsRunning());
}

TEST_F(MetricsTest, MetricsAddressInUseIsOneSentenceAndExitOne) {
  // Hold a port, then ask a node to serve metrics on it.
  const HeldPort held = HoldFreePort();
  ASSERT_GE(held.fd, 0);
  const std::string metrics_addr = LocalAddr(held.port);

  const std::vector<std::string> argv = {
      CHORD_NODE_BIN, "--listen",         LocalAddr(PickFreePort()),
      "--memory",     "--metrics-listen", metrics_addr};
  const CommandResult r = RunCommand(argv, cluster().dir(), milliseconds(10000));
  ::close(held.fd);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // The last stderr line is the one sentence (log lines may come before it).
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  const std::string last =
      err.substr(err.rfind('\n') == std::string::npos ? 0 : err.rfind('\n') + 1);
  EXPECT_NE(last.find(metrics_addr), std::string::npos) << r.err;
  EXPECT_NE(last.find("metrics"), std::string::npos) << r.err;

  // A malformed address is a usage error.
  const CommandResult bad = RunCommand({CHORD_NODE_BIN, "--listen", LocalAddr(PickFreePort()),
                                        "--memory", "--metrics-listen", "nowhere"},
                                       cluster().dir(), milliseconds(10000));
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("--metrics-listen"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace chord::testing
