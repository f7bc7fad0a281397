// chord-bench without a ring: its command line (tools/bench/bench_cli.h), the server-cost
// arithmetic (tools/bench/server_cost.h: CPU microseconds per operation, bytes per key) and the
// new report fields in both renderings (tools/bench/bench_report.h).
#include "tools/bench/bench_cli.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tools/bench/bench_report.h"
#include "tools/bench/server_cost.h"

namespace chord::bench {
namespace {

struct Parsed {
  int code = 0;
  BenchOptions options;
  std::string out, err;
};

Parsed Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "chord-bench");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  Parsed p;
  TlsFiles tls;
  std::ostringstream out, err;
  p.code =
      ParseBenchCommandLine(static_cast<int>(argv.size()), argv.data(), &p.options, &tls, out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

TEST(BenchCliTest, DefaultsMeasureOneRequestInFlightAmongAllKeysFromTheRing) {
  const Parsed p = Parse({"--node", "127.0.0.1:4000"});
  ASSERT_EQ(p.code, kBenchRun) << p.err;
  EXPECT_EQ(p.options.pipeline, 1);
  EXPECT_EQ(p.options.hot_keys, 0u);
  EXPECT_EQ(MeasuredKeys(p.options), p.options.keys);
  EXPECT_TRUE(p.options.server_pids.empty());
  EXPECT_TRUE(p.options.server_cost);
}

TEST(BenchCliTest, ParsesPipelineHotKeysAndServerPids) {
  const Parsed p = Parse({"--node", "127.0.0.1:4000", "--pipeline", "16", "--keys", "100000",
                          "--hot-keys", "1000", "--server-pid", "123", "--server-pid", "456"});
  ASSERT_EQ(p.code, kBenchRun) << p.err;
  EXPECT_EQ(p.options.pipeline, 16);
  EXPECT_EQ(p.options.keys, 100000u);
  EXPECT_EQ(MeasuredKeys(p.options), 1000u);
  EXPECT_EQ(p.options.server_pids, (std::vector<int>{123, 456}));
  // More hot keys than keys: all keys.
  const Parsed q = Parse({"--node", "127.0.0.1:4000", "--keys", "10", "--hot-keys", "50"});
  ASSERT_EQ(q.code, kBenchRun) << q.err;
  EXPECT_EQ(MeasuredKeys(q.options), 10u);
  const Parsed off = Parse({"--node", "127.0.0.1:4000", "--no-server-cost"});
  ASSERT_EQ(off.code, kBenchRun) << off.err;
  EXPECT_FALSE(off.options.server_cost);
}

TEST(BenchCliTest, RefusesBadValuesWithOneSentence) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--pipeline", "0"},
           {"--pipeline", "5000"},
           {"--pipeline", "many"},
           {"--hot-keys", "0"},
           {"--server-pid", "0"},
           {"--server-pid", "redis"},
           {"--server-pid", "12", "--no-server-cost"},
           {"--node", "no-port"},
       }) {
    std::vector<std::string> full = {"--node", "127.0.0.1:4000"};
    full.insert(full.end(), args.begin(), args.end());
    const Parsed p = Parse(full);
    EXPECT_EQ(p.code, kBenchExitUsage) << args[0] << " " << args[1];
    EXPECT_EQ(p.err.find("chord-bench: "), 0u) << p.err;
    EXPECT_EQ(p.err.find('\n'), p.err.size() - 1) << p.err;
  }
}

TEST(BenchCliTest, HelpExitsZeroAndNamesTheNewOptions) {
  const Parsed p = Parse({"--help"});
  EXPECT_EQ(p.code, kBenchExitOk);
  for (const char* option : {"--pipeline", "--hot-keys", "--server-pid", "--no-server-cost"}) {
    EXPECT_NE(p.out.find(option), std::string::npos) << option;
  }
}

ServerReading Reading(double cpu_seconds, uint64_t resident_bytes, size_t processes) {
  ServerReading r;
  r.cpu_seconds = cpu_seconds;
  r.resident_bytes = resident_bytes;
  r.processes = processes;
  return r;
}

TEST(ServerCostTest, CpuMicrosPerOpIsTheCpuDeltaOverTheOperations) {
  const ServerReading before = Reading(10.0, 100u << 20, 3);
  const ServerReading after = Reading(10.5, 150u << 20, 3);
  EXPECT_DOUBLE_EQ(*CpuMicrosPerOp(before, after, 25000), 20.0);  // 0.5 s / 25,000 ops
  EXPECT_FALSE(CpuMicrosPerOp(before, after, 0).has_value());
  EXPECT_FALSE(CpuMicrosPerOp(after, before, 100).has_value());  // a process restarted
}

TEST(ServerCostTest, BytesPerKeyIsTheResidentGrowthOverTheKeys) {
  const ServerReading before = Reading(1.0, 100u << 20, 1);
  const ServerReading after = Reading(2.0, (100u << 20) + 450u * 10000u, 1);
  EXPECT_DOUBLE_EQ(*BytesPerKey(before, after, 10000), 450.0);
  EXPECT_DOUBLE_EQ(*BytesPerKey(after, before, 10000), -450.0);  // memory given back
  EXPECT_FALSE(BytesPerKey(before, after, 0).has_value());
}

TEST(ServerCostTest, BreakdownSplitsTheCpuAndCountsCallsAndSleepsPerOperation) {
  ServerReading before, after;
  before.user_seconds = 1.0;
  after.user_seconds = 1.2;
  before.system_seconds = 3.0;
  after.system_seconds = 3.6;
  before.io_syscalls = 1000;
  after.io_syscalls = 201000;
  before.voluntary_switches = 50;
  after.voluntary_switches = 10050;
  const ServerBreakdown b = BreakdownPerOp(before, after, 100000);
  EXPECT_DOUBLE_EQ(*b.user_us_per_op, 2.0);    // 0.2 s / 100,000 ops
  EXPECT_DOUBLE_EQ(*b.system_us_per_op, 6.0);  // 0.6 s / 100,000 ops
  EXPECT_DOUBLE_EQ(*b.syscalls_per_op, 2.0);
  EXPECT_DOUBLE_EQ(*b.sleeps_per_op, 0.1);
  EXPECT_FALSE(BreakdownPerOp(before, after, 0).user_us_per_op.has_value());
  EXPECT_FALSE(BreakdownPerOp(after, before, 100).syscalls_per_op.has_value());  // restarted
  after.io_syscalls.reset();  // a process whose /proc/PID/io could not be read
  const ServerBreakdown partial = BreakdownPerOp(before, after, 100000);
  EXPECT_FALSE(partial.syscalls_per_op.has_value());
  EXPECT_TRUE(partial.sleeps_per_op.has_value());
}

TEST(ServerCostTest, ProcessAddressDropsTheVnodeSuffix) {
  EXPECT_EQ(ProcessAddress("127.0.0.1:4000#3"), "127.0.0.1:4000");
  EXPECT_EQ(ProcessAddress("127.0.0.1:4000"), "127.0.0.1:4000");
}

TEST(ServerCostTest, ReadsAServerByPid) {
  ServerCostProbe probe = ServerCostProbe::ForPids({getpid(), getpid()});
  ASSERT_TRUE(probe.Discover().ok());
  EXPECT_STREQ(probe.source(), "pid");
  const Result<ServerReading> r = probe.Read();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->processes, 2u);
  EXPECT_GT(r->resident_bytes, 2u << 20);  // twice this process
  // The split and the counters are summed over both.
  ASSERT_TRUE(r->user_seconds && r->system_seconds);
  EXPECT_NEAR(*r->user_seconds + *r->system_seconds, r->cpu_seconds, 1e-9);
  if (std::ifstream("/proc/self/io")) {
    ASSERT_TRUE(r->io_syscalls && r->voluntary_switches);
    EXPECT_GT(*r->io_syscalls, 0u);  // it read /proc/PID/stat and the others, twice
  }
  EXPECT_FALSE(ServerCostProbe::ForPids({1 << 30}).Read().ok());
}

TEST(BenchReportTest, CarriesTheServerCostInJsonAndText) {
  BenchReport r;
  r.options.pipeline = 4;
  r.options.keys = 1000;
  r.options.hot_keys = 100;
  r.ops = 1000;
  r.preload_keys = 1000;
  r.server_source = "status";
  r.server_processes = 3;
  r.server_cpu_s = 0.02;
  r.server_cpu_us_per_op = 20.0;
  r.server_rss_bytes = 30u << 20;
  r.preload_rss_bytes = 450000.0;
  r.bytes_per_key = 450.0;
  const nlohmann::ordered_json j = ReportToJson(r);
  EXPECT_EQ(j["pipeline"], 4);
  EXPECT_EQ(j["hot_keys"], 100);
  EXPECT_EQ(j["server_source"], "status");
  EXPECT_EQ(j["server_processes"], 3);
  EXPECT_DOUBLE_EQ(j["server_cpu_us_per_op"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(j["bytes_per_key"].get<double>(), 450.0);
  EXPECT_EQ(j["server_rss_bytes"], 30u << 20);
  const std::string text = ReportToText(r);
  EXPECT_NE(text.find("server CPU  20.0 us/op"), std::string::npos) << text;
  EXPECT_NE(text.find("bytes/key   450.0"), std::string::npos) << text;
  EXPECT_NE(text.find("pipeline 4"), std::string::npos) << text;
  EXPECT_NE(text.find("100 hot keys"), std::string::npos) << text;
  EXPECT_TRUE(j["server_user_us_per_op"].is_null());  // from the nodes' status: one figure
  EXPECT_EQ(text.find("split"), std::string::npos) << text;

  // From /proc: the split and the counters, in JSON and in the text.
  r.server_source = "pid";
  r.server_user_us_per_op = 4.5;
  r.server_sys_us_per_op = 15.5;
  r.server_syscalls_per_op = 2.0;
  r.server_sleeps_per_op = 0.125;
  const nlohmann::ordered_json p = ReportToJson(r);
  EXPECT_DOUBLE_EQ(p["server_user_us_per_op"].get<double>(), 4.5);
  EXPECT_DOUBLE_EQ(p["server_sys_us_per_op"].get<double>(), 15.5);
  EXPECT_DOUBLE_EQ(p["server_syscalls_per_op"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(p["server_sleeps_per_op"].get<double>(), 0.125);
  const std::string ptext = ReportToText(r);
  EXPECT_NE(ptext.find("split       user 4.50  system 15.50 us/op"), std::string::npos) << ptext;
  EXPECT_NE(ptext.find("2.000 read/write system calls, 0.125 sleeps"), std::string::npos) << ptext;

  // Not measured: null figures and the reason.
  BenchReport none;
  none.server_cost_error = "cannot find the ring's processes";
  const nlohmann::ordered_json k = ReportToJson(none);
  EXPECT_TRUE(k["server_cpu_us_per_op"].is_null());
  EXPECT_TRUE(k["bytes_per_key"].is_null());
  EXPECT_EQ(k["server_cost_error"], "cannot find the ring's processes");
  EXPECT_NE(ReportToText(none).find("server cost not measured"), std::string::npos);
}

}  // namespace
}  // namespace chord::bench
