// Multi-process test of chordctl's input limits and exit codes (DESIGN.md section 5): keys up
// to 1 KiB, values up to 1 MiB, exit 2 for bad input with a message on stderr, exit 3 when
// the node cannot be reached; the same contract for ring --svg, check, watch and load (their
// behaviour is tested in chordctl_tools_test.cc).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/cluster_fixture.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

constexpr size_t kMaxKeyBytes = 1024;
constexpr size_t kMaxValueBytes = 1 << 20;

class ChordctlTest : public ClusterTest {};

std::string WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  EXPECT_TRUE(out.good()) << path;
  return path;
}

TEST_F(ChordctlTest, RejectsBadInputAndReportsUnreachableNodes) {
  NodeProcess* node = cluster().StartNode(FastNodes());
  ASSERT_NE(node, nullptr);
  const std::string addr = node->addr();

  // Keys: 1024 bytes is fine, 1025 is a usage error for every command that takes a key.
  const std::string max_key(kMaxKeyBytes, 'k');
  const std::string long_key(kMaxKeyBytes + 1, 'k');
  CommandResult r = cluster().Chordctl({"--node", addr, "put", max_key, "v"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = cluster().Chordctl({"--node", addr, "get", max_key});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "v\n");
  for (const std::string cmd : {"put", "get", "del", "lookup"}) {
    std::vector<std::string> args = {"--node", addr, cmd, long_key};
    if (cmd == "put") args.push_back("v");
    r = cluster().Chordctl(args);
    EXPECT_EQ(r.exit_code, 2) << cmd << " with a 1025-byte key; stderr: " << r.err;
    EXPECT_FALSE(r.err.empty()) << cmd << " with a 1025-byte key printed no reason";
  }

  // Values: exactly 1 MiB is stored; one byte more is a usage error and stores nothing.
  // (Such values do not fit in one argv string, so they come from --value-file.)
  std::string max_value(kMaxValueBytes, 'x');
  for (size_t i = 0; i < max_value.size(); i += 4096)
    max_value[i] = static_cast<char>('a' + i % 26);
  const std::string max_file = WriteFile(cluster().dir() + "/max-value", max_value);
  const std::string big_file = WriteFile(cluster().dir() + "/big-value", max_value + "y");
  r = cluster().Chordctl({"--node", addr, "put", "big", "--value-file", big_file});
  EXPECT_EQ(r.exit_code, 2) << "put of a 1 MiB + 1 byte value; stderr: " << r.err;
  EXPECT_FALSE(r.err.empty()) << "put of a 1 MiB + 1 byte value printed no reason";
  r = cluster().Chordctl({"--node", addr, "get", "big"});
  EXPECT_EQ(r.exit_code, 1) << "the oversized value was stored: " << r.err;
  r = cluster().Chordctl({"--node", addr, "put", "max", "--value-file", max_file});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ChordClient client(addr);
  auto got = client.Get("max");
  EXPECT_TRUE(IsOk(got)) << Describe(got);
  if (IsOk(got)) {
    EXPECT_TRUE(got->value() == max_value) << "the 1 MiB value came back different";
  }

  // The node enforces the same limits on its own (a client other than chordctl).
  auto put = client.Put(long_key, "v");
  EXPECT_FALSE(IsOk(put)) << "the node accepted a 1025-byte key";
  put = client.Put("big", max_value + "y");
  EXPECT_FALSE(IsOk(put)) << "the node accepted a 1 MiB + 1 byte value";
  got = client.Get("big");
  EXPECT_TRUE(IsNotFound(got)) << Describe(got);

  // Usage errors.
  r = cluster().Chordctl({"--node", addr, "frobnicate"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  r = cluster().Chordctl({"--node", addr, "get"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;

  // Unreachable: nothing listens on a port that was just free.
  const std::string nowhere = LocalAddr(PickFreePort());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"get", "k"}, std::vector<std::string>{"put", "k", "v"},
        std::vector<std::string>{"status", "--json"}, std::vector<std::string>{"ring", "--json"}}) {
    std::vector<std::string> full = {"--node", nowhere};
    full.insert(full.end(), args.begin(), args.end());
    r = cluster().Chordctl(full);
    EXPECT_EQ(r.exit_code, 3) << args[0] << " against " << nowhere << "; stderr: " << r.err;
    EXPECT_FALSE(r.err.empty()) << args[0] << " against " << nowhere << " printed no reason";
  }
  EXPECT_TRUE(node->IsRunning());
}

TEST_F(ChordctlTest, RingToolsFollowTheExitCodeContract) {
  NodeProcess* node = cluster().StartNode(FastNodes());
  ASSERT_NE(node, nullptr);
  const std::string addr = node->addr();
  const std::string input = WriteFile(cluster().dir() + "/one.tsv", "k\tv\n");

  // Usage errors: exit 2 with a reason on stderr.
  for (const std::vector<std::string>& args : {
           std::vector<std::string>{"load"},
           std::vector<std::string>{"load", cluster().dir() + "/missing.tsv"},
           std::vector<std::string>{"load", input, "--parallel", "0"},
           std::vector<std::string>{"watch", "--interval-ms", "0"},
           std::vector<std::string>{"watch", "--count", "-1"},
           std::vector<std::string>{"ring", "--svg", cluster().dir() + "/x.svg", "--json"},
           std::vector<std::string>{"ring", "--svg", cluster().dir() + "/no-such-dir/x.svg"},
           std::vector<std::string>{"check", "extra"},
       }) {
    std::vector<std::string> full = {"--node", addr};
    full.insert(full.end(), args.begin(), args.end());
    const CommandResult r = cluster().Chordctl(full);
    std::string shown;
    for (const std::string& a : args) shown += " " + a;
    EXPECT_EQ(r.exit_code, 2) << "chordctl" << shown << "; stdout " << r.out << "; stderr "
                              << r.err;
    EXPECT_FALSE(r.err.empty()) << "chordctl" << shown << " printed no reason";
  }

  // The happy paths exit 0.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"check"}, std::vector<std::string>{"ring"},
        std::vector<std::string>{"load", input},
        std::vector<std::string>{"watch", "--count", "1", "--interval-ms", "50"}}) {
    std::vector<std::string> full = {"--node", addr};
    full.insert(full.end(), args.begin(), args.end());
    const CommandResult r = cluster().Chordctl(full);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.out << r.err;
  }

  // Unreachable --node: exit 3 with a reason, nothing on stdout.
  const std::string nowhere = LocalAddr(PickFreePort());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"check"}, std::vector<std::string>{"ring"},
        std::vector<std::string>{"ring", "--svg", cluster().dir() + "/nowhere.svg"},
        std::vector<std::string>{"watch", "--count", "1"}, std::vector<std::string>{"load", input},
        std::vector<std::string>{"dump"}}) {
    std::vector<std::string> full = {"--node", nowhere};
    full.insert(full.end(), args.begin(), args.end());
    const CommandResult r = cluster().Chordctl(full);
    EXPECT_EQ(r.exit_code, 3) << args[0] << " against " << nowhere << "; stderr: " << r.err;
    EXPECT_FALSE(r.err.empty()) << args[0] << " against " << nowhere << " printed no reason";
    EXPECT_EQ(r.out, "") << args[0] << " against " << nowhere;
  }
  EXPECT_FALSE(std::ifstream(cluster().dir() + "/nowhere.svg").good())
      << "ring --svg wrote a file although the ring could not be reached";
}

TEST_F(ChordctlTest, GetJsonGivesAValueThatIsNotTextAsBase64) {
  NodeProcess* node = cluster().StartNode(FastNodes());
  ASSERT_NE(node, nullptr);
  const std::string addr = node->addr();
  ChordClient client(addr);
  ASSERT_TRUE(IsOk(client.Put("bytes", std::string("\xff\xfe\x00\x61", 4))));
  ASSERT_TRUE(IsOk(client.Put("text", "h\xc3\xa9llo")));  // "héllo"
  CommandResult r = cluster().Chordctl({"--node", addr, "get", "bytes", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.out;
  EXPECT_FALSE(doc.contains("value")) << r.out;
  EXPECT_EQ(doc.value("value_base64", ""), "//4AYQ==") << r.out;  // base64 of ff fe 00 61
  r = cluster().Chordctl({"--node", addr, "get", "text", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.out;
  EXPECT_EQ(doc.value("value", ""), "h\xc3\xa9llo") << r.out;
  EXPECT_FALSE(doc.contains("value_base64")) << r.out;
}

}  // namespace
}  // namespace chord::testing
