// chordctl watch-key against real nodes: every change of a key, in order, without gaps,
// also while the key's owner is killed and replaced (issue 14, item 5).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cluster_fixture.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

using std::chrono::milliseconds;

// `chordctl watch-key` running in the background, its stdout in a file; stopped by PID.
class Watcher {
 public:
  Watcher(const std::string& out_path, const std::vector<std::string>& args) : path_(out_path) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = ::open((out_path + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(err, 2);
      std::vector<std::string> argv{CHORDCTL_BIN};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> c;
      for (auto& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      ::execv(c[0], c.data());
      ::_exit(127);
    }
  }
  ~Watcher() { Stop(); }
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // SIGTERM (a watch ends with exit 0 on it), SIGKILL if it does not end in 10 s.
  int Stop() {
    if (pid_ <= 0) return exit_code_;
    ::kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 200; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return exit_code_;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return exit_code_;
  }
  std::vector<std::string> Lines() const {
    std::ifstream in(path_);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  std::string Errors() const {
    std::ifstream in(path_ + ".err");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  bool WaitForLine(const std::string& needle, milliseconds timeout) const {
    return PollUntil(
        [&] {
          for (const auto& l : Lines()) {
            if (l.find(needle) != std::string::npos) return true;
          }
          return false;
        },
        timeout);
  }

 private:
  std::string path_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

struct Event {
  std::string type;
  uint64_t version = 0;
  std::string value;
};

Event Parse(const std::string& line) {
  std::istringstream in(line);
  Event e;
  in >> e.type >> e.version;
  std::getline(in, e.value);
  if (!e.value.empty() && e.value[0] == ' ') e.value.erase(0, 1);
  return e;
}

class WatchTest : public ClusterTest {};

TEST_F(WatchTest, PrintsEveryChangeInOrderAndResumesFromAVersion) {
  ASSERT_TRUE(cluster().StartNodes(3, WithReplicas(FastNodes(), 3)));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  ChordClient client(addrs[0], 20000);
  auto v1 = client.Put("colour", "red");
  ASSERT_TRUE(IsOk(v1)) << Describe(v1);

  Watcher watcher(cluster().dir() + "/watch.out", {"--node", addrs[1], "watch-key", "colour"});
  ASSERT_TRUE(watcher.WaitForLine("current", milliseconds(15000))) << watcher.Errors();
  auto v2 = client.Put("colour", "green");
  auto v3 = client.Put("colour", "blue\tsky");
  auto d = client.Delete("colour");
  auto v4 = client.Put("colour", "amber");
  for (const auto* r : {&v2, &v3, &d, &v4}) ASSERT_TRUE(IsOk(*r)) << Describe(*r);
  ASSERT_TRUE(watcher.WaitForLine("put " + std::to_string(v4->version()), milliseconds(15000)))
      << watcher.Errors();
  EXPECT_EQ(watcher.Stop(), 0);
  const std::vector<std::string> expected = {
      "current " + std::to_string(v1->version()) + " red",
      "put " + std::to_string(v2->version()) + " green",
      "put " + std::to_string(v3->version()) + " blue\\tsky",
      "delete " + std::to_string(d->version()),
      "put " + std::to_string(v4->version()) + " amber",
  };
  EXPECT_EQ(watcher.Lines(), expected);

  // From a version on: the changes after it, then --count ends the watch.
  CommandResult resumed =
      cluster().Chordctl({"--node", addrs[2], "watch-key", "colour", "--from-version",
                          std::to_string(v2->version()), "--count", "3"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.out, expected[2] + "\n" + expected[3] + "\n" + expected[4] + "\n");

  // A version the ring cannot connect to the present: an explicit resync, never a gap.
  CommandResult old = cluster().Chordctl(
      {"--node", addrs[0], "watch-key", "colour", "--from-version", "1", "--count", "1"});
  EXPECT_EQ(old.exit_code, 0) << old.err;
  EXPECT_EQ(old.out, "resync " + std::to_string(v4->version()) + " amber\n");

  // No node answers: --give-up-s ends the watch with exit 3 and how to resume.
  const std::string nobody = "127.0.0.1:" + std::to_string(PickFreePort());
  CommandResult gave_up = cluster().Chordctl(
      {"--node", nobody, "--timeout-ms", "200", "watch-key", "colour", "--give-up-s", "1"});
  EXPECT_EQ(gave_up.exit_code, 3) << gave_up.err;
  EXPECT_NE(gave_up.err.find("no node of the ring answered the watch of key \"colour\" for 1 s"),
            std::string::npos)
      << gave_up.err;
  EXPECT_NE(gave_up.err.find("--from-version 0"), std::string::npos) << gave_up.err;
  CommandResult zero =
      cluster().Chordctl({"--node", nobody, "watch-key", "colour", "--give-up-s", "0"});
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
}

TEST_F(WatchTest, AWatcherSeesEveryVersionOfAKeyWrittenAThousandTimesWhileItsOwnerIsReplaced) {
  ASSERT_TRUE(cluster().StartNodes(4, OnDisk(WithReplicas(FastNodes(), 3))));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs));
  const std::string key = "ticker";
  const std::string owner = OwnerOf(Sha1Hex(key), SortedRing(addrs)).addr;
  std::string contact;
  for (const auto& a : addrs) {
    if (a != owner) contact = a;
  }
  ChordClient writer(contact, 20000);
  ASSERT_TRUE(IsOk(writer.Put(key, "v0000")));
  Watcher watcher(cluster().dir() + "/ticker.out", {"--node", contact, "watch-key", key});
  ASSERT_TRUE(watcher.WaitForLine("current", milliseconds(15000))) << watcher.Errors();

  constexpr int kWrites = 1000;
  std::map<uint64_t, std::string> acknowledged;  // version -> value
  int retries = 0;
  for (int i = 1; i <= kWrites; ++i) {
    char value[16];
    std::snprintf(value, sizeof(value), "v%04d", i);
    if (i == kWrites * 3 / 10) cluster().FindByAddr(owner)->Kill();
    if (i == kWrites * 6 / 10) {
      ASSERT_NE(cluster().Restart(owner, contact), nullptr);
    }
    bool done = false;
    for (int attempt = 0; attempt < 60 && !done; ++attempt) {
      auto r = writer.Put(key, value);
      if (IsOk(r)) {
        acknowledged[r->version()] = value;
        done = true;
      } else {
        ++retries;
        std::this_thread::sleep_for(milliseconds(100));
      }
    }
    ASSERT_TRUE(done) << "put " << value << " was never acknowledged";
  }
  const uint64_t last = acknowledged.rbegin()->first;
  ASSERT_TRUE(watcher.WaitForLine("put " + std::to_string(last) + " ", milliseconds(30000)))
      << watcher.Errors();
  EXPECT_EQ(watcher.Stop(), 0) << watcher.Errors();

  const std::vector<std::string> lines = watcher.Lines();
  std::map<uint64_t, std::string> seen;
  uint64_t previous = 0;
  int resyncs = 0;
  for (const auto& line : lines) {
    const Event e = Parse(line);
    if (e.type == "resync") ++resyncs;
    EXPECT_GT(e.version, previous) << "out of order: " << line;
    previous = e.version;
    if (e.type == "put") seen[e.version] = e.value;
  }
  EXPECT_EQ(resyncs, 0) << "the watcher was told to resync";
  size_t missing = 0;
  for (const auto& [version, value] : acknowledged) {
    auto it = seen.find(version);
    if (it == seen.end() || it->second != value) ++missing;
  }
  EXPECT_EQ(missing, 0u) << "acknowledged writes the watcher never printed";
  std::cout << "[watch] " << acknowledged.size() << " acknowledged writes, " << lines.size()
            << " events printed, " << retries << " put retries while the owner " << owner
            << " was killed and restarted\n";
}

// Eight vnodes share one RocksDB store. After a restart on it, the vnode that accounts for
// a key (its watchers follow it there) is the one that expires it: before, every vnode
// indexed every stored expiry, and whichever swept a key first stored its tombstone where no
// watcher saw it (1 of 6 watchers got its expire event).
TEST_F(WatchTest, AfterARestartWithVnodesEveryWatcherSeesItsKeyExpire) {
  NodeOptions options = OnDisk(FastNodes());
  options.extra_args.insert(options.extra_args.end(), {"--vnodes", "8"});
  NodeProcess* node = cluster().StartNode(options);
  ASSERT_NE(node, nullptr);
  const std::string addr = node->addr();
  ChordClient client(addr, 20000);
  DataOptions ttl;
  ttl.ttl_ms = 8000;
  constexpr int kKeys = 6;
  for (int i = 0; i < kKeys; ++i) {
    auto r = client.Put("short-" + std::to_string(i), "v" + std::to_string(i), ttl);
    ASSERT_TRUE(IsOk(r)) << Describe(r);
  }
  node->Signal(SIGTERM);
  ASSERT_TRUE(node->WaitExit(milliseconds(15000)).has_value());
  ASSERT_NE(cluster().Restart(addr), nullptr);
  std::vector<std::unique_ptr<Watcher>> watchers;
  for (int i = 0; i < kKeys; ++i) {
    watchers.push_back(std::make_unique<Watcher>(
        cluster().dir() + "/short-" + std::to_string(i) + ".out",
        std::vector<std::string>{"--node", addr, "watch-key", "short-" + std::to_string(i)}));
  }
  for (int i = 0; i < kKeys; ++i) {
    EXPECT_TRUE(watchers[i]->WaitForLine("expire ", milliseconds(30000)))
        << "short-" << i << ": " << ::testing::PrintToString(watchers[i]->Lines())
        << watchers[i]->Errors();
  }
  for (auto& w : watchers) w->Stop();
}

}  // namespace
}  // namespace chord::testing
