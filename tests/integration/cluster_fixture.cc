#include "tests/integration/cluster_fixture.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/sha.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kStartAttempts = 5;
constexpr milliseconds kNodeReadyTimeout(15000);
constexpr milliseconds kStatusTimeout(2000);

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// argv for execv; the strings must outlive the call.
std::vector<char*> CArgv(const std::vector<std::string>& args) {
  std::vector<char*> out;
  for (const std::string& a : args) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// In the child after fork: redirect stdio, die with the parent, exec. Never returns.
[[noreturn]] void ExecChild(const std::vector<char*>& argv, const char* stdin_path,
                            const char* out_path, const char* err_path, bool append) {
  const int flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC);
  const int in = ::open(stdin_path, O_RDONLY);
  const int out = ::open(out_path, flags, 0644);
  const int err = std::strcmp(out_path, err_path) == 0 ? out : ::open(err_path, flags, 0644);
  if (in < 0 || out < 0 || err < 0) ::_exit(126);
  ::dup2(in, STDIN_FILENO);
  ::dup2(out, STDOUT_FILENO);
  ::dup2(err, STDERR_FILENO);
  // If the test process dies, its nodes die with it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::execv(argv[0], argv.data());
  ::_exit(127);
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

std::string SanitizeName(std::string s) {
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  return s;
}

}  // namespace

// --- independent ring arithmetic ----------------------------------------------------------

std::string Sha1Hex(std::string_view data) {
  unsigned char md[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  return BytesToHex(std::string_view(reinterpret_cast<const char*>(md), sizeof(md)));
}

std::string BytesToHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

std::string LocalAddr(int port) { return "127.0.0.1:" + std::to_string(port); }

std::vector<Member> SortedRing(const std::vector<std::string>& addrs) {
  std::vector<Member> ring;
  for (const std::string& a : addrs) ring.push_back(Member{Sha1Hex(a), a});
  std::sort(ring.begin(), ring.end(), [](const Member& x, const Member& y) { return x.id < y.id; });
  return ring;
}

const Member& OwnerOf(const std::string& key_id, const std::vector<Member>& ring) {
  for (const Member& m : ring) {
    if (m.id >= key_id) return m;
  }
  return ring.front();
}

std::string KeyOwnedBy(const std::string& owner, const std::vector<std::string>& addrs,
                       const std::string& prefix) {
  const std::vector<Member> ring = SortedRing(addrs);
  for (int i = 0; i < 1000; ++i) {
    std::string key = prefix + " " + std::to_string(i);
    if (OwnerOf(Sha1Hex(key), ring).addr == owner) return key;
  }
  return "";
}

namespace {
size_t IndexOf(const std::string& addr, const std::vector<Member>& ring) {
  for (size_t i = 0; i < ring.size(); ++i) {
    if (ring[i].addr == addr) return i;
  }
  ADD_FAILURE() << addr << " is not in the ring";
  return 0;
}
}  // namespace

const Member& PredecessorOf(const std::string& addr, const std::vector<Member>& ring) {
  return ring[(IndexOf(addr, ring) + ring.size() - 1) % ring.size()];
}

const Member& SuccessorOf(const std::string& addr, const std::vector<Member>& ring) {
  return ring[(IndexOf(addr, ring) + 1) % ring.size()];
}

bool InHalfOpen(const std::string& x, const std::string& a, const std::string& b) {
  if (a < b) return a < x && x <= b;
  return a < x || x <= b;  // wraps through zero, or a == b: the whole ring
}

// --- polling --------------------------------------------------------------------------------

bool PollUntil(const std::function<bool()>& done, milliseconds timeout, milliseconds every) {
  const auto deadline = Clock::now() + timeout;
  const int64_t max_rounds = timeout / std::max(every, milliseconds(1)) + 1;
  for (int64_t round = 0; round < max_rounds; ++round) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
  return done();
}

// --- processes ------------------------------------------------------------------------------

HeldPort HoldFreePort() {
  HeldPort held;
  held.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (held.fd < 0) {
    ADD_FAILURE() << "socket: " << std::strerror(errno);
    return held;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(held.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(held.fd, 1) != 0 ||
      ::getsockname(held.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "could not hold a free port on 127.0.0.1: " << std::strerror(errno);
    ::close(held.fd);
    held.fd = -1;
    return held;
  }
  held.port = ntohs(addr.sin_port);
  return held;
}

bool RunCertsScript(std::vector<std::string> args, const std::string& scratch_dir) {
  args.insert(args.begin(), {"/bin/bash", std::string(CHORD_SOURCE_DIR) + "/scripts/certs.sh"});
  const CommandResult r = RunCommand(args, scratch_dir, milliseconds(30000));
  EXPECT_EQ(r.exit_code, 0) << "certs.sh failed: " << r.err;
  return r.exit_code == 0;
}

bool UseClientTls(const std::string& dir, const std::string& base) {
  const std::string cert = dir + "/" + base + ".pem";
  const std::string key = dir + "/" + base + ".key";
  const std::string ca = dir + "/ca.pem";
  auto ctx = TlsContext::Create(TlsFiles{cert, key, ca});
  EXPECT_TRUE(ctx.ok()) << ctx.status().message();
  if (!ctx.ok()) return false;
  ChordClient::UseTls(std::shared_ptr<const TlsContext>(std::move(ctx).value()));
  ::setenv("CHORD_TLS_CERT", cert.c_str(), 1);
  ::setenv("CHORD_TLS_KEY", key.c_str(), 1);
  ::setenv("CHORD_TLS_CA", ca.c_str(), 1);
  return true;
}

void ClearClientTls() {
  ChordClient::UseTls(nullptr);
  ::unsetenv("CHORD_TLS_CERT");
  ::unsetenv("CHORD_TLS_KEY");
  ::unsetenv("CHORD_TLS_CA");
}

int PickFreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ADD_FAILURE() << "socket: " << std::strerror(errno);
    return 0;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  } else {
    ADD_FAILURE() << "could not bind a free port on 127.0.0.1: " << std::strerror(errno);
  }
  ::close(fd);
  return port;
}

// The full path of `name` if it is an executable in $PATH, else "".
std::string FindInPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path == nullptr ? "/usr/bin:/bin" : path;
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t colon = dirs.find(':', start);
    const std::string dir =
        dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty()) {
      const std::string candidate = dir + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

int ConnectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& scratch_dir,
                         milliseconds timeout, const std::string& stdin_path) {
  static int counter = 0;
  const std::string base = scratch_dir + "/cmd-" + std::to_string(++counter);
  const std::string out_path = base + ".out";
  const std::string err_path = base + ".err";
  const std::string in_path = stdin_path.empty() ? "/dev/null" : stdin_path;
  const std::vector<char*> cargv = CArgv(argv);

  CommandResult result;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return result;
  }
  if (pid == 0) ExecChild(cargv, in_path.c_str(), out_path.c_str(), err_path.c_str(), false);

  int status = 0;
  bool exited =
      PollUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, timeout, milliseconds(2));
  if (!exited) {
    result.timed_out = true;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  std::error_code ec;
  std::filesystem::remove(out_path, ec);
  std::filesystem::remove(err_path, ec);
  return result;
}

NodeProcess::NodeProcess(int port, std::string log_path)
    : port_(port), addr_(LocalAddr(port)), id_(Sha1Hex(addr_)), log_path_(std::move(log_path)) {}

NodeProcess::~NodeProcess() { Kill(); }

int NodeProcess::FlagPort(const std::string& flag) const {
  const auto it = flag_ports_.find(flag);
  return it == flag_ports_.end() ? -1 : it->second;
}

bool NodeProcess::Start(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {CHORD_NODE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  {
    std::ofstream log(log_path_, std::ios::app);
    log << "# chord-node";
    for (size_t i = 1; i < argv.size(); ++i) log << " " << argv[i];
    log << "\n";
  }
  const std::vector<char*> cargv = CArgv(argv);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return false;
  }
  if (pid == 0) ExecChild(cargv, "/dev/null", log_path_.c_str(), log_path_.c_str(), true);
  pid_ = pid;
  wait_status_.reset();
  return true;
}

bool NodeProcess::IsRunning() {
  if (pid_ <= 0 || wait_status_) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) wait_status_ = status;
  if (r < 0) wait_status_ = -1;
  return false;
}

bool NodeProcess::Signal(int sig) { return IsRunning() && ::kill(pid_, sig) == 0; }

std::optional<int> NodeProcess::WaitExit(milliseconds timeout) {
  PollUntil([this] { return !IsRunning(); }, timeout, milliseconds(10));
  return wait_status_;
}

void NodeProcess::Kill() {
  if (!IsRunning()) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  if (::waitpid(pid_, &status, 0) == pid_) {
    wait_status_ = status;
  } else {
    wait_status_ = -1;
  }
}

std::string NodeProcess::LogTail(int lines) const {
  const std::string text = ReadFile(log_path_);
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (int n = 0; n < lines && pos > 0; ++n) {
    const size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
  }
  return text.substr(pos == 0 ? 0 : pos + 1);
}

Cluster::Cluster(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/chord-it-" +
                      SanitizeName(name) + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << templ << ": " << std::strerror(errno);
  }
  dir_ = templ;
}

Cluster::~Cluster() {
  for (auto& node : nodes_) node->Kill();
  nodes_.clear();
  if (!keep_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string Cluster::DataDirFor(int port, const NodeOptions& options) const {
  if (!options.data_dir) return "";
  if (!options.data_dir->empty()) return *options.data_dir;
  return dir_ + "/data-" + std::to_string(port);
}

Cluster::LaunchResult Cluster::Launch(int port, const NodeOptions& options,
                                      const std::string& join_addr, NodeProcess** started) {
  *started = nullptr;
  std::string log_level = options.log_level;
  if (const char* env = std::getenv("CHORD_TEST_LOG_LEVEL"); log_level.empty() && env) {
    log_level = env;
  }
  auto node = std::make_unique<NodeProcess>(
      port, dir_ + "/node-" + std::to_string(++next_log_) + "-" + std::to_string(port) + ".log");
  std::vector<std::string> args = {"--listen", node->addr()};
  if (const std::string data_dir = DataDirFor(port, options); !data_dir.empty()) {
    args.insert(args.end(), {"--data-dir", data_dir});
  } else {
    args.push_back("--memory");
  }
  if (!join_addr.empty()) args.insert(args.end(), {"--join", join_addr});
  if (options.stabilize_ms) {
    args.insert(args.end(), {"--stabilize-ms", std::to_string(*options.stabilize_ms)});
  }
  if (options.successors) {
    args.insert(args.end(), {"--successors", std::to_string(*options.successors)});
  }
  if (options.replicas) {
    args.insert(args.end(), {"--replicas", std::to_string(*options.replicas)});
  }
  if (options.anti_entropy_ms) {
    args.insert(args.end(), {"--anti-entropy-ms", std::to_string(*options.anti_entropy_ms)});
  }
  if (!log_level.empty()) args.insert(args.end(), {"--log-level", log_level});
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  // Each flag's port differs from the node's and the other flags' (the node refuses a
  // command line that gives one port twice, and that would not be retried).
  std::set<int> taken = {port};
  for (const std::string& flag : options.port_flags) {
    int flag_port = 0;
    for (int pick = 0; pick < 10 && (flag_port == 0 || taken.count(flag_port) != 0); ++pick) {
      flag_port = PickFreePort();
    }
    if (flag_port == 0 || taken.count(flag_port) != 0) return LaunchResult::kFailed;
    taken.insert(flag_port);
    args.insert(args.end(), {flag, LocalAddr(flag_port)});
    node->SetFlagPort(flag, flag_port);
  }
  options_by_port_[port] = options;
  if (!node->Start(args)) return LaunchResult::kFailed;

  bool joined = false;
  std::string last_error = "no answer yet";
  PollUntil(
      [&] {
        if (!node->IsRunning()) return true;
        ChordClient client(node->addr(), 500);
        auto status = client.GetStatus();
        if (!status.ok()) {
          last_error = status.status().ToString();
          return false;
        }
        joined = status->joined();
        last_error = joined ? "" : "status says not joined yet";
        return joined;
      },
      kNodeReadyTimeout, milliseconds(50));
  NodeProcess* raw = node.get();
  nodes_.push_back(std::move(node));
  if (raw->IsRunning() && joined) {
    *started = raw;
    return LaunchResult::kReady;
  }
  if (raw->IsRunning()) {
    ADD_FAILURE() << "chord-node on " << raw->addr() << " did not report joined within "
                  << kNodeReadyTimeout.count() << " ms (" << last_error << "); log tail:\n"
                  << raw->LogTail(30);
    return LaunchResult::kFailed;
  }
  const int status = raw->wait_status().value_or(-1);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
    ADD_FAILURE() << "chord-node on " << raw->addr() << " rejected its command line (exit 2); "
                  << "log tail:\n"
                  << raw->LogTail(10);
    return LaunchResult::kFailed;
  }
  std::cerr << "[cluster] chord-node on " << raw->addr() << " " << DescribeWaitStatus(status)
            << " at start; log tail:\n"
            << raw->LogTail(10) << "\n";
  return LaunchResult::kExitedEarly;
}

NodeProcess* Cluster::StartNode(const NodeOptions& options, const std::string& join_addr) {
  for (int attempt = 1; attempt <= kStartAttempts; ++attempt) {
    const int port = PickFreePort();
    if (port == 0) return nullptr;
    NodeProcess* node = nullptr;
    switch (Launch(port, options, join_addr, &node)) {
      case LaunchResult::kReady:
        return node;
      case LaunchResult::kFailed:
        return nullptr;
      case LaunchResult::kExitedEarly:
        // Most likely the port was taken between picking and binding. Retry elsewhere.
        std::cerr << "[cluster] retrying on a fresh port (attempt " << attempt << ")\n";
        break;
    }
  }
  ADD_FAILURE() << "chord-node did not start after " << kStartAttempts << " attempts";
  return nullptr;
}

NodeProcess* Cluster::StartNodeOnPort(int port, const NodeOptions& options,
                                      const std::string& join_addr) {
  for (int attempt = 1; attempt <= kStartAttempts; ++attempt) {
    NodeProcess* node = nullptr;
    switch (Launch(port, options, join_addr, &node)) {
      case LaunchResult::kReady:
        return node;
      case LaunchResult::kFailed:
        return nullptr;
      case LaunchResult::kExitedEarly:
        // E.g. the port is still held for a moment; wait a little and try the same port.
        std::this_thread::sleep_for(milliseconds(200 * attempt));
        break;
    }
  }
  ADD_FAILURE() << "chord-node did not start on port " << port << " after " << kStartAttempts
                << " attempts";
  return nullptr;
}

NodeProcess* Cluster::Restart(const std::string& addr, const std::string& join_addr) {
  NodeProcess* last = FindByAddr(addr);
  if (last == nullptr) {
    ADD_FAILURE() << "Restart: no node was started on " << addr;
    return nullptr;
  }
  if (last->IsRunning()) {
    ADD_FAILURE() << "Restart: the node on " << addr << " is still running; stop it first";
    return nullptr;
  }
  const std::optional<NodeOptions> options = OptionsOf(last->port());
  if (!options) {
    ADD_FAILURE() << "Restart: no options recorded for " << addr;
    return nullptr;
  }
  return StartNodeOnPort(last->port(), *options, join_addr);
}

std::optional<NodeOptions> Cluster::OptionsOf(int port) const {
  const auto it = options_by_port_.find(port);
  if (it == options_by_port_.end()) return std::nullopt;
  return it->second;
}

std::string Cluster::DataDir(int port) const {
  const auto options = OptionsOf(port);
  return options ? DataDirFor(port, *options) : std::string();
}

bool Cluster::StartNodes(int n, const NodeOptions& options) {
  std::string first;
  for (int i = 0; i < n; ++i) {
    NodeProcess* node = StartNode(options, first);
    if (node == nullptr) return false;
    if (first.empty()) first = node->addr();
  }
  return true;
}

std::vector<NodeProcess*> Cluster::nodes() const {
  std::vector<NodeProcess*> out;
  for (const auto& n : nodes_) {
    if (n->pid() > 0) out.push_back(n.get());
  }
  return out;
}

std::vector<std::string> Cluster::RunningAddrs() const {
  std::vector<std::string> out;
  for (const auto& n : nodes_) {
    if (n->IsRunning()) out.push_back(n->addr());
  }
  return out;
}

NodeProcess* Cluster::FindByAddr(const std::string& addr) const {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    if ((*it)->addr() == addr) return it->get();
  }
  return nullptr;
}

CommandResult Cluster::Chordctl(const std::vector<std::string>& args, milliseconds timeout,
                                const std::string& stdin_path) const {
  std::vector<std::string> argv = {CHORDCTL_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, dir_, timeout, stdin_path);
}

void Cluster::PrintLogTails(std::ostream& out, int lines) const {
  for (const auto& n : nodes_) {
    std::string state = "running";
    if (n->wait_status()) state = DescribeWaitStatus(*n->wait_status());
    out << "===== chord-node " << n->addr() << " id " << n->id().substr(0, 12) << " pid "
        << n->pid() << " (" << state << "), last " << lines << " lines of " << n->log_path()
        << " =====\n"
        << n->LogTail(lines) << "\n";
  }
}

// --- ring checks ----------------------------------------------------------------------------

std::optional<nlohmann::json> StatusOf(const Cluster& cluster, const std::string& addr) {
  const CommandResult r = cluster.Chordctl({"--node", addr, "status", "--json"});
  if (r.exit_code != 0) return std::nullopt;
  auto doc = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::nullopt;
  return doc;
}

bool ChordctlRingMatches(const Cluster& cluster, const std::string& via,
                         const std::vector<std::string>& addrs, std::string* why) {
  const CommandResult r = cluster.Chordctl({"--node", via, "ring", "--json"}, milliseconds(15000));
  if (r.exit_code != 0) {
    *why = "chordctl ring --json exited " + std::to_string(r.exit_code) +
           (r.timed_out ? " (timed out)" : "") + ": " + r.err;
    return false;
  }
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("nodes") || !j["nodes"].is_array() ||
      !j.contains("consistent") || !j["consistent"].is_boolean()) {
    *why = "chordctl ring --json printed no {\"nodes\":[...],\"consistent\":bool}: " + r.out;
    return false;
  }
  const std::vector<Member> want = SortedRing(addrs);
  std::vector<Member> got;
  for (const auto& n : j["nodes"]) {
    if (!n.is_object() || !n.contains("id") || !n.contains("addr") || !n["id"].is_string() ||
        !n["addr"].is_string()) {
      *why = "ring node entry without string id/addr: " + n.dump();
      return false;
    }
    got.push_back(Member{n["id"].get<std::string>(), n["addr"].get<std::string>()});
  }
  std::ostringstream diff;
  bool same = got.size() == want.size();
  for (size_t i = 0; same && i < got.size(); ++i) {
    same = got[i].id == want[i].id && got[i].addr == want[i].addr;
  }
  if (!same) {
    diff << "ring lists";
    for (const Member& m : got) diff << " " << m.addr << "/" << m.id.substr(0, 8);
    diff << "; expected";
    for (const Member& m : want) diff << " " << m.addr << "/" << m.id.substr(0, 8);
    *why = diff.str();
    return false;
  }
  if (!j["consistent"].get<bool>()) {
    *why = "chordctl ring --json says consistent=false: " + r.out;
    return false;
  }
  return true;
}

bool PointersMatch(const std::vector<std::string>& addrs, std::string* why) {
  const std::vector<Member> ring = SortedRing(addrs);
  for (size_t i = 0; i < ring.size(); ++i) {
    ChordClient client(ring[i].addr, kStatusTimeout.count());
    auto status = client.GetStatus();
    if (!status.ok()) {
      *why = "status of " + ring[i].addr + " failed: " + status.status().ToString();
      return false;
    }
    if (!status->joined()) {
      *why = ring[i].addr + " is not joined";
      return false;
    }
    if (status->self().addr() != ring[i].addr || BytesToHex(status->self().id()) != ring[i].id) {
      *why = ring[i].addr + " reports itself as " + status->self().addr();
      return false;
    }
    if (ring.size() == 1) continue;
    const Member& pred = ring[(i + ring.size() - 1) % ring.size()];
    const Member& succ = ring[(i + 1) % ring.size()];
    if (status->predecessor().addr() != pred.addr) {
      *why = ring[i].addr + " has predecessor '" + status->predecessor().addr() + "', expected " +
             pred.addr;
      return false;
    }
    if (status->successors_size() == 0 || status->successors(0).addr() != succ.addr) {
      *why = ring[i].addr + " has successor '" +
             (status->successors_size() ? status->successors(0).addr() : std::string()) +
             "', expected " + succ.addr;
      return false;
    }
  }
  return true;
}

bool WaitForRing(const Cluster& cluster, const std::vector<std::string>& addrs,
                 milliseconds timeout) {
  std::string why;
  const bool ok = PollUntil(
      [&] {
        return ChordctlRingMatches(cluster, addrs.front(), addrs, &why) &&
               PointersMatch(addrs, &why);
      },
      timeout);
  if (!ok) {
    ADD_FAILURE() << "the ring of " << addrs.size() << " nodes did not become consistent within "
                  << timeout.count() << " ms; last problem: " << why;
  }
  return ok;
}

std::map<std::string, std::vector<std::string>> HoldersByKey(
    const std::vector<std::string>& addrs) {
  std::map<std::string, std::vector<std::string>> holders;
  for (const std::string& addr : addrs) {
    ChordClient client(addr);
    auto records = client.ListKeys(/*with_values=*/false);
    if (!records.ok()) {
      ADD_FAILURE() << "ListKeys on " << addr << " failed: " << records.status().ToString();
      continue;
    }
    for (const wire::Record& r : records.value()) {
      if (!r.deleted()) holders[r.key()].push_back(addr);
    }
  }
  return holders;
}

std::optional<RecordsByKey> TryRecordsByKey(const std::vector<std::string>& addrs, bool with_values,
                                            std::string* why, milliseconds timeout) {
  RecordsByKey out;
  for (const std::string& addr : addrs) {
    ChordClient client(addr, static_cast<uint64_t>(timeout.count()));
    auto records = client.ListKeys(with_values);
    if (!records.ok()) {
      *why = "ListKeys on " + addr + " failed: " + records.status().ToString();
      return std::nullopt;
    }
    for (wire::Record& r : records.value()) {
      std::string key = r.key();
      out[key].emplace_back(addr, std::move(r));
    }
  }
  return out;
}

std::optional<std::map<std::string, std::vector<std::string>>> TryHoldersByKey(
    const std::vector<std::string>& addrs, std::string* why) {
  const auto records = TryRecordsByKey(addrs, /*with_values=*/false, why);
  if (!records) return std::nullopt;
  std::map<std::string, std::vector<std::string>> holders;
  for (const auto& [key, copies] : *records) {
    for (const auto& [addr, record] : copies) {
      if (!record.deleted()) holders[key].push_back(addr);
    }
  }
  return holders;
}

std::map<std::string, size_t> LiveCopiesByKey(const std::vector<std::string>& addrs) {
  std::map<std::string, size_t> copies;
  for (const auto& [key, holders] : HoldersByKey(addrs)) copies[key] = holders.size();
  return copies;
}

// --- replica placement ----------------------------------------------------------------------

std::vector<Member> ReplicaHoldersOf(const std::string& key_id, const std::vector<Member>& ring,
                                     int replicas) {
  if (ring.empty()) return {};
  const Member& owner = OwnerOf(key_id, ring);
  const size_t first = IndexOf(owner.addr, ring);
  const size_t count = std::min(ring.size(), static_cast<size_t>(std::max(replicas, 1)));
  std::vector<Member> out;
  for (size_t i = 0; i < count; ++i) out.push_back(ring[(first + i) % ring.size()]);
  return out;
}

std::vector<std::string> ExpectedHolders(const std::string& key,
                                         const std::vector<std::string>& addrs, int replicas) {
  std::vector<std::string> out;
  for (const Member& m : ReplicaHoldersOf(Sha1Hex(key), SortedRing(addrs), replicas)) {
    out.push_back(m.addr);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
std::string JoinAddrs(const std::vector<std::string>& addrs) {
  std::string out = "[";
  for (const std::string& a : addrs) out += (out.size() > 1 ? " " : "") + a;
  return out + "]";
}
}  // namespace

bool PlacementMatches(const std::vector<std::string>& addrs, int replicas,
                      const std::set<std::string>& live, const std::set<std::string>& deleted,
                      std::string* why) {
  auto holders = TryHoldersByKey(addrs, why);
  if (!holders) return false;
  constexpr int kExamples = 3;
  int wrong = 0;
  size_t missing_copies = 0;
  size_t extra_copies = 0;
  std::ostringstream examples;
  const std::vector<std::string> none;
  for (const std::string& key : live) {
    const auto it = holders->find(key);
    std::vector<std::string> got = it == holders->end() ? none : it->second;
    std::sort(got.begin(), got.end());
    const std::vector<std::string> want = ExpectedHolders(key, addrs, replicas);
    if (got == want) continue;
    for (const std::string& a : want) {
      if (!std::binary_search(got.begin(), got.end(), a)) ++missing_copies;
    }
    for (const std::string& a : got) {
      if (!std::binary_search(want.begin(), want.end(), a)) ++extra_copies;
    }
    if (++wrong <= kExamples) {
      examples << "; " << key << " is on " << JoinAddrs(got) << ", expected " << JoinAddrs(want);
    }
  }
  for (const std::string& key : deleted) {
    const auto it = holders->find(key);
    if (it == holders->end() || it->second.empty()) continue;
    extra_copies += it->second.size();
    if (++wrong <= kExamples) {
      examples << "; deleted " << key << " is live on " << JoinAddrs(it->second);
    }
  }
  if (wrong == 0) return true;
  *why = std::to_string(wrong) + " of " + std::to_string(live.size() + deleted.size()) +
         " keys misplaced (" + std::to_string(missing_copies) + " copies missing, " +
         std::to_string(extra_copies) + " extra)" + examples.str();
  return false;
}

bool WaitForPlacement(const std::vector<std::string>& addrs, int replicas,
                      const std::set<std::string>& live, const std::set<std::string>& deleted,
                      milliseconds timeout, milliseconds every) {
  std::string why;
  const bool ok = PollUntil([&] { return PlacementMatches(addrs, replicas, live, deleted, &why); },
                            timeout, every);
  if (!ok) {
    ADD_FAILURE() << "keys did not settle on their " << replicas << " computed holders among "
                  << addrs.size() << " nodes within " << timeout.count()
                  << " ms; last state: " << why;
  }
  return ok;
}

std::optional<size_t> LiveRecordCount(const std::string& addr) {
  ChordClient client(addr, kStatusTimeout.count());
  auto records = client.ListKeys(/*with_values=*/false);
  if (!records.ok()) return std::nullopt;
  return std::count_if(records->begin(), records->end(),
                       [](const wire::Record& r) { return !r.deleted(); });
}

std::optional<size_t> TotalLiveRecords(const std::vector<std::string>& addrs) {
  size_t total = 0;
  for (const std::string& addr : addrs) {
    const auto n = LiveRecordCount(addr);
    if (!n) return std::nullopt;
    total += *n;
  }
  return total;
}

void PutAll(const std::string& addr, const std::map<std::string, std::string>& keys) {
  ChordClient client(addr);
  for (const auto& [key, value] : keys) {
    auto r = client.Put(key, value);
    EXPECT_TRUE(IsOk(r)) << "put " << key << " through " << addr << ": " << Describe(r);
  }
}

std::map<std::string, std::string> PutAllAcknowledged(
    const std::string& addr, const std::map<std::string, std::string>& keys) {
  ChordClient client(addr);
  std::map<std::string, std::string> acknowledged;
  for (const auto& [key, value] : keys) {
    auto r = client.Put(key, value);
    if (IsOk(r)) {
      acknowledged[key] = value;
    } else {
      ADD_FAILURE() << "put " << key << " through " << addr << ": " << Describe(r);
    }
  }
  return acknowledged;
}

std::set<std::string> KeySet(const std::map<std::string, std::string>& keys) {
  std::set<std::string> out;
  for (const auto& [key, value] : keys) out.insert(key);
  return out;
}

std::map<std::string, std::string> MakeKeys(const std::string& prefix, int count) {
  std::map<std::string, std::string> keys;
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "%s-%03d", prefix.c_str(), i);
    std::string value = "value-" + std::to_string(i) + "-" +
                        std::string(static_cast<size_t>(i % 40), static_cast<char>('a' + i % 26));
    if (i % 3 == 0) value += std::string("\0\x01\xff", 3);  // binary-safe values
    keys[name] = value;
  }
  return keys;
}

bool IsNotFound(const Result<wire::DataResponse>& result) {
  if (!result.ok()) return result.status().IsNotFound();
  return result->code() == wire::NOT_FOUND;
}

bool IsOk(const Result<wire::DataResponse>& result) {
  return result.ok() && result->code() == wire::OK;
}

std::string Describe(const Result<wire::DataResponse>& result) {
  if (!result.ok()) return "error: " + result.status().ToString();
  return "code " + wire::Code_Name(result->code()) +
         (result->error().empty() ? "" : " (" + result->error() + ")") + ", value of " +
         std::to_string(result->value().size()) + " bytes";
}

// --- fixture --------------------------------------------------------------------------------

void ClusterTest::SetUp() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  cluster_ = std::make_unique<Cluster>(std::string(info->test_suite_name()) + "." + info->name());
}

void ClusterTest::TearDown() {
  if (HasFailure()) {
    cluster_->KeepDir();
    std::cerr << "[cluster] test failed; node logs kept in " << cluster_->dir() << "\n";
    cluster_->PrintLogTails(std::cerr, 40);
  }
  cluster_.reset();  // stops every node still running
}

}  // namespace chord::testing
