// Multi-process test of chord-bench (DESIGN.md section 5) against a real 3-node ring (R = 3)
// on 127.0.0.1: routed gets and puts and direct gets for 2 s each, checked for structure only
// (requests succeeded, no errors, ordered percentiles, no hops for direct requests; never a
// speed), plus its usage errors (exit 2) and an unreachable node (exit 3); and --redis
// against three real redis-servers (skipped, with the reason, where redis-server is not
// installed), whose keys are checked against the server each key's SHA-1 picks, computed here,
// and whose timeout bounds a request whose answer trickles in (a stand-in server here).
// chord-bench is looked up beside chord-node's build directory (<build>/tools/chord-bench);
// the tests skip when it has not been built.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/loopback_listener.h"

namespace chord::testing {
namespace {

constexpr milliseconds kBenchTimeout(90000);
constexpr int kNodes = 3;
constexpr int kReplicas = 3;

// <build>/tools/chord-bench, from CHORD_NODE_BIN = <build>/node/chord-node.
std::string BenchBinary() {
  const std::filesystem::path node(CHORD_NODE_BIN);
  return (node.parent_path().parent_path() / "tools" / "chord-bench").string();
}

bool BenchBuilt() { return ::access(BenchBinary().c_str(), X_OK) == 0; }

#define SKIP_WITHOUT_BENCH()                                                                     \
  if (!BenchBuilt()) {                                                                           \
    GTEST_SKIP() << "chord-bench is not built at " << BenchBinary()                              \
                 << "; build the chord-bench target (cmake --build build --target chord-bench)"; \
  }

CommandResult RunBench(const Cluster& cluster, const std::vector<std::string>& args,
                       milliseconds timeout = kBenchTimeout) {
  std::vector<std::string> argv = {BenchBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, cluster.dir(), timeout);
}

// Runs chord-bench with `args` and --json; checks the structural properties of its report and
// returns it (null on failure).
nlohmann::json RunAndCheck(const Cluster& cluster, const std::vector<std::string>& args,
                           const std::string& op, bool direct) {
  std::vector<std::string> full = args;
  full.insert(full.end(), {"--op", op, "--seconds", "2", "--clients", "4", "--keys", "300",
                           "--value-size", "64", "--timeout-ms", "5000", "--json"});
  if (direct) full.push_back("--direct");
  const CommandResult r = RunBench(cluster, full);
  const std::string what = op + (direct ? " --direct" : "");
  EXPECT_FALSE(r.timed_out) << what;
  EXPECT_EQ(r.exit_code, 0) << what << "; stderr: " << r.err << " stdout: " << r.out;
  if (r.exit_code != 0) return nullptr;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(j.is_object()) << what << ": stdout is not one JSON object: " << r.out;
  if (!j.is_object()) return nullptr;
  bool complete = true;
  for (const char* field : {"op", "clients", "seconds", "keys", "value_size", "direct", "ops",
                            "errors", "ops_per_sec", "p50_us", "p99_us", "p999_us", "mean_hops"}) {
    if (j.contains(field)) continue;
    ADD_FAILURE() << what << ": no \"" << field << "\" in " << r.out;
    complete = false;
  }
  if (!complete) return nullptr;
  EXPECT_EQ(j["op"], op) << what;
  EXPECT_EQ(j["direct"], direct) << what;
  EXPECT_EQ(j["redis"], false) << what;
  EXPECT_EQ(j["clients"], 4) << what;
  EXPECT_EQ(j["keys"], 300) << what;
  EXPECT_EQ(j["value_size"], 64) << what;
  EXPECT_GT(j["ops"].get<uint64_t>(), 0u) << what << ": " << r.out;
  EXPECT_EQ(j["errors"].get<uint64_t>(), 0u) << what << ": " << r.out;
  EXPECT_GT(j["ops_per_sec"].get<double>(), 0.0) << what;
  const double p50 = j["p50_us"].get<double>();
  const double p99 = j["p99_us"].get<double>();
  const double p999 = j["p999_us"].get<double>();
  EXPECT_GT(p50, 0.0) << what;
  EXPECT_LE(p50, p99) << what;
  EXPECT_LE(p99, p999) << what;
  EXPECT_GE(j["mean_hops"].get<double>(), 0.0) << what;
  return j;
}

TEST_F(ClusterTest, BenchMeasuresRoutedAndDirectRequestsOnThreeNodes) {
  SKIP_WITHOUT_BENCH();
  ASSERT_TRUE(cluster().StartNodes(kNodes, WithReplicas(FastNodes(), kReplicas)));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_EQ(addrs.size(), static_cast<size_t>(kNodes));
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  std::vector<std::string> node_args;
  for (const std::string& addr : addrs) node_args.insert(node_args.end(), {"--node", addr});

  nlohmann::json get = RunAndCheck(cluster(), node_args, "get", /*direct=*/false);
  if (get.is_object()) {
    EXPECT_EQ(get["preload_keys"], 300) << get.dump();
    EXPECT_EQ(get["puts"], 0) << get.dump();
  }

  nlohmann::json put = RunAndCheck(cluster(), node_args, "put", /*direct=*/false);
  if (put.is_object()) {
    EXPECT_EQ(put["gets"], 0) << put.dump();
  }

  // A smart client: the ring is fetched from one node, every request goes to its key's owner,
  // which serves it locally: no hops.
  nlohmann::json direct = RunAndCheck(cluster(), {"--node", addrs[0]}, "get", /*direct=*/true);
  if (direct.is_object()) {
    EXPECT_EQ(direct["mean_hops"].get<double>(), 0.0) << direct.dump();
    EXPECT_EQ(direct["ring_nodes"], kNodes) << direct.dump();
  }

  // What the servers spent, read from the status of every process of the ring: each of the
  // three counted once, CPU time per operation positive, and for the get run (which preloaded
  // its keys) bytes per key.
  for (const nlohmann::json* run : {&get, &put, &direct}) {
    if (!run->is_object()) continue;
    EXPECT_EQ((*run)["server_source"], "status") << run->dump();
    EXPECT_EQ((*run)["server_processes"], kNodes) << run->dump();
    ASSERT_TRUE((*run)["server_cpu_us_per_op"].is_number()) << run->dump();
    EXPECT_GT((*run)["server_cpu_us_per_op"].get<double>(), 0.0) << run->dump();
    EXPECT_GT((*run)["server_rss_bytes"].get<uint64_t>(), 3u << 20) << run->dump();
    EXPECT_EQ((*run)["server_cost_error"], "") << run->dump();
    EXPECT_EQ((*run)["pipeline"], 1) << run->dump();
    // A node's status gives its CPU time as one figure: no split, no counters.
    EXPECT_TRUE((*run)["server_user_us_per_op"].is_null()) << run->dump();
    EXPECT_TRUE((*run)["server_syscalls_per_op"].is_null()) << run->dump();
  }
  if (get.is_object()) {
    EXPECT_TRUE(get["bytes_per_key"].is_number()) << get.dump();
  }
  if (put.is_object()) {
    EXPECT_TRUE(put["bytes_per_key"].is_null()) << put.dump();
  }

  // Pipelined requests among a few hot keys, the servers read by PID (as for redis-server).
  std::vector<std::string> pipelined = {"--node", addrs[0], "--pipeline", "8", "--hot-keys", "10"};
  for (const NodeProcess* n : cluster().nodes()) {
    pipelined.insert(pipelined.end(), {"--server-pid", std::to_string(n->pid())});
  }
  nlohmann::json piped = RunAndCheck(cluster(), pipelined, "get", /*direct=*/false);
  if (piped.is_object()) {
    EXPECT_EQ(piped["pipeline"], 8) << piped.dump();
    EXPECT_EQ(piped["hot_keys"], 10) << piped.dump();
    EXPECT_EQ(piped["preload_keys"], 300) << piped.dump();
    EXPECT_EQ(piped["server_source"], "pid") << piped.dump();
    EXPECT_EQ(piped["server_processes"], kNodes) << piped.dump();
    EXPECT_GT(piped["server_cpu_us_per_op"].get<double>(), 0.0) << piped.dump();
  }
  // Read by PID, the CPU splits into user and system time, and the system calls are counted:
  // each get, one in flight per connection, arrives in a read of its own and is answered by a
  // write of its own, so there are at least two per operation (and background work adds some).
  std::vector<std::string> by_pid = {"--node", addrs[0]};
  for (const NodeProcess* n : cluster().nodes()) {
    by_pid.insert(by_pid.end(), {"--server-pid", std::to_string(n->pid())});
  }
  // (This counts on the runtime reading and writing sockets with read/write calls, which
  // /proc/PID/io counts.)
  nlohmann::json split = RunAndCheck(cluster(), by_pid, "get", /*direct=*/true);
  if (split.is_object()) {
    ASSERT_TRUE(split["server_user_us_per_op"].is_number()) << split.dump();
    ASSERT_TRUE(split["server_sys_us_per_op"].is_number()) << split.dump();
    const bool counted = static_cast<bool>(std::ifstream("/proc/self/io"));
    EXPECT_EQ(split["server_syscalls_per_op"].is_number(), counted) << split.dump();
    EXPECT_EQ(split["server_sleeps_per_op"].is_number(), counted) << split.dump();
    EXPECT_NEAR(
        split["server_user_us_per_op"].get<double>() + split["server_sys_us_per_op"].get<double>(),
        split["server_cpu_us_per_op"].get<double>(), 1e-6)
        << split.dump();
    if (counted) {
      EXPECT_GE(split["server_syscalls_per_op"].get<double>(), 1.9) << split.dump();
    }
  }
  nlohmann::json piped_direct =
      RunAndCheck(cluster(), {"--node", addrs[0], "--pipeline", "4"}, "put", /*direct=*/true);
  if (piped_direct.is_object()) {
    EXPECT_EQ(piped_direct["mean_hops"].get<double>(), 0.0) << piped_direct.dump();
  }

  // The text report shows the same figures.
  const CommandResult text =
      RunBench(cluster(), {"--node", addrs[0], "--op", "get", "--seconds", "1", "--clients", "2",
                           "--keys", "100", "--timeout-ms", "5000"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("server CPU"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("bytes/key"), std::string::npos) << text.out;

  // The ring is still whole and every preloaded key is readable through any node.
  EXPECT_TRUE(WaitForRing(cluster(), addrs));
  const CommandResult r = cluster().Chordctl({"--node", addrs[2], "get", "key-299"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.size(), 64u + 1u) << r.out;
}

TEST_F(ClusterTest, BenchRejectsBadFlagsWithExitTwo) {
  SKIP_WITHOUT_BENCH();
  const std::vector<std::vector<std::string>> bad = {
      {"--frobnicate"},
      {"--node", "127.0.0.1:4000", "--clients", "0"},
      {"--node", "127.0.0.1:4000", "--clients", "lots"},
      {"--node", "127.0.0.1:4000", "--op", "scan"},
      {"--node", "127.0.0.1:4000", "--seconds", "0"},
      {"--node", "127.0.0.1:4000", "--keys", "0"},
      {"--node", "127.0.0.1:4000", "--value-size", "2000000"},
      {"--node", "127.0.0.1:4000", "--op", "get", "--get-ratio", "0.9"},
      {"--node", "127.0.0.1:4000", "--op", "mix", "--get-ratio", "1.5"},
      {"--node", "no-port-here"},
      {"--node", "127.0.0.1:99999"},
      {"--node", "127.0.0.1:4000", "--pipeline", "0"},
      {"--node", "127.0.0.1:4000", "--hot-keys", "0"},
      {"--node", "127.0.0.1:4000", "--server-pid", "nobody"},
      {"--redis", "--node", "127.0.0.1:4000", "--no-server-cost", "--direct"},
      {"--redis", "--node", "127.0.0.1:4000", "--no-server-cost", "--pipeline", "4"},
      {"--redis", "--node", "127.0.0.1:4000", "--no-server-cost", "--consistency", "all"},
      {"--redis", "--node", "127.0.0.1:4000#1", "--no-server-cost"},
      {"--redis", "--node", "127.0.0.1:4000"},  // no --server-pid for the server
      {"--redis", "--node", "127.0.0.1:4000", "--node", "127.0.0.1:4001", "--server-pid", "1"},
      {"--redis", "--node", "127.0.0.1:4000", "--node", "127.0.0.1:4000", "--no-server-cost"},
      {"--redis", "--node", "127.0.0.1:4000", "--no-server-cost", "--tls-ca", "ca.pem"},
      {"--redis", "--no-server-cost"},  // no --node: the default would be a chord-node
  };
  for (const std::vector<std::string>& args : bad) {
    std::string line;
    for (const std::string& a : args) line += " " + a;
    const CommandResult r = RunBench(cluster(), args, milliseconds(10000));
    EXPECT_EQ(r.exit_code, 2) << "chord-bench" << line << "; stderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << "chord-bench" << line << " printed: " << r.out;
    EXPECT_FALSE(r.err.empty()) << "chord-bench" << line << " printed no reason";
    // One plain sentence: a single line.
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "chord-bench" << line << ": " << r.err;
  }
}

TEST_F(ClusterTest, BenchExitsThreeWhenNothingSucceeds) {
  SKIP_WITHOUT_BENCH();
  const std::string nobody = LocalAddr(PickFreePort());
  for (const std::string op : {"put", "get"}) {
    for (const bool direct : {false, true}) {
      std::vector<std::string> args = {"--node",       nobody, "--op",      op,
                                       "--seconds",    "0.5",  "--clients", "2",
                                       "--timeout-ms", "1000"};
      if (direct) args.push_back("--direct");
      const CommandResult r = RunBench(cluster(), args, milliseconds(30000));
      const std::string what = op + (direct ? " --direct" : "");
      EXPECT_EQ(r.exit_code, 3) << what << "; stderr: " << r.err;
      EXPECT_FALSE(r.err.empty()) << what;
      EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << what << ": " << r.err;
    }
  }
}

// Sends `command` (RESP) to 127.0.0.1:port and reads until the answer holds `replies`
// CRLF-ended lines (and contains `until`, when given); "" on failure. Bounded: each read waits at
// most 1 s, and no read starts after 5 s (6 s in all at most).
std::string AskRedis(int port, const std::string& command, size_t replies,
                     const std::string& until = "") {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  timeval tv{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::string answer;
  if (::send(fd, command.data(), command.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(command.size())) {
    char buf[4096];
    size_t lines = 0;
    auto done = [&] {
      return lines >= replies && (until.empty() || answer.find(until) != std::string::npos);
    };
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      for (ssize_t i = 0; i < n; ++i) lines += buf[i] == '\n' ? 1 : 0;
      answer.append(buf, static_cast<size_t>(n));
    }
    if (!done()) answer.clear();
  }
  ::close(fd);
  return answer;
}

// One redis-server without persistence on 127.0.0.1:port, killed by PID and reaped when this
// goes out of scope.
class RedisServer {
 public:
  RedisServer(const std::string& binary, int port) : port_(port) {
    const std::string port_arg = std::to_string(port);  // before fork: no allocation after it
    pid_ = ::fork();
    if (pid_ != 0) return;
    const int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      ::dup2(null_fd, STDOUT_FILENO);
      ::dup2(null_fd, STDERR_FILENO);
    }
    ::execl(binary.c_str(), binary.c_str(), "--port", port_arg.c_str(), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ~RedisServer() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  // Whether this process still runs and answers INFO with its own process id (not another
  // listener on the port) within `timeout`.
  bool WaitReady(milliseconds timeout) {
    return PollUntil(
               [&] {
                 if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
                   pid_ = -1;  // exited (the port was taken, say): reaped
                   return true;
                 }
                 // INFO names the answering process: this one, not another on the port.
                 return !AskRedis(port_, "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n", 1,
                                  "process_id:" + std::to_string(pid_) + "\r\n")
                             .empty();
               },
               timeout) &&
           pid_ > 0;
  }

 private:
  int port_;
  pid_t pid_ = -1;
};

// The server of `key` among `servers` as --redis picks it: the first eight bytes of SHA-1(key),
// big-endian, modulo the number of servers; computed from the hex digest here.
size_t ExpectedServer(const std::string& key, size_t servers) {
  const uint64_t high = std::stoull(Sha1Hex(key).substr(0, 16), nullptr, 16);
  return static_cast<size_t>(high % servers);
}

// A new directory /tmp/chord-bench-NAME-XXXXXX (path empty if it could not be made), removed
// with what it holds when this goes out of scope, also when an ASSERT ends the test early.
struct ScratchDir {
  explicit ScratchDir(const std::string& name) {
    std::string templ = "/tmp/chord-bench-" + name + "-XXXXXX";
    if (::mkdtemp(templ.data()) != nullptr) path = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path;
};

TEST(BenchRedisTest, SpreadsGetsOverRedisServersByTheKeysSha1) {
  SKIP_WITHOUT_BENCH();
  const std::string redis = FindInPath("redis-server");
  if (redis.empty()) GTEST_SKIP() << "redis-server is not installed (apt-get install redis-server)";
  const ScratchDir scratch("redis");
  ASSERT_FALSE(scratch.path.empty()) << "could not make a directory under /tmp";
  const std::string& dir = scratch.path;
  constexpr int kServers = 3;
  constexpr int kKeys = 300;
  std::vector<std::unique_ptr<RedisServer>> servers;
  std::vector<std::string> args = {"--redis",
                                   "--op",
                                   "get",
                                   "--seconds",
                                   "1",
                                   "--clients",
                                   "4",
                                   "--keys",
                                   std::to_string(kKeys),
                                   "--value-size",
                                   "32",
                                   "--timeout-ms",
                                   "5000",
                                   "--json"};
  for (int i = 0; i < kServers; ++i) {
    servers.push_back(std::make_unique<RedisServer>(redis, PickFreePort()));
    ASSERT_GT(servers.back()->pid(), 0);
    ASSERT_TRUE(servers.back()->WaitReady(milliseconds(10000)))
        << "redis-server on port " << servers.back()->port() << " did not start";
    args.insert(args.end(), {"--node", LocalAddr(servers.back()->port()), "--server-pid",
                             std::to_string(servers.back()->pid())});
  }
  std::vector<std::string> argv = {BenchBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult r = RunCommand(argv, dir, kBenchTimeout);
  ASSERT_EQ(r.exit_code, 0) << "stderr: " << r.err << " stdout: " << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["preload_keys"].get<uint64_t>(), static_cast<uint64_t>(kKeys)) << r.out;
  EXPECT_GT(j["ops"].get<uint64_t>(), 0u) << r.out;
  EXPECT_EQ(j["errors"].get<uint64_t>(), 0u) << r.out;  // every GET found its key
  EXPECT_EQ(j["redis"], true) << r.out;
  EXPECT_EQ(j["server_processes"].get<int>(), kServers) << r.out;
  EXPECT_GT(j["server_cpu_us_per_op"].get<double>(), 0.0) << r.out;

  // Every key is on the server its SHA-1 picks, and only there.
  std::vector<std::string> exists(kServers);
  std::vector<size_t> expected(kServers, 0);
  for (int k = 0; k < kKeys; ++k) {
    const std::string key = "key-" + std::to_string(k);
    const size_t s = ExpectedServer(key, kServers);
    ++expected[s];
    exists[s] += "*2\r\n$6\r\nEXISTS\r\n$" + std::to_string(key.size()) + "\r\n" + key + "\r\n";
  }
  for (int s = 0; s < kServers; ++s) {
    const int port = servers[static_cast<size_t>(s)]->port();
    const std::string found =
        AskRedis(port, exists[static_cast<size_t>(s)], expected[static_cast<size_t>(s)]);
    size_t ones = 0;
    for (size_t at = found.find(":1\r\n"); at != std::string::npos;
         at = found.find(":1\r\n", at + 1)) {
      ++ones;
    }
    EXPECT_EQ(ones, expected[static_cast<size_t>(s)]) << "server " << s << " answered " << found;
    EXPECT_EQ(AskRedis(port, "*1\r\n$6\r\nDBSIZE\r\n", 1),
              ":" + std::to_string(expected[static_cast<size_t>(s)]) + "\r\n")
        << "server " << s << " holds keys of another";
  }
}

// A redis-server stand-in on 127.0.0.1 that reads a command and answers "+OK\r\n" one byte
// every 400 ms, one connection at a time: each byte comes well within a 1000 ms timeout, the
// whole answer (1.6 s) does not. Stopped and joined when it goes out of scope; serves for 20 s
// at most.
class TricklingServer {
 public:
  TricklingServer() {
    fd_ = ListenOnLoopback(&port_);
    if (fd_ >= 0) thread_ = std::thread([this] { Serve(); });
  }
  ~TricklingServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  TricklingServer(const TricklingServer&) = delete;
  TricklingServer& operator=(const TricklingServer&) = delete;

  int port() const { return port_; }  // 0: could not listen

 private:
  void Serve() {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!stop_ && std::chrono::steady_clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      // The answer starts only once a command has come (waited for until `end`).
      pollfd c{conn, POLLIN, 0};
      int ready = 0;
      while (!stop_ && std::chrono::steady_clock::now() < end &&
             (ready = ::poll(&c, 1, 100)) == 0) {
      }
      char buf[4096];
      if (ready <= 0 || ::recv(conn, buf, sizeof(buf), 0) <= 0) {
        ::close(conn);
        continue;
      }
      const char answer[] = "+OK\r\n";
      for (size_t i = 0; i + 1 < sizeof(answer) && !stop_; ++i) {
        if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
        if (::send(conn, answer + i, 1, MSG_NOSIGNAL) != 1) break;
      }
      ::close(conn);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// --timeout-ms bounds a request as a whole, not each socket read: an answer whose bytes each
// come in time but which is not whole within the timeout fails the request.
TEST(BenchRedisTest, AnAnswerThatTricklesInPastTheTimeoutFailsTheRequest) {
  SKIP_WITHOUT_BENCH();
  TricklingServer server;
  ASSERT_GT(server.port(), 0) << "could not listen on 127.0.0.1";
  const ScratchDir scratch("trickle");
  ASSERT_FALSE(scratch.path.empty()) << "could not make a directory under /tmp";
  const std::vector<std::string> argv = {BenchBinary(),
                                         "--redis",
                                         "--node",
                                         LocalAddr(server.port()),
                                         "--op",
                                         "put",
                                         "--seconds",
                                         "0.5",
                                         "--clients",
                                         "1",
                                         "--timeout-ms",
                                         "1000",
                                         "--no-server-cost"};
  const CommandResult r = RunCommand(argv, scratch.path, milliseconds(30000));
  EXPECT_EQ(r.exit_code, 3) << "stderr: " << r.err << " stdout: " << r.out;
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one sentence, one line
}

}  // namespace
}  // namespace chord::testing
