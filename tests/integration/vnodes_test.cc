// Multi-process tests of virtual nodes (chord-node --vnodes V): real chord-node processes on
// 127.0.0.1, each holding V ring positions "127.0.0.1:PORT#i" with id SHA-1("127.0.0.1:PORT#i")
// (computed here with OpenSSL, independently of the code under test). Checks the ring that
// `chordctl ring --json` walks, data placement by the sorted vnode ids, request routing by
// the envelope's vnode, the graceful leave of a whole process, and the usage errors of the
// storage and vnode flags.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "protocol/frame.h"
#include "tests/integration/cluster_fixture.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kVnodes = 4;
constexpr int kProcesses = 3;
constexpr int kKeys = 200;
constexpr int kMaxReported = 10;  // mismatches spelled out before summarising
constexpr milliseconds kStartTimeout(15000);
constexpr milliseconds kRingTimeout(30000);

// "127.0.0.1:PORT#i".
std::string VnodeAddr(const std::string& process_addr, int i) {
  return process_addr + "#" + std::to_string(i);
}

// Fixture: chord-node processes started with arbitrary flags (the vnode flags are not in
// NodeOptions), stopped by PID at the end; their logs are printed when a test failed.
class VnodeTest : public ClusterTest {
 protected:
  void TearDown() override {
    if (HasFailure()) {
      for (const auto& p : processes_) {
        std::cerr << "----- " << p->addr() << " (" << p->log_path() << ")\n"
                  << p->LogTail(40) << "\n";
      }
    }
    processes_.clear();  // SIGKILL and reap whatever still runs
    ClusterTest::TearDown();
  }

  // Starts `chord-node --listen 127.0.0.1:PORT --memory --vnodes V --stabilize-ms 200`
  // (plus --join when given) on a free port and waits (bounded) until every vnode reports
  // joined. Retries on a fresh port when the process exits early. Null, with a failure, when
  // it does not come up.
  NodeProcess* StartProcess(int vnodes, const std::string& join = "",
                            const std::vector<std::string>& extra = {}) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      const int port = PickFreePort();
      const std::string log =
          cluster().dir() + "/vnode-process-" + std::to_string(processes_.size()) + ".log";
      auto process = std::make_unique<NodeProcess>(port, log);
      std::vector<std::string> args = {"--listen", process->addr(),        "--memory",
                                       "--vnodes", std::to_string(vnodes), "--stabilize-ms",
                                       "200"};
      if (!join.empty()) {
        args.push_back("--join");
        args.push_back(join);
      }
      args.insert(args.end(), extra.begin(), extra.end());
      if (!process->Start(args)) return nullptr;
      NodeProcess* raw = process.get();
      processes_.push_back(std::move(process));
      bool exited = false;
      const bool ready = PollUntil(
          [&] {
            if (!raw->IsRunning()) {
              exited = true;
              return true;
            }
            for (int i = 0; i < vnodes; ++i) {
              ChordClient client(vnodes == 1 ? raw->addr() : VnodeAddr(raw->addr(), i), 1000);
              auto status = client.GetStatus();
              if (!status.ok() || !status->joined()) return false;
            }
            return true;
          },
          kStartTimeout, milliseconds(100));
      if (ready && !exited) return raw;
      if (!exited) {
        ADD_FAILURE() << raw->addr() << " did not report all " << vnodes << " vnodes joined within "
                      << kStartTimeout.count() << " ms";
        return nullptr;
      }
      // Exited early: most likely the port was taken meanwhile; try another one.
    }
    ADD_FAILURE() << "chord-node --vnodes " << vnodes << " exited early three times";
    return nullptr;
  }

  // The expected ring of `processes`: every vnode, sorted by SHA-1 of its address.
  static std::vector<Member> ExpectedRing(const std::vector<NodeProcess*>& processes, int vnodes) {
    std::vector<std::string> addrs;
    for (const NodeProcess* p : processes) {
      for (int i = 0; i < vnodes; ++i) addrs.push_back(VnodeAddr(p->addr(), i));
    }
    std::vector<Member> ring;
    for (const std::string& a : addrs) ring.push_back(Member{Sha1Hex(a), a});
    std::sort(ring.begin(), ring.end(),
              [](const Member& a, const Member& b) { return a.id < b.id; });
    return ring;
  }

  // Whether `chordctl --node via ring --json` lists exactly `ring`, in that order, each id
  // SHA-1 of its address, and reports the ring consistent. Explains a "no" in *why.
  bool RingJsonMatches(const std::string& via, const std::vector<Member>& ring, std::string* why) {
    const CommandResult r = cluster().Chordctl({"--node", via, "ring", "--json"});
    if (r.exit_code != 0) {
      *why = "chordctl ring --json via " + via + " exited " + std::to_string(r.exit_code) + ": " +
             r.err;
      return false;
    }
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_object() || !j.contains("nodes") || !j["nodes"].is_array()) {
      *why = "not a ring document: " + r.out;
      return false;
    }
    const auto& nodes = j["nodes"];
    if (nodes.size() != ring.size()) {
      *why = "ring lists " + std::to_string(nodes.size()) + " entries, expected " +
             std::to_string(ring.size());
      return false;
    }
    for (size_t i = 0; i < ring.size(); ++i) {
      const std::string id = nodes[i].value("id", "");
      const std::string addr = nodes[i].value("addr", "");
      if (id != ring[i].id || addr != ring[i].addr) {
        *why = "entry " + std::to_string(i) + " is " + addr + " [" + id + "], expected " +
               ring[i].addr + " [" + ring[i].id + "]";
        return false;
      }
      if (Sha1Hex(addr) != id) {
        *why = "entry " + std::to_string(i) + ": id " + id + " is not SHA-1 of " + addr;
        return false;
      }
      if (!nodes[i].contains("keys") || !nodes[i].contains("replica_keys")) {
        *why = "entry " + std::to_string(i) + " lacks keys or replica_keys: " + nodes[i].dump();
        return false;
      }
    }
    if (!j.value("consistent", false)) {
      *why = "ring not consistent yet: " + j.value("problems", nlohmann::json::array()).dump();
      return false;
    }
    return true;
  }

  bool WaitForVnodeRing(const std::string& via, const std::vector<Member>& ring) {
    std::string why;
    const bool ok = PollUntil([&] { return RingJsonMatches(via, ring, &why); }, kRingTimeout,
                              milliseconds(250));
    if (!ok) ADD_FAILURE() << "ring via " << via << " never matched: " << why;
    return ok;
  }

  std::vector<NodeProcess*> Processes() const {
    std::vector<NodeProcess*> out;
    for (const auto& p : processes_) {
      if (p->IsRunning()) out.push_back(p.get());
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<NodeProcess>> processes_;
};

// Puts every key through the processes in turn (plain and #i addresses alike); a put that
// the settling ring refuses is retried a few times, briefly.
void PutThroughAll(const std::vector<std::string>& entry_points,
                   const std::map<std::string, std::string>& keys) {
  std::vector<std::unique_ptr<ChordClient>> clients;
  for (const std::string& a : entry_points) clients.push_back(std::make_unique<ChordClient>(a));
  size_t n = 0;
  int failed = 0;
  for (const auto& [key, value] : keys) {
    ChordClient& client = *clients[n++ % clients.size()];
    Result<wire::DataResponse> r = client.Put(key, value);
    for (int retry = 0; retry < 3 && !IsOk(r); ++retry) {
      ::usleep(200 * 1000);
      r = client.Put(key, value);
    }
    if (!IsOk(r) && ++failed <= kMaxReported) {
      ADD_FAILURE() << "put " << key << " through " << client.addr() << ": " << Describe(r);
    }
  }
  EXPECT_EQ(failed, 0) << "of " << keys.size() << " puts";
}

// Reads every key back through the entry points in turn; returns how many were wrong.
int CountWrongReads(const std::vector<std::string>& entry_points,
                    const std::map<std::string, std::string>& keys) {
  std::vector<std::unique_ptr<ChordClient>> clients;
  for (const std::string& a : entry_points) clients.push_back(std::make_unique<ChordClient>(a));
  size_t n = 0;
  int wrong = 0;
  for (const auto& [key, value] : keys) {
    ChordClient& client = *clients[n++ % clients.size()];
    auto r = client.Get(key);
    if (!IsOk(r) || r->value() != value) {
      if (++wrong <= kMaxReported) {
        ADD_FAILURE() << "get " << key << " through " << client.addr() << ": " << Describe(r);
      }
    }
  }
  return wrong;
}

TEST_F(VnodeTest, ThreeProcessesOfFourVnodesFormOneRingOfTwelveAndPlaceKeysByVnodeId) {
  NodeProcess* first = StartProcess(kVnodes);
  ASSERT_NE(first, nullptr);
  for (int p = 1; p < kProcesses; ++p) ASSERT_NE(StartProcess(kVnodes, first->addr()), nullptr);
  const std::vector<NodeProcess*> processes = Processes();
  ASSERT_EQ(processes.size(), static_cast<size_t>(kProcesses));
  const std::vector<Member> ring = ExpectedRing(processes, kVnodes);
  ASSERT_EQ(ring.size(), static_cast<size_t>(kProcesses * kVnodes));

  const auto started = Clock::now();
  ASSERT_TRUE(WaitForVnodeRing(processes[1]->addr(), ring));
  std::cout << "[vnodes] " << ring.size() << "-vnode ring consistent "
            << std::chrono::duration_cast<milliseconds>(Clock::now() - started).count()
            << " ms after the last process joined\n";
  // Any ring position is a way in: a vnode address and another process give the same ring.
  std::string why;
  EXPECT_TRUE(RingJsonMatches(VnodeAddr(processes[2]->addr(), 3), ring, &why)) << why;

  // status through a "#i" address describes that vnode.
  const std::string vnode2 = VnodeAddr(processes[0]->addr(), 2);
  const CommandResult status = cluster().Chordctl({"--node", vnode2, "status", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const auto sj = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_TRUE(sj.is_object()) << status.out;
  EXPECT_EQ(sj.value("addr", ""), vnode2);
  EXPECT_EQ(sj.value("id", ""), Sha1Hex(vnode2));
  // Successor lists are replicas (3) x vnodes long, so that they reach 3 distinct processes,
  // and fill up to the whole ring less one within a few stabilization rounds.
  EXPECT_EQ(sj.value("successor_list_length", 0u), static_cast<unsigned>(3 * kVnodes))
      << status.out;
  size_t successors = 0;
  EXPECT_TRUE(PollUntil(
      [&] {
        ChordClient client(vnode2, 2000);
        auto s = client.GetStatus();
        successors = s.ok() ? static_cast<size_t>(s->successors_size()) : 0;
        return successors == ring.size() - 1;
      },
      milliseconds(10000), milliseconds(200)))
      << vnode2 << " holds " << successors << " successors, expected " << ring.size() - 1;

  // Data: written and read through plain and vnode addresses of every process.
  std::vector<std::string> entry_points;
  for (const NodeProcess* p : processes) {
    entry_points.push_back(p->addr());
    entry_points.push_back(VnodeAddr(p->addr(), 1));
  }
  const auto keys = MakeKeys("vn", kKeys);
  PutThroughAll(entry_points, keys);
  std::rotate(entry_points.begin(), entry_points.begin() + 1, entry_points.end());
  EXPECT_EQ(CountWrongReads(entry_points, keys), 0) << "of " << keys.size() << " keys";

  // A key's owner is the first vnode clockwise from SHA-1(key), from the sorted vnode ids.
  int wrong_owner = 0;
  size_t n = 0;
  for (const auto& [key, value] : keys) {
    const Member& expected = OwnerOf(Sha1Hex(key), ring);
    const std::string via = entry_points[n++ % entry_points.size()];
    const CommandResult r = cluster().Chordctl({"--node", via, "lookup", key, "--json"});
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    const bool right = r.exit_code == 0 && j.is_object() && j.contains("owner") &&
                       j["owner"].is_object() && j["owner"].value("addr", "") == expected.addr &&
                       j["owner"].value("id", "") == expected.id &&
                       j.value("key_id", "") == Sha1Hex(key);
    if (!right && ++wrong_owner <= kMaxReported) {
      ADD_FAILURE() << "lookup " << key << " via " << via << ": expected owner " << expected.addr
                    << " [" << expected.id << "], got exit " << r.exit_code << ": " << r.out
                    << r.err;
    }
  }
  EXPECT_EQ(wrong_owner, 0) << "of " << keys.size() << " lookups";

  // The readable ring table shows every vnode with its primary and replica key counts.
  const CommandResult table = cluster().Chordctl({"--node", first->addr(), "ring"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("KEYS"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("REPLICA KEYS"), std::string::npos) << table.out;
  for (const Member& m : ring) EXPECT_NE(table.out.find(m.addr), std::string::npos) << m.addr;

  // Every process stops gracefully on SIGTERM, one vnode after the other, exit 0.
  for (NodeProcess* p : processes) ASSERT_TRUE(p->Signal(SIGTERM));
  for (NodeProcess* p : processes) {
    const std::optional<int> exit_status = p->WaitExit(milliseconds(20000));
    ASSERT_TRUE(exit_status.has_value()) << p->addr() << " did not stop within 20 s of SIGTERM";
    EXPECT_TRUE(WIFEXITED(*exit_status) && WEXITSTATUS(*exit_status) == 0)
        << p->addr() << " wait status " << *exit_status;
  }
}

TEST_F(VnodeTest, ProcessOfFourVnodesLeavesGracefullyWithoutLosingKeys) {
  NodeProcess* first = StartProcess(kVnodes);
  ASSERT_NE(first, nullptr);
  for (int p = 1; p < kProcesses; ++p) ASSERT_NE(StartProcess(kVnodes, first->addr()), nullptr);
  std::vector<NodeProcess*> processes = Processes();
  ASSERT_EQ(processes.size(), static_cast<size_t>(kProcesses));
  ASSERT_TRUE(WaitForVnodeRing(first->addr(), ExpectedRing(processes, kVnodes)));

  const auto keys = MakeKeys("leave", 100);
  PutThroughAll({first->addr()}, keys);

  NodeProcess* leaver = processes[1];
  ASSERT_TRUE(leaver->Signal(SIGTERM));
  const std::optional<int> exit_status = leaver->WaitExit(milliseconds(20000));
  ASSERT_TRUE(exit_status.has_value()) << leaver->addr() << " did not stop within 20 s";
  EXPECT_TRUE(WIFEXITED(*exit_status) && WEXITSTATUS(*exit_status) == 0)
      << "wait status " << *exit_status;

  const std::vector<NodeProcess*> remaining = {processes[0], processes[2]};
  ASSERT_TRUE(WaitForVnodeRing(processes[2]->addr(), ExpectedRing(remaining, kVnodes)));
  EXPECT_EQ(CountWrongReads({processes[0]->addr(), VnodeAddr(processes[2]->addr(), 3)}, keys), 0)
      << "of " << keys.size() << " keys after " << leaver->addr() << " left";
}

// Connects to 127.0.0.1:port; -1 on failure.
TEST_F(VnodeTest, SingleCopyVnodesKeepEveryKeyWhileSiblingsStabilize) {
  // Sibling vnodes share one store: a hand-over between them must neither copy nor erase.
  const std::vector<std::string> single = {"--replicas", "1"};
  NodeProcess* first = StartProcess(2, "", single);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(StartProcess(2, first->addr(), single), nullptr);
  const std::vector<NodeProcess*> processes = Processes();
  ASSERT_TRUE(WaitForVnodeRing(first->addr(), ExpectedRing(processes, 2)));
  const auto keys = MakeKeys("single", 100);
  PutThroughAll({first->addr()}, keys);
  std::this_thread::sleep_for(milliseconds(3000));  // many stabilize rounds (200 ms)
  EXPECT_EQ(CountWrongReads({first->addr(), processes[1]->addr()}, keys), 0);
}

// Reads frames from `fd` into `decoder` until one is complete or `timeout` passes.
bool ReadFrame(int fd, FrameDecoder* decoder, wire::Envelope* out, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (int guard = 0; guard < 100000; ++guard) {
    const FrameDecoder::Result r = decoder->Next(out);
    if (r == FrameDecoder::Result::kFrame) return true;
    if (r == FrameDecoder::Result::kError) return false;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left)) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    decoder->Feed(std::string_view(buf, static_cast<size_t>(n)));
  }
  return false;
}

TEST_F(VnodeTest, RequestForAMissingVnodeGetsAnErrorAndTheConnectionStaysOpen) {
  NodeProcess* node = StartProcess(2);
  ASSERT_NE(node, nullptr);
  const int fd = ConnectLoopback(node->port());
  ASSERT_GE(fd, 0) << "cannot connect to " << node->addr();

  // Vnode 5 of a 2-vnode process, then vnode 1, on the same connection.
  wire::Envelope bad;
  bad.set_request_id(7);
  bad.set_vnode(5);
  bad.mutable_status();
  wire::Envelope good;
  good.set_request_id(8);
  good.set_vnode(1);
  good.mutable_status();
  std::string frames;
  ASSERT_TRUE(EncodeFrame(bad, &frames));
  std::string second;
  ASSERT_TRUE(EncodeFrame(good, &second));
  frames += second;
  ASSERT_EQ(::send(fd, frames.data(), frames.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(frames.size()));

  FrameDecoder decoder;
  wire::Envelope reply;
  ASSERT_TRUE(ReadFrame(fd, &decoder, &reply, milliseconds(5000))) << "no answer to vnode 5";
  EXPECT_EQ(reply.request_id(), 7u);
  ASSERT_TRUE(reply.has_error()) << reply.DebugString();
  EXPECT_EQ(reply.error().code(), wire::INVALID);
  const std::string& sentence = reply.error().error();
  EXPECT_FALSE(sentence.empty());
  EXPECT_EQ(sentence.find('\n'), std::string::npos) << sentence;
  EXPECT_NE(sentence.find('5'), std::string::npos) << sentence;

  ASSERT_TRUE(ReadFrame(fd, &decoder, &reply, milliseconds(5000)))
      << "no answer to vnode 1 on the same connection";
  EXPECT_EQ(reply.request_id(), 8u);
  ASSERT_TRUE(reply.has_status_resp()) << reply.DebugString();
  EXPECT_EQ(reply.status_resp().self().addr(), VnodeAddr(node->addr(), 1));
  ::close(fd);

  // chordctl names the problem and exits 2 (the request was invalid).
  const CommandResult r = cluster().Chordctl({"--node", VnodeAddr(node->addr(), 9), "status"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_FALSE(r.err.empty());
}

// Runs chord-node with `args` and expects a usage error: exit 2 and one sentence on stderr.
void ExpectUsageError(const Cluster& cluster, const std::vector<std::string>& args,
                      const std::vector<std::string>& mentions) {
  std::vector<std::string> argv = {CHORD_NODE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult r = RunCommand(argv, cluster.dir(), milliseconds(10000));
  std::string command;
  for (const std::string& a : args) command += " " + a;
  EXPECT_EQ(r.exit_code, 2) << "chord-node" << command << "\nstdout: " << r.out
                            << "\nstderr: " << r.err;
  ASSERT_FALSE(r.err.empty()) << "chord-node" << command;
  // One line, one sentence.
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  for (const std::string& m : mentions) {
    EXPECT_NE(r.err.find(m), std::string::npos) << "'" << m << "' not in: " << r.err;
  }
}

TEST_F(VnodeTest, MemoryTogetherWithDataDirIsAUsageError) {
  const std::string addr = LocalAddr(PickFreePort());
  ExpectUsageError(cluster(),
                   {"--listen", addr, "--memory", "--data-dir", cluster().dir() + "/data"},
                   {"--memory", "--data-dir"});
  // Nothing was created.
  EXPECT_NE(::access((cluster().dir() + "/data").c_str(), F_OK), 0);
}

TEST_F(VnodeTest, VnodeCountOutsideOneToSixtyFourIsAUsageError) {
  const std::string addr = LocalAddr(PickFreePort());
  ExpectUsageError(cluster(), {"--listen", addr, "--memory", "--vnodes", "0"}, {"--vnodes"});
  ExpectUsageError(cluster(), {"--listen", addr, "--memory", "--vnodes", "65"}, {"--vnodes"});
}

TEST_F(VnodeTest, RingTimingAndListFlagsOutOfRangeAreUsageErrors) {
  const std::string addr = LocalAddr(PickFreePort());
  // Zave's proof needs successor lists of at least two.
  ExpectUsageError(cluster(), {"--listen", addr, "--memory", "--successors", "1"},
                   {"--successors"});
  ExpectUsageError(cluster(), {"--listen", addr, "--memory", "--stabilize-ms", "86400001"},
                   {"--stabilize-ms"});
  ExpectUsageError(cluster(), {"--listen", addr, "--memory", "--rpc-timeout-ms", "86400001"},
                   {"--rpc-timeout-ms"});
}

TEST_F(VnodeTest, AnotherSpellingOfTheNodesOwnAddressIsSeenAsItself) {
  const std::string port = std::to_string(PickFreePort());
  const std::string other = std::to_string(PickFreePort());
  for (const std::string& join : {"localhost:" + port, "127.0.0.1:" + port + "#2"}) {
    ExpectUsageError(cluster(), {"--listen", "127.0.0.1:" + port, "--memory", "--join", join},
                     {"--join names this node's own address"});
  }
  ExpectUsageError(
      cluster(),
      {"--listen", "0.0.0.0:" + port, "--insecure", "--memory", "--join", "127.0.0.1:" + port},
      {"--join names this node's own address"});
  ExpectUsageError(
      cluster(),
      {"--listen", "127.0.0.1:" + port, "--memory", "--http-listen", "localhost:" + port},
      {"--http-listen must differ"});
  ExpectUsageError(
      cluster(),
      {"--listen", "127.0.0.1:" + port, "--memory", "--metrics-listen", "localhost:" + port},
      {"--metrics-listen must differ"});
  ExpectUsageError(cluster(),
                   {"--listen", "127.0.0.1:" + port, "--memory", "--metrics-listen",
                    "127.0.0.1:" + other, "--http-listen", "localhost:" + other},
                   {"--http-listen must differ"});
}

// The first IPv4 address of this host's interfaces off 127.0.0.0/8, read here with getifaddrs
// (not by the code under test); empty if the host has none.
std::string NonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string found;
  for (const ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr) found = text;
  }
  ::freeifaddrs(list);
  return found;
}

// With --listen 0.0.0.0:P, this host's LAN address on port P is the node itself too (as
// --join, and as --http-listen). The LAN test checks the same in a namespace of its own, where
// it always has such an address; a host without one has nothing to check here.
TEST_F(VnodeTest, ALanAddressOfThisHostOnTheWildcardsPortIsTheNodeItself) {
  const std::string lan = NonLoopbackAddress();
  if (lan.empty()) GTEST_SKIP() << "this host has no IPv4 address off 127.0.0.0/8";
  const std::string port = std::to_string(PickFreePort());
  ExpectUsageError(
      cluster(),
      {"--listen", "0.0.0.0:" + port, "--insecure", "--memory", "--join", lan + ":" + port},
      {"--join names this node's own address"});
  ExpectUsageError(
      cluster(),
      {"--listen", "0.0.0.0:" + port, "--insecure", "--memory", "--http-listen", lan + ":" + port},
      {"--http-listen must differ"});
}

}  // namespace
}  // namespace chord::testing
