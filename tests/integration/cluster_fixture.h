// Helpers for the multi-process integration tests: start real chord-node processes on
// 127.0.0.1 with ports found free at run time, run chordctl, and check a ring against
// expectations computed here, independently of the code under test (SHA-1 through OpenSSL's
// one-shot SHA1(), ring order and key owners from sorted hex strings).
//
// Every process is started by fork/exec, stopped by PID (SIGKILL in the destructor if it is
// still running) and reaped. Node logs go to a per-test temporary directory; ClusterTest
// prints their tails when a test fails. Single-threaded: use from the test's thread only.
#ifndef CHORD_TESTS_INTEGRATION_CLUSTER_FIXTURE_H_
#define CHORD_TESTS_INTEGRATION_CLUSTER_FIXTURE_H_

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "node/core/status.h"
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

 private:
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
  std::string log_level;  // empty: the node's default (or $CHORD_TEST_LOG_LEVEL)
};

inline NodeOptions FastNodes() {
  NodeOptions o;
  o.stabilize_ms = 200;
  return o;
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

  std::vector<NodeProcess*> nodes() const;
  std::vector<std::string> RunningAddrs() const;
  NodeProcess* FindByAddr(const std::string& addr) const;
  const std::string& dir() const { return dir_; }
  void KeepDir() { keep_dir_ = true; }

  // chordctl with `args`, e.g. {"--node", addr, "ring", "--json"}.
  CommandResult Chordctl(const std::vector<std::string>& args,
                         milliseconds timeout = milliseconds(30000),
                         const std::string& stdin_path = "") const;

  void PrintLogTails(std::ostream& out, int lines) const;

 private:
  std::string dir_;
  bool keep_dir_ = false;
  int next_log_ = 0;
  std::vector<std::unique_ptr<NodeProcess>> nodes_;
};

// --- ring checks ----------------------------------------------------------------------------

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
// Number of live records a node holds; nullopt if it cannot be asked.
std::optional<size_t> LiveRecordCount(const std::string& addr);
// Sum of LiveRecordCount over `addrs`; nullopt if any node cannot be asked.
std::optional<size_t> TotalLiveRecords(const std::vector<std::string>& addrs);

// Writes `keys` (key -> value) through the node at `addr`; adds a failure per rejected put.
void PutAll(const std::string& addr, const std::map<std::string, std::string>& keys);
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
