// chord-placement end to end: the JSON contract of every subcommand (DESIGN.md section 5),
// the published figures it reproduces (../background/004's 756 and 237 moves of 1000 users,
// CRC16 and slot values), and clear usage errors with exit code 2.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using nlohmann::json;

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CliRun Placement(const std::string& args) {
  char err_path[] = "/tmp/placement_cli_test_XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd < 0) return {};
  close(fd);
  const std::string cmd = std::string(CHORD_PLACEMENT_BIN) + " " + args + " 2>" + err_path;
  CliRun run;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) run.out.append(buf.data(), n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  run.err = ss.str();
  unlink(err_path);
  return run;
}

json PlacementJson(const std::string& args) {
  const CliRun run = Placement(args + " --json");
  EXPECT_EQ(run.exit_code, 0) << args << ": " << run.err;
  EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 1) << "one JSON object per run";
  return json::parse(run.out);
}

uint64_t Sum(const json& counts) {
  return std::accumulate(counts.begin(), counts.end(), uint64_t{0},
                         [](uint64_t a, const json& c) { return a + c.get<uint64_t>(); });
}

TEST(PlacementCliTest, ModuloThreeToFourMovesWhatTheArticleMeasured) {
  // ../background/004: SHA-256 of "user-i" mod the server count, server-a..c then server-d:
  // 339/347/314 before, 255/242/259/244 after, 756 of 1000 users moved.
  const json j = PlacementJson("move --algo modulo --from 3 --to 4 --keys 1000");
  EXPECT_EQ(j["keys"], 1000);
  EXPECT_EQ(j["moved"], 756);
  EXPECT_DOUBLE_EQ(j["moved_fraction"].get<double>(), 0.756);
  EXPECT_DOUBLE_EQ(j["ideal_fraction"].get<double>(), 0.25);
  EXPECT_EQ(j["before"], json::parse("[339, 347, 314]"));
  EXPECT_EQ(j["after"], json::parse("[255, 242, 259, 244]"));
  EXPECT_GT(j["moved_between_old"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["nodes"], json::parse(R"(["server-a", "server-b", "server-c", "server-d"])"));
}

TEST(PlacementCliTest, RingWithHundredVnodesMovesOnlyToTheNewNode) {
  // ../background/004: 100 points per server at SHA-256("server-x#i"): 367/317/316, then
  // 280/215/268/237; 237 moved, all of them to server-d.
  const json j = PlacementJson("move --algo ring --vnodes 100 --from 3 --to 4 --keys 1000");
  EXPECT_EQ(j["moved"], 237);
  EXPECT_EQ(j["moved_between_old"], 0);
  EXPECT_EQ(j["before"], json::parse("[367, 317, 316]"));
  EXPECT_EQ(j["after"], json::parse("[280, 215, 268, 237]"));
}

TEST(PlacementCliTest, MoveCountsAddUpForEveryScheme) {
  for (const char* algo : {"modulo", "ring", "ring-map", "ketama", "jump", "rendezvous", "maglev",
                           "bounded", "redis", "kademlia"}) {
    SCOPED_TRACE(algo);
    const json j =
        PlacementJson(std::string("move --algo ") + algo + " --from 5 --to 7 --keys 3000");
    EXPECT_EQ(j["algo"], algo);
    EXPECT_EQ(j["before"].size(), 5u);
    EXPECT_EQ(j["after"].size(), 7u);
    EXPECT_EQ(Sum(j["before"]), 3000u);
    EXPECT_EQ(Sum(j["after"]), 3000u);
    EXPECT_LE(j["moved_between_old"].get<uint64_t>(), j["moved"].get<uint64_t>());
    EXPECT_NEAR(j["moved_fraction"].get<double>(), j["moved"].get<double>() / 3000, 1e-12);
    if (std::string(algo) == "bounded") {
      for (const json& c : j["after"]) EXPECT_LE(c.get<uint64_t>(), j["capacity"].get<uint64_t>());
    }
  }
}

TEST(PlacementCliTest, RemovingAMiddleNodeReindexesJumpButNotTheRing) {
  const json jump = PlacementJson("remove --algo jump --nodes 10 --index 3 --keys 5000");
  EXPECT_EQ(jump["removed"], "server-d");
  EXPECT_EQ(jump["after_nodes"].size(), 9u);
  // Keys of buckets 4..9 now index a different server: about 60% beyond the removed 10%.
  EXPECT_GT(jump["moved_between_old"].get<uint64_t>(), 2000u);
  const json ring = PlacementJson("remove --algo ring --nodes 10 --index 3 --keys 5000");
  EXPECT_EQ(ring["moved_between_old"], 0);
  EXPECT_EQ(ring["moved"], ring["before"][3]);
}

TEST(PlacementCliTest, BalanceReportsTheIntervalAndTheMethod) {
  const json ring = PlacementJson("balance --algo ring --nodes 50 --vnodes 100");
  EXPECT_EQ(ring["method"], "arcs");
  EXPECT_LT(ring["ci99_low"].get<double>(), 1.0);
  EXPECT_GT(ring["ci99_high"].get<double>(), 1.0);
  EXPECT_GE(ring["max_over_mean"].get<double>(), ring["p99_over_mean"].get<double>());
  const json jump = PlacementJson("balance --algo jump --nodes 50 --keys 20000");
  EXPECT_EQ(jump["method"], "keys");
  EXPECT_EQ(jump["keys"], 20000);
  const json maglev = PlacementJson("balance --algo maglev --nodes 50");
  EXPECT_EQ(maglev["method"], "table");
  // 65537 entries over 50 nodes: 1310 or 1311 each.
  EXPECT_LT(maglev["max_over_mean"].get<double>(), 1311.0 / (65537.0 / 50) + 1e-9);
}

TEST(PlacementCliTest, MemoryOfTheSortedVectorIsEightBytesPerPoint) {
  const json j = PlacementJson("memory --nodes 20 --vnodes 50");
  bool saw_ring = false;
  bool saw_map = false;
  for (const json& s : j["schemes"]) {
    if (s["label"] == "ring V=50") {
      saw_ring = true;
      EXPECT_EQ(s["bytes"], 20 * 50 * 8);
    }
    if (s["label"] == "ring-map V=50") {
      saw_map = true;
      EXPECT_GE(s["bytes"].get<uint64_t>(), 20u * 50 * 48);
    }
    if (s["algo"] == "jump") {
      EXPECT_EQ(s["bytes"], 0);
    }
  }
  EXPECT_TRUE(saw_ring);
  EXPECT_TRUE(saw_map);
}

TEST(PlacementCliTest, SpeedAndCompareListEveryScheme) {
  const json speed = PlacementJson("speed --nodes 20 --seconds 0.03");
  EXPECT_EQ(speed["schemes"].size(), 12u);  // ring and bounded with 1 and with 100 points
  for (const json& s : speed["schemes"]) EXPECT_GT(s["ns_per_lookup"].get<double>(), 0);
  EXPECT_EQ(speed["key_hashes"].size(), 4u);
  const json cmp =
      PlacementJson("compare --from 3 --to 4 --keys 1000 --balance-keys 2000 --seconds 0.03");
  EXPECT_EQ(cmp["schemes"].size(), 12u);
  for (const json& s : cmp["schemes"]) {
    SCOPED_TRACE(s["label"].get<std::string>());
    EXPECT_DOUBLE_EQ(s["ideal_fraction"].get<double>(), 0.25);
    if (s["algo"] == "modulo") {
      EXPECT_EQ(s["moved"], 756);
    }
    if (s["label"] == "ring V=100") {
      EXPECT_EQ(s["moved"], 237);
    }
    for (const char* monotone : {"ring", "jump", "rendezvous", "redis", "ketama", "kademlia"}) {
      if (s["algo"] == monotone) {
        EXPECT_EQ(s["moved_between_old"], 0);
      }
    }
    EXPECT_GT(s["ns_per_lookup"].get<double>(), 0);
  }
}

TEST(PlacementCliTest, OneNumberCommands) {
  EXPECT_EQ(Placement("crc16 123456789").out, "12739\n");  // 0x31C3
  EXPECT_EQ(Placement("slot foo").out, "12182\n");
  EXPECT_EQ(Placement("slot '{foo}.bar'").out, "12182\n");
  // Jump's first step for key 0: j = floor(1 * 2^31 / ((1 >> 33) + 1)) = 2^31: bucket 0.
  EXPECT_EQ(Placement("jump 0 1").out, "0\n");
  const json j = PlacementJson("crc16 123456789");
  EXPECT_EQ(j["hex"], "0x31C3");
  EXPECT_EQ(PlacementJson("jump 0x10 1000")["key"], 16);
}

TEST(PlacementCliTest, BadInputIsOneSentenceAndExitTwo) {
  for (const char* args : {"move --algo nope --from 3 --to 4", "move --from 3 --to 4",
                           "remove --algo ring --nodes 5 --index 5", "jump twelve 10", "jump 5 0",
                           "balance --algo ring --nodes 100000 --vnodes 1000",
                           "move --algo ring --from 0 --to 4", "frobnicate", ""}) {
    SCOPED_TRACE(args);
    const CliRun run = Placement(args);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_TRUE(run.out.empty());
    EXPECT_EQ(run.err.rfind("chord-placement: ", 0), 0u) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
  EXPECT_NE(Placement("move --algo nope").err.find("ring"), std::string::npos)
      << "the error lists the schemes";
  // Values CLI11 would misread, NaN that passes range checks, flags that do not apply.
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"move --algo ring --keys 1e3", "not a whole number"},
           {"remove --algo ring --nodes 5 --index 1.0", "not a whole number"},
           {"move --algo bounded --epsilon nan", "not a finite number"},
           {"speed --seconds inf", "not a finite number"},
           {"frobnicate --json", "unknown command \"frobnicate\""},
           {"move --algo jump --vnodes 7", "--vnodes applies to"},
           {"balance --algo ring --epsilon 0.5", "--epsilon applies to bounded only"}}) {
    SCOPED_TRACE(args);
    const CliRun run = Placement(args);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_NE(run.err.find(says), std::string::npos) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
}

TEST(PlacementCliTest, SchemesThatCannotHoldTheNodesAreListedAsSkipped) {
  const json j = PlacementJson("memory --nodes 20000 --vnodes 1");
  std::vector<std::string> skipped;
  for (const json& s : j["skipped"]) skipped.push_back(s["label"]);
  EXPECT_EQ(skipped, std::vector<std::string>{"redis"});
  for (const json& s : j["schemes"]) EXPECT_NE(s["algo"], "redis");
  EXPECT_EQ(j["schemes"].size(), 9u);  // ten schemes (V = 1: one ring row each), less redis
}

TEST(PlacementCliTest, BalanceOfExactSchemesNeedsNoKeys) {
  // Exact arcs for both ring forms; --keys is not used (and not hashed) for them.
  for (const char* algo : {"ring", "ring-map", "ketama"}) {
    SCOPED_TRACE(algo);
    const json j = PlacementJson(std::string("balance --nodes 30 --keys 1 --algo ") + algo);
    EXPECT_EQ(j["method"], "arcs");
    EXPECT_FALSE(j.contains("keys"));
  }
}

}  // namespace
