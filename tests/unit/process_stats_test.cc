// The process figures behind process_cpu_seconds_total and friends: the /proc parsers
// (protocol/proc_stat.h) on fixed texts, including command names with spaces and parentheses
// and malformed input; a reading of this very process; the runtime's source
// (node/runtime/process_stats.h); the core copying an injected sample into its Status reply;
// and their Prometheus text (node/runtime/prometheus_text.h).
#include "node/runtime/process_stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "node/core/chord_node.h"
#include "node/core/process_sample.h"
#include "node/runtime/prometheus_text.h"
#include "node/storage/memory_store.h"
#include "protocol/proc_stat.h"
#include "tests/unit/status_reply.h"

namespace chord {
namespace {

// A /proc/PID/stat line of proc(5): utime 1500, stime 250, starttime 4242, vsize 123456789,
// rss 2048.
constexpr char kStatLine[] =
    "1234 (chord-node) S 1 1234 1234 0 -1 4194560 5000 0 0 0 1500 250 0 0 20 0 3 0 4242 "
    "123456789 2048 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";

TEST(ProcStatTest, ParsesTheFieldsOfAStatLine) {
  const auto f = ParseProcStat(kStatLine);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->utime_ticks, 1500u);
  EXPECT_EQ(f->stime_ticks, 250u);
  EXPECT_EQ(f->start_ticks, 4242u);
  EXPECT_EQ(f->virtual_bytes, 123456789u);
  EXPECT_EQ(f->resident_pages, 2048u);
}

TEST(ProcStatTest, CountsFieldsFromTheLastParenthesisOfTheCommandName) {
  // A command name may hold spaces and ')' itself.
  std::string line = kStatLine;
  line.replace(line.find("(chord-node)"), 12, "(a) b (c) d)");
  const auto f = ParseProcStat(line);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->utime_ticks, 1500u);
  EXPECT_EQ(f->resident_pages, 2048u);
}

TEST(ProcStatTest, ReadsTheSchedulingPolicyWhenTheLineHasIt) {
  // Field 41 of kStatLine is 0 (SCHED_OTHER); put 3 (SCHED_BATCH) there.
  std::string line = kStatLine;
  size_t at = line.rfind(')') + 1;
  for (int field = 3; field <= 41; ++field) at = line.find(' ', at) + 1;  // start of field 41
  line.replace(at, 1, "3");
  EXPECT_EQ(ParseProcStat(kStatLine)->policy, 0u);
  EXPECT_EQ(ParseProcStat(line)->policy, 3u);
  EXPECT_EQ(ParseProcStat(line)->utime_ticks, 1500u);
  // A line that stops before field 41 still parses, without a policy.
  const std::string short_line = line.substr(0, at - 1) + "\n";
  ASSERT_TRUE(ParseProcStat(short_line).has_value());
  EXPECT_FALSE(ParseProcStat(short_line)->policy.has_value());
}

TEST(ProcStatTest, RefusesMalformedStatLines) {
  EXPECT_FALSE(ParseProcStat("").has_value());
  EXPECT_FALSE(ParseProcStat("1234 chord-node S 1 2 3").has_value());      // no parentheses
  EXPECT_FALSE(ParseProcStat("1234 (chord-node) S 1 2 3\n").has_value());  // too short
  std::string bad = kStatLine;
  bad.replace(bad.find(" 1500 "), 6, " 15x0 ");  // utime not a number
  EXPECT_FALSE(ParseProcStat(bad).has_value());
}

TEST(ProcStatTest, ParsesStatmAndBootTime) {
  EXPECT_EQ(ParseProcStatmResident("5000 1200 300 10 0 900 0\n"), 1200u);
  EXPECT_FALSE(ParseProcStatmResident("5000").has_value());
  EXPECT_FALSE(ParseProcStatmResident("5000 -3 1").has_value());
  EXPECT_EQ(ParseBootTime("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 1700000000u);
  EXPECT_FALSE(ParseBootTime("cpu  1 2 3\n").has_value());
  EXPECT_FALSE(ParseBootTime("btime soon\n").has_value());
}

TEST(ProcStatTest, ParsesNamedCountersOfIoAndStatus) {
  const char* io = "rchar: 5000\nwchar: 300\nsyscr: 12\nsyscw: 7\nread_bytes: 0\n";
  EXPECT_EQ(ParseProcCounter(io, "syscr"), 12u);
  EXPECT_EQ(ParseProcCounter(io, "syscw"), 7u);
  EXPECT_FALSE(ParseProcCounter(io, "sysc").has_value());  // a whole name, not a prefix
  const char* status =
      "Name:\tchord-node\nvoluntary_ctxt_switches:\t42\nnonvoluntary_ctxt_switches:\t9\n";
  EXPECT_EQ(ParseProcCounter(status, "voluntary_ctxt_switches"), 42u);
  EXPECT_EQ(ParseProcCounter(status, "nonvoluntary_ctxt_switches"), 9u);
  EXPECT_FALSE(ParseProcCounter("syscr: many\n", "syscr").has_value());
  EXPECT_FALSE(ParseProcCounter("syscr: 1 2\n", "syscr").has_value());
  EXPECT_FALSE(ParseProcCounter("", "syscr").has_value());
}

// Burns some CPU time in this thread.
uint64_t Spin() {
  volatile uint64_t x = 0;
  for (uint64_t i = 0; i < 300'000'000; ++i) x = x + i;
  return x;
}

TEST(ProcStatTest, ReadsThisProcessAndSeesItsCpuTimeGrow) {
  const Result<ProcReading> before = ReadProcStat(0);
  ASSERT_TRUE(before.ok()) << before.status().message();
  EXPECT_GT(before->resident_bytes, 1u << 20);
  EXPECT_GE(before->virtual_bytes, before->resident_bytes);
  EXPECT_GT(before->start_time_seconds, 1e9);  // after 2001
  Spin();
  const Result<ProcReading> after = ReadProcStat(getpid());
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_GT(after->cpu_seconds, before->cpu_seconds);
}

TEST(ProcStatTest, CountsThisProcessesSystemCallsAndSleeps) {
  if (!std::ifstream("/proc/self/io")) GTEST_SKIP() << "this kernel gives no /proc/self/io";
  const ProcCounters before = ReadProcCounters(0);
  ASSERT_TRUE(before.io_syscalls && before.voluntary_switches);
  for (int i = 0; i < 5; ++i) ::usleep(2000);  // each sleep gives the CPU up
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  char byte = 'x';
  ASSERT_EQ(::write(fds[1], &byte, 1), 1);
  ASSERT_EQ(::read(fds[0], &byte, 1), 1);
  ::close(fds[0]);
  ::close(fds[1]);
  const ProcCounters after = ReadProcCounters(getpid());
  ASSERT_TRUE(after.io_syscalls && after.voluntary_switches);
  EXPECT_GE(*after.voluntary_switches, *before.voluntary_switches + 5);
  EXPECT_GE(*after.io_syscalls, *before.io_syscalls + 2);  // the pipe's write and read at least
  const ProcCounters gone = ReadProcCounters(1 << 30);
  EXPECT_FALSE(gone.io_syscalls.has_value());
  EXPECT_FALSE(gone.voluntary_switches.has_value());
}

TEST(ProcStatTest, AMissingProcessIsNotFound) {
  const Result<ProcReading> r = ReadProcStat(1 << 30);  // above any pid_max
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsNotFound()) << r.status().message();
}

TEST(ProcessStatsSourceTest, SamplesThisProcess) {
  const ProcStatsSource source;
  const ProcessSample s = source.Sample();
  ASSERT_TRUE(s.valid);
  EXPECT_GT(s.resident_bytes, 1u << 20);
  EXPECT_GE(s.open_fds, 3u);  // stdin, stdout, stderr at least
  EXPECT_GE(s.max_fds, s.open_fds);
  const int fd = ::dup(0);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(source.Sample().open_fds, s.open_fds + 1);
  ::close(fd);
  EXPECT_EQ(CountOpenFds("/no/such/dir"), 0u);
}

// A fixed sample, as the simulator or a test injects it.
class FakeProcessStats : public ProcessStatsSource {
 public:
  ProcessSample Sample() const override {
    ProcessSample s;
    s.valid = true;
    s.cpu_seconds = 12.5;
    s.resident_bytes = 64u << 20;
    s.virtual_bytes = 1u << 30;
    s.start_time_seconds = 1700000000.5;
    s.open_fds = 17;
    s.max_fds = 1024;
    return s;
  }
};

// The Status reply of a fresh one-node ring, with `source` injected (or none).
wire::StatusResponse StatusOf(const ProcessStatsSource* source) {
  MemoryStore store;
  ChordNode node(&store, NodeConfig{}, NodeRef::ForAddress("127.0.0.1:4000"), /*seed=*/7);
  if (source != nullptr) node.SetProcessStats(source);
  node.Start(Clock{1000, 1700000000000}, {});
  (void)node.TakeReady();
  return StatusReplyOf(node, Clock{1001, 1700000000001});
}

TEST(ProcessStatsSourceTest, TheCoreCopiesTheInjectedSampleIntoItsStatusReply) {
  const FakeProcessStats fake;
  const wire::StatusResponse s = StatusOf(&fake);
  ASSERT_TRUE(s.has_process());
  EXPECT_EQ(s.process().cpu_seconds(), 12.5);
  EXPECT_EQ(s.process().resident_memory_bytes(), 64u << 20);
  EXPECT_EQ(s.process().virtual_memory_bytes(), 1u << 30);
  EXPECT_EQ(s.process().start_time_seconds(), 1700000000.5);
  EXPECT_EQ(s.process().open_fds(), 17u);
  EXPECT_EQ(s.process().max_fds(), 1024u);
  EXPECT_FALSE(StatusOf(nullptr).has_process());  // no source: no figures
}

TEST(ProcessMetricsTextTest, RendersTheStandardProcessMetricsOnce) {
  const std::string text = RenderProcessMetricsText(FakeProcessStats().Sample());
  EXPECT_EQ(
      text,
      "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
      "# TYPE process_cpu_seconds_total counter\n"
      "process_cpu_seconds_total 12.5\n"
      "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
      "# TYPE process_resident_memory_bytes gauge\n"
      "process_resident_memory_bytes 67108864\n"
      "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
      "# TYPE process_virtual_memory_bytes gauge\n"
      "process_virtual_memory_bytes 1073741824\n"
      "# HELP process_start_time_seconds Start time of the process since unix epoch in "
      "seconds.\n"
      "# TYPE process_start_time_seconds gauge\n"
      "process_start_time_seconds 1.7000000005e+09\n"  // FormatPrometheusValue's shortest form
      "# HELP process_open_fds Number of open file descriptors.\n"
      "# TYPE process_open_fds gauge\n"
      "process_open_fds 17\n"
      "# HELP process_max_fds Maximum number of open file descriptors.\n"
      "# TYPE process_max_fds gauge\n"
      "process_max_fds 1024\n");
  ProcessSample unlimited = FakeProcessStats().Sample();
  unlimited.max_fds = 0;  // RLIM_INFINITY: no process_max_fds series
  EXPECT_EQ(RenderProcessMetricsText(unlimited).find("process_max_fds"), std::string::npos);
  EXPECT_EQ(RenderProcessMetricsText(ProcessSample{}), "");  // not readable: nothing
}

TEST(StoreMetricsTextTest, RendersTheStoresFreeBytesOnce) {
  EXPECT_EQ(RenderStoreMetricsText(4096),
            "# HELP chord_store_free_bytes Bytes of free record blocks (freed, or the ends of "
            "earlier chunks) the in-memory store keeps for reuse (0 with RocksDB).\n"
            "# TYPE chord_store_free_bytes gauge\n"
            "chord_store_free_bytes 4096\n");
}

}  // namespace
}  // namespace chord
