// Helpers for the multi-process integration tests: start real chord-node processes on
// 127.0.0.1 with ports found free at run time, run chordctl, and check a ring against
// expectations computed here, independently of the code under test (SHA-1 through OpenSSL's
// one-shot SHA1(), ring order and key owners from sorted hex strings).
//
// Every process is started by fork/exec, stopped by PID (SIGKILL in the destructor if it is
// still running) and reaped. Node logs (one file per incarnation: a node restarted on its
// port gets a new log) and disk stores (<cluster dir>/data-<port>) go to a per-test temporary
// directory; ClusterTest prints the log tails when a test fails. Replica holders are computed
// here too (owner + the next R - 1 members of the sorted ring). Cluster is single-threaded:
// use it from the test's thread only (nodes are forked with PR_SET_PDEATHSIG, which follows
// the forking thread). The free functions that only talk to nodes through their own
// ChordClient (TryRecordsByKey, ...) may be called from other threads.
#ifndef CHORD_TESTS_INTEGRATION_CLUSTER_FIXTURE_H_
#define CHORD_TESTS_INTEGRATION_CLUSTER_FIXTURE_H_

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/base/status.h"
#include "protocol/chord.pb.h"

namespace chord::testing {

using std::chrono::milliseconds;

// --- independent ring arithmetic ----------------------------------------------------------

// 40 lowercase hex digits of SHA-1(data), computed with OpenSSL's one-shot SHA1().
std::string Sha1Hex(std::string_view data);
// Lowercase hex of arbitrary bytes (e.g. a 20-byte wire id).
std::string BytesToHex(std::string_view bytes);
// "127.0.0.1:PORT".
std::string LocalAddr(int port);

// A ring member as the tests see it: SHA-1 of the address and the address.
struct Member {
  std::string id;  // 40 lowercase hex digits
  std::string addr;
};
// The members for `addrs`, sorted by id (ring order starting from the lowest id).
std::vector<Member> SortedRing(const std::vector<std::string>& addrs);
// The owner of a key id: the first member whose id >= key_id, wrapping to the first.
const Member& OwnerOf(const std::string& key_id, const std::vector<Member>& ring);
// The first key "`prefix` N" (N from 0 to 999) that `owner` owns in the ring of `addrs`; empty
// if none does.
std::string KeyOwnedBy(const std::string& owner, const std::vector<std::string>& addrs,
                       const std::string& prefix);
// The member before ring[i] / the member whose successor is `addr` (wrapping).
const Member& PredecessorOf(const std::string& addr, const std::vector<Member>& ring);
const Member& SuccessorOf(const std::string& addr, const std::vector<Member>& ring);
// x in the clockwise ring interval (a, b]; a == b is the whole ring. Hex strings of equal
// length compare like the numbers they spell.
bool InHalfOpen(const std::string& x, const std::string& a, const std::string& b);

// --- polling --------------------------------------------------------------------------------

// Calls `done` every `every` until it returns true, at most `timeout` long and at most
// timeout / every + 1 times. Returns whether it became true.
bool PollUntil(const std::function<bool()>& done, milliseconds timeout,
               milliseconds every = milliseconds(100));

// --- processes ------------------------------------------------------------------------------

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read, closed).
int PickFreePort();
// A listening socket on a free 127.0.0.1 port, held so that a node asked to bind it fails.
// fd < 0 (with a gtest failure) when none could be made; the caller closes fd.
struct HeldPort {
  int fd = -1;
  int port = 0;
};
HeldPort HoldFreePort();
// The full path of `name` if it is an executable in $PATH, else "".
std::string FindInPath(const std::string& name);
// A blocking TCP socket connected to 127.0.0.1:port, for raw-protocol tests; -1 on failure.
// The caller closes it.
int ConnectLoopback(int port);

struct CommandResult {
  int exit_code = -1;  // -1 if killed by a signal or timed out
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] is the path of the binary), capturing stdout and stderr in files under
// `scratch_dir`; stdin comes from `stdin_path` or /dev/null. Killed by PID after `timeout`.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& scratch_dir,
                         milliseconds timeout, const std::string& stdin_path = "");

// scripts/certs.sh with `args` (e.g. {"ca", DIR}); adds a gtest failure when it fails.
bool RunCertsScript(std::vector<std::string> args, const std::string& scratch_dir);
// Makes this process's ChordClients and the chordctl it runs (CHORD_TLS_* variables) speak
// as the client certificate DIR/BASE.pem (key DIR/BASE.key, CA DIR/ca.pem); false, with a
// gtest failure, when it cannot be loaded. ClearClientTls undoes both.
bool UseClientTls(const std::string& dir, const std::string& base);
void ClearClientTls();

// One chord-node process. Its stdout and stderr go to `log_path`.
class NodeProcess {
 public:
  NodeProcess(int port, std::string log_path);
  ~NodeProcess();  // SIGKILL if still running, then reap
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;

  // fork/exec CHORD_NODE_BIN with `args`. False if fork failed.
  bool Start(const std::vector<std::string>& args);

  int port() const { return port_; }
  const std::string& addr() const { return addr_; }
  const std::string& id() const { return id_; }
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }

  // True while the process has not exited (reaps it if it has).
  bool IsRunning();
  // The raw wait status once the process has exited and been reaped.
  std::optional<int> wait_status() const { return wait_status_; }
  // Sends `sig` to the process if it is running.
  bool Signal(int sig);
  // Waits up to `timeout` for the process to exit; its wait status, or nullopt on timeout.
  std::optional<int> WaitExit(milliseconds timeout);
  // SIGKILL and reap (a crash).
  void Kill();

  // The last `lines` lines of the log.
  std::string LogTail(int lines) const;

  // The port given to `flag` (one of NodeOptions::port_flags) at start; -1 if none was.
  int FlagPort(const std::string& flag) const;
  void SetFlagPort(const std::string& flag, int port) { flag_ports_[flag] = port; }

 private:
  std::map<std::string, int> flag_ports_;
  int port_;
  std::string addr_;
  std::string id_;
  std::string log_path_;
  pid_t pid_ = -1;
  std::optional<int> wait_status_;
};

// How to start a node.
struct NodeOptions {
  std::optional<int> stabilize_ms;  // unset: the node's default
  std::optional<int> successors;
  std::string log_level;               // empty: the node's default (or $CHORD_TEST_LOG_LEVEL)
  std::optional<int> replicas;         // --replicas R; unset: the node's default (3)
  std::optional<int> anti_entropy_ms;  // --anti-entropy-ms; unset: the node's default
  // Storage. Unset: `--memory`. Set: `--data-dir DIR`, where DIR is this value, or
  // <cluster dir>/data-<port> when the value is empty (see Cluster::DataDir).
  std::optional<std::string> data_dir;
  std::vector<std::string> extra_args;  // appended to the command line as given
  // Flags that take a listening address (--http-listen, --metrics-listen): each is given
  // 127.0.0.1:<a free port>, picked afresh at every start attempt, so that a port taken
  // between picking and binding is retried like the node's own. NodeProcess::FlagPort says
  // which port a flag got; a restarted node gets fresh ones.
  std::vector<std::string> port_flags;
};

inline NodeOptions FastNodes() {
  NodeOptions o;
  o.stabilize_ms = 200;
  return o;
}

// `options` with --replicas `r`.
inline NodeOptions WithReplicas(NodeOptions options, int r) {
  options.replicas = r;
  return options;
}

// `options` with a disk store in <cluster dir>/data-<port>.
inline NodeOptions OnDisk(NodeOptions options) {
  options.data_dir = std::string();
  return options;
}

// A set of chord-node processes sharing one temporary directory.
class Cluster {
 public:
  explicit Cluster(const std::string& name);
  ~Cluster();  // kills every node still running; removes the directory unless kept
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Starts a node with `--memory` on a free port, joining through `join_addr` when given,
  // and waits (bounded) until it reports joined. Retries on a fresh port when the process
  // exits early (e.g. the port was taken meanwhile). Null, with a gtest failure, on failure.
  NodeProcess* StartNode(const NodeOptions& options, const std::string& join_addr = "");
  // Starts `n` nodes, the first alone and each later one joining through the first.
  bool StartNodes(int n, const NodeOptions& options);
  // Starts a node on `port` (e.g. a restart on the address of a node that was stopped), with
  // the same readiness wait as StartNode. Retries on the same port a few times when the
  // process exits early; a usage error (exit 2) fails at once. Every incarnation keeps its
  // own log file. Null, with a gtest failure, on failure.
  NodeProcess* StartNodeOnPort(int port, const NodeOptions& options,
                               const std::string& join_addr = "");
  // Restarts the node last started on `addr` (which must have stopped) on the same port with
  // the same options, hence the same data directory. Null, with a gtest failure, on failure.
  NodeProcess* Restart(const std::string& addr, const std::string& join_addr = "");
  // The options the node on `port` was last started with; nullopt if none was.
  std::optional<NodeOptions> OptionsOf(int port) const;
  // The --data-dir of the node on `port` (from its options); empty when it runs --memory.
  std::string DataDir(int port) const;

  // Every node process started (earlier incarnations of a restarted node included).
  std::vector<NodeProcess*> nodes() const;
  std::vector<std::string> RunningAddrs() const;
  // The latest incarnation on `addr`, or null.
  NodeProcess* FindByAddr(const std::string& addr) const;
  const std::string& dir() const { return dir_; }
  void KeepDir() { keep_dir_ = true; }

  // chordctl with `args`, e.g. {"--node", addr, "ring", "--json"}.
  CommandResult Chordctl(const std::vector<std::string>& args,
                         milliseconds timeout = milliseconds(30000),
                         const std::string& stdin_path = "") const;

  void PrintLogTails(std::ostream& out, int lines) const;

 private:
  enum class LaunchResult { kReady, kExitedEarly, kFailed };
  // One attempt at starting a node on `port` and waiting until it reports joined.
  LaunchResult Launch(int port, const NodeOptions& options, const std::string& join_addr,
                      NodeProcess** started);
  std::string DataDirFor(int port, const NodeOptions& options) const;

  std::string dir_;
  bool keep_dir_ = false;
  int next_log_ = 0;
  std::vector<std::unique_ptr<NodeProcess>> nodes_;
  std::map<int, NodeOptions> options_by_port_;
};

// --- ring checks ----------------------------------------------------------------------------

// `chordctl --node addr status --json`, parsed; nullopt when it fails or prints no JSON.
std::optional<nlohmann::json> StatusOf(const Cluster& cluster, const std::string& addr);
// Whether `chordctl --node via ring --json` reports a consistent ring of exactly `addrs`, in
// ring order, with ids that are SHA-1 of the addresses. Explains a "no" in *why.
bool ChordctlRingMatches(const Cluster& cluster, const std::string& via,
                         const std::vector<std::string>& addrs, std::string* why);
// Whether every node in `addrs` reports joined, the expected successor and predecessor.
bool PointersMatch(const std::vector<std::string>& addrs, std::string* why);
// Both of the above, polled until true or `timeout`. On timeout adds a failure with the
// last reason.
bool WaitForRing(const Cluster& cluster, const std::vector<std::string>& addrs,
                 milliseconds timeout = milliseconds(15000));

// key -> addresses of the nodes that hold a live (not deleted) record for it, from ListKeys
// on every node in `addrs`. Adds a failure if a node cannot be listed.
std::map<std::string, std::vector<std::string>> HoldersByKey(const std::vector<std::string>& addrs);
// Every record (live and tombstones) on the nodes of `addrs`: key -> (addr, record) in the
// order of `addrs`. Nullopt, with the reason in *why and no gtest failure, if a node cannot be
// listed (for polling). `timeout` bounds each node's answer.
using RecordsByKey = std::map<std::string, std::vector<std::pair<std::string, wire::Record>>>;
std::optional<RecordsByKey> TryRecordsByKey(const std::vector<std::string>& addrs, bool with_values,
                                            std::string* why,
                                            milliseconds timeout = milliseconds(5000));
// Like HoldersByKey, but nullopt with *why instead of a gtest failure.
std::optional<std::map<std::string, std::vector<std::string>>> TryHoldersByKey(
    const std::vector<std::string>& addrs, std::string* why);
// key -> number of live copies on the nodes of `addrs`. Adds a failure if a node cannot be
// listed.
std::map<std::string, size_t> LiveCopiesByKey(const std::vector<std::string>& addrs);

// --- replica placement, computed independently ----------------------------------------------

// The members that should hold a key with `replicas` copies: its owner and the next
// replicas - 1 members clockwise (wrapping), in that order; every member when the ring has
// fewer than `replicas`.
std::vector<Member> ReplicaHoldersOf(const std::string& key_id, const std::vector<Member>& ring,
                                     int replicas);
// The addresses of ReplicaHoldersOf(SHA-1(key), SortedRing(addrs), replicas), sorted.
std::vector<std::string> ExpectedHolders(const std::string& key,
                                         const std::vector<std::string>& addrs, int replicas);
// Whether, according to ListKeys on every node of `addrs`, each key in `live` is held (live)
// by exactly its expected holders among `addrs` and each key in `deleted` by no node. Keys
// outside both sets are ignored. Explains a "no" in *why (counts and a few examples).
bool PlacementMatches(const std::vector<std::string>& addrs, int replicas,
                      const std::set<std::string>& live, const std::set<std::string>& deleted,
                      std::string* why);
// PlacementMatches polled until true or `timeout` (at most one ListKeys round per `every`).
// On timeout adds a failure with the last reason.
bool WaitForPlacement(const std::vector<std::string>& addrs, int replicas,
                      const std::set<std::string>& live, const std::set<std::string>& deleted,
                      milliseconds timeout, milliseconds every = milliseconds(250));

// Number of live records a node holds; nullopt if it cannot be asked.
std::optional<size_t> LiveRecordCount(const std::string& addr);
// Sum of LiveRecordCount over `addrs`; nullopt if any node cannot be asked.
std::optional<size_t> TotalLiveRecords(const std::vector<std::string>& addrs);

// Writes `keys` (key -> value) through the node at `addr`; adds a failure per rejected put.
void PutAll(const std::string& addr, const std::map<std::string, std::string>& keys);
// Like PutAll, and returns the keys whose put was acknowledged (OK), with their values.
std::map<std::string, std::string> PutAllAcknowledged(
    const std::string& addr, const std::map<std::string, std::string>& keys);
// The keys of a map, as a set.
std::set<std::string> KeySet(const std::map<std::string, std::string>& keys);
// `count` keys "<prefix>-000", ... with distinct values (some binary).
std::map<std::string, std::string> MakeKeys(const std::string& prefix, int count);
// Whether a get answer means "no such key" (a NOT_FOUND code or a NotFound status).
bool IsNotFound(const Result<wire::DataResponse>& result);
// Whether a data operation was acknowledged with OK.
bool IsOk(const Result<wire::DataResponse>& result);
// A readable account of a data answer, for failure messages.
std::string Describe(const Result<wire::DataResponse>& result);

// Fixture: owns a Cluster and prints the node logs when the test failed.
class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  Cluster& cluster() { return *cluster_; }

 private:
  std::unique_ptr<Cluster> cluster_;
};

}  // namespace chord::testing

#endif  // CHORD_TESTS_INTEGRATION_CLUSTER_FIXTURE_H_
