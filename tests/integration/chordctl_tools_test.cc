// Multi-process tests of chordctl's ring tools (issue 5): the `ring` table and `check` verdict
// before and after a SIGKILL, `ring --svg` (checked as XML by a small well-formedness checker
// written here), `load`/`dump` round trips byte for byte (TSV with every escaped byte, stdin,
// JSON lines, malformed lines with their numbers), and `watch` to a pipe and under signals.
// Expected key placement is computed here from SHA-1 of the addresses and keys.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "protocol/limits.h"
#include "tests/integration/cluster_fixture.h"
#include "tools/client/chord_client.h"

namespace chord::testing {
namespace {

constexpr milliseconds kSettleTimeout(45000);
constexpr milliseconds kCommandTimeout(60000);
constexpr size_t kMaxKeyBytes = 1024;
constexpr size_t kMaxValueBytes = 1 << 20;

class ChordctlToolsTest : public ClusterTest {};

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteWholeFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  ASSERT_TRUE(out.good()) << "could not write " << path;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  std::string w;
  while (in >> w) words.push_back(w);
  return words;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// --- the ring table -------------------------------------------------------------------------

// One row of `chordctl ring`: STATE ADDRESS ID KEYS REPLICA-KEYS SHARE.
struct RingRow {
  std::string state;
  std::string keys;  // "-" for a Down row
};

// The rows of the table, by address; nullopt with *why when the header is missing.
std::optional<std::map<std::string, RingRow>> ParseRingTable(const std::string& out,
                                                             std::string* why) {
  const std::vector<std::string> lines = Lines(out);
  if (lines.empty() || Words(lines[0]) != std::vector<std::string>{"STATE", "ADDRESS", "ID", "KEYS",
                                                                   "REPLICA", "KEYS", "SHARE"}) {
    *why = "no STATE ADDRESS ID KEYS REPLICA KEYS SHARE header in: " + out;
    return std::nullopt;
  }
  std::map<std::string, RingRow> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> w = Words(lines[i]);
    static const std::set<std::string> kStates = {"Up", "Joining", "Leaving", "Down"};
    if (w.size() != 6 || kStates.count(w[0]) == 0) continue;
    rows[w[1]] = RingRow{w[0], w[3]};
  }
  return rows;
}

// Primary key counts per address, computed here: each key's owner on the ring of `addrs`.
std::map<std::string, uint64_t> ExpectedPrimaryCounts(const std::vector<std::string>& addrs,
                                                      const std::set<std::string>& keys) {
  const std::vector<Member> ring = SortedRing(addrs);
  std::map<std::string, uint64_t> counts;
  for (const std::string& addr : addrs) counts[addr] = 0;
  for (const std::string& key : keys) ++counts[OwnerOf(Sha1Hex(key), ring).addr];
  return counts;
}

// Whether `chordctl ring` via `via` shows exactly `addrs`, all Up, with the primary key counts
// computed here, a totals line and [OK]. Explains a "no" in *why.
bool RingTableMatches(const Cluster& cluster, const std::string& via,
                      const std::vector<std::string>& addrs, const std::set<std::string>& keys,
                      std::string* why) {
  const CommandResult r = cluster.Chordctl({"--node", via, "ring"});
  if (r.exit_code != 0) {
    *why = "ring exited " + std::to_string(r.exit_code) + ": " + r.err;
    return false;
  }
  auto rows = ParseRingTable(r.out, why);
  if (!rows) return false;
  const std::map<std::string, uint64_t> expected = ExpectedPrimaryCounts(addrs, keys);
  if (rows->size() != addrs.size()) {
    *why = "ring shows " + std::to_string(rows->size()) + " rows, expected " +
           std::to_string(addrs.size()) + ":\n" + r.out;
    return false;
  }
  uint64_t sum = 0;
  for (const auto& [addr, count] : expected) {
    auto it = rows->find(addr);
    if (it == rows->end() || it->second.state != "Up" || it->second.keys != std::to_string(count)) {
      *why = "expected " + addr + " Up with " + std::to_string(count) + " keys:\n" + r.out;
      return false;
    }
    sum += count;
  }
  if (sum != keys.size()) {
    *why = "expected counts add up to " + std::to_string(sum);
    return false;
  }
  const std::string totals = "total: " + std::to_string(addrs.size()) + " nodes (" +
                             std::to_string(addrs.size()) + " up), " + std::to_string(keys.size()) +
                             " keys, ";
  const std::string ok = "[OK] all " + std::to_string(addrs.size()) +
                         " nodes agree: every successor and predecessor pointer matches the "
                         "ring order\n";
  if (!Contains(r.out, "\n" + totals) || r.out.size() < ok.size() ||
      r.out.compare(r.out.size() - ok.size(), ok.size(), ok) != 0 || Contains(r.out, "[ERR]")) {
    *why = "expected a line starting \"" + totals + "\" and the last line " + ok + " in:\n" + r.out;
    return false;
  }
  return true;
}

TEST_F(ChordctlToolsTest, RingTableAndCheckSeeACrashUntilTheRingHeals) {
  // Slow stabilization: after the SIGKILL the survivors keep pointing at the dead node for a
  // few seconds (about two rounds), long enough for `check` and `ring` to see it.
  NodeOptions options = FastNodes();
  options.stabilize_ms = 2000;
  ASSERT_TRUE(cluster().StartNodes(4, options));
  std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs, kSettleTimeout));

  const std::map<std::string, std::string> records = MakeKeys("ringtable", 120);
  PutAll(addrs.front(), records);
  const std::set<std::string> keys = KeySet(records);
  std::string why;
  EXPECT_TRUE(
      PollUntil([&] { return RingTableMatches(cluster(), addrs.front(), addrs, keys, &why); },
                kSettleTimeout))
      << why;

  CommandResult check = cluster().Chordctl({"--node", addrs.front(), "check"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(check.out,
            "[OK] all 4 nodes agree: every successor and predecessor pointer matches the ring "
            "order\n");

  // SIGKILL a node other than the one asked; look at once.
  const std::vector<Member> ring = SortedRing(addrs);
  const std::string victim = ring[2].addr;
  const std::string via = victim == addrs.front() ? addrs.back() : addrs.front();
  NodeProcess* victim_process = cluster().FindByAddr(victim);
  ASSERT_NE(victim_process, nullptr);
  victim_process->Kill();

  check = cluster().Chordctl({"--node", via, "check"});
  const CommandResult ring_after = cluster().Chordctl({"--node", via, "ring"});
  EXPECT_EQ(ring_after.exit_code, 0) << ring_after.err;
  auto rows = ParseRingTable(ring_after.out, &why);
  ASSERT_TRUE(rows.has_value()) << why;
  const bool shows_down = rows->count(victim) > 0 && rows->at(victim).state == "Down";
  EXPECT_TRUE(shows_down || Contains(ring_after.out, "[ERR]"))
      << "right after the SIGKILL of " << victim << ", ring shows neither Down nor [ERR]:\n"
      << ring_after.out;
  EXPECT_FALSE(Contains(ring_after.out, "[OK]")) << ring_after.out;
  EXPECT_EQ(check.exit_code, 1) << "check right after the SIGKILL of " << victim << ":\n"
                                << check.out << check.err;
  EXPECT_FALSE(Contains(check.out, "[OK]")) << check.out;
  for (const std::string& line : Lines(check.out)) {
    EXPECT_EQ(line.rfind("[ERR] ", 0), 0u)
        << "check printed a line that is not a verdict: " << line;
  }
  EXPECT_TRUE(Contains(check.out, victim)) << "no [ERR] line names " << victim << ":\n"
                                           << check.out;

  // Once healed: [OK] again, three Up rows whose counts follow the new owners.
  addrs.erase(std::find(addrs.begin(), addrs.end(), victim));
  EXPECT_TRUE(PollUntil(
      [&] {
        check = cluster().Chordctl({"--node", via, "check"});
        return check.exit_code == 0;
      },
      kSettleTimeout, milliseconds(250)))
      << "check never went back to exit 0; last output:\n"
      << check.out << check.err;
  EXPECT_EQ(check.out,
            "[OK] all 3 nodes agree: every successor and predecessor pointer matches the ring "
            "order\n");
  EXPECT_TRUE(PollUntil([&] { return RingTableMatches(cluster(), via, addrs, keys, &why); },
                        kSettleTimeout, milliseconds(250)))
      << why;

  // Exit 3 when --node itself does not answer.
  const CommandResult nowhere = cluster().Chordctl({"--node", victim, "check"});
  EXPECT_EQ(nowhere.exit_code, 3) << nowhere.out << nowhere.err;
  EXPECT_FALSE(nowhere.err.empty());
}

// --- ring --svg ---------------------------------------------------------------------------

// A minimal XML well-formedness check: one root element, balanced and properly nested tags,
// quoted and unique attributes, no raw '<' or stray '&' in text or attribute values (only the
// five predefined entities and character references), no control characters, comments and
// processing instructions closed. Returns the root element's name, or nullopt with *why.
class XmlChecker {
 public:
  explicit XmlChecker(const std::string& doc) : doc_(doc) {}

  std::optional<std::string> Check(std::string* why) {
    for (unsigned char c : doc_) {
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return Fail(why, "a control character");
    }
    std::vector<std::string> open;
    std::string root;
    bool root_closed = false;
    size_t pos = 0;
    while (pos < doc_.size()) {
      const size_t lt = doc_.find('<', pos);
      const std::string text =
          doc_.substr(pos, lt == std::string::npos ? std::string::npos : lt - pos);
      if (!TextOk(text)) return Fail(why, "bad character data \"" + text.substr(0, 80) + "\"");
      if (open.empty() && text.find_first_not_of(" \t\r\n") != std::string::npos) {
        return Fail(why, "text outside the root element");
      }
      if (lt == std::string::npos) break;
      pos = lt;
      if (doc_.compare(pos, 4, "<!--") == 0) {
        const size_t end = doc_.find("-->", pos + 4);
        if (end == std::string::npos) return Fail(why, "an unclosed comment");
        pos = end + 3;
        continue;
      }
      if (doc_.compare(pos, 2, "<?") == 0) {
        const size_t end = doc_.find("?>", pos + 2);
        if (end == std::string::npos) return Fail(why, "an unclosed processing instruction");
        pos = end + 2;
        continue;
      }
      if (doc_.compare(pos, 2, "</") == 0) {
        pos += 2;
        const std::string name = Name(&pos);
        SkipSpace(&pos);
        if (name.empty() || pos >= doc_.size() || doc_[pos] != '>') {
          return Fail(why, "a malformed end tag");
        }
        ++pos;
        if (open.empty() || open.back() != name) {
          return Fail(why,
                      "</" + name + "> does not close <" + (open.empty() ? "" : open.back()) + ">");
        }
        open.pop_back();
        if (open.empty()) root_closed = true;
        continue;
      }
      ++pos;
      const std::string name = Name(&pos);
      if (name.empty()) return Fail(why, "a '<' that starts no tag");
      if (root_closed || (open.empty() && !root.empty())) return Fail(why, "a second root element");
      if (root.empty()) root = name;
      std::set<std::string> attributes;
      bool self_closing = false;
      while (true) {
        const size_t before = pos;
        SkipSpace(&pos);
        if (pos >= doc_.size()) return Fail(why, "an unclosed <" + name + ">");
        if (doc_[pos] == '>') {
          ++pos;
          break;
        }
        if (doc_.compare(pos, 2, "/>") == 0) {
          pos += 2;
          self_closing = true;
          break;
        }
        if (pos == before) return Fail(why, "no space before an attribute of <" + name + ">");
        const std::string attr = Name(&pos);
        if (attr.empty() || pos >= doc_.size() || doc_[pos] != '=') {
          return Fail(why, "a malformed attribute in <" + name + ">");
        }
        ++pos;
        if (pos >= doc_.size() || (doc_[pos] != '"' && doc_[pos] != '\'')) {
          return Fail(why, "an unquoted attribute " + attr + " in <" + name + ">");
        }
        const char quote = doc_[pos++];
        const size_t end = doc_.find(quote, pos);
        if (end == std::string::npos) return Fail(why, "an unclosed attribute value");
        const std::string value = doc_.substr(pos, end - pos);
        if (value.find('<') != std::string::npos || !TextOk(value)) {
          return Fail(why, "a bad value of " + attr + " in <" + name + ">: " + value.substr(0, 80));
        }
        if (!attributes.insert(attr).second) return Fail(why, "a repeated attribute " + attr);
        pos = end + 1;
      }
      if (self_closing) {
        if (open.empty()) root_closed = true;
      } else {
        open.push_back(name);
      }
    }
    if (root.empty()) return Fail(why, "no root element");
    if (!open.empty()) return Fail(why, "<" + open.back() + "> is never closed");
    return root;
  }

 private:
  static std::optional<std::string> Fail(std::string* why, const std::string& what) {
    *why = "not well-formed XML: " + what;
    return std::nullopt;
  }

  // Character data: no '>'-free requirement, but every '&' starts an entity we know.
  static bool TextOk(const std::string& text) {
    if (text.find('<') != std::string::npos) return false;
    for (size_t i = text.find('&'); i != std::string::npos; i = text.find('&', i + 1)) {
      const size_t semi = text.find(';', i);
      if (semi == std::string::npos) return false;
      const std::string entity = text.substr(i + 1, semi - i - 1);
      static const std::set<std::string> kNamed = {"amp", "lt", "gt", "quot", "apos"};
      if (kNamed.count(entity) > 0) continue;
      const bool hex = entity.size() > 2 && entity[0] == '#' && entity[1] == 'x' &&
                       entity.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos;
      const bool dec = entity.size() > 1 && entity[0] == '#' &&
                       entity.find_first_not_of("0123456789", 1) == std::string::npos;
      if (!hex && !dec) return false;
    }
    return true;
  }

  std::string Name(size_t* pos) const {
    const size_t start = *pos;
    while (*pos < doc_.size()) {
      const char c = doc_[*pos];
      const bool first = *pos == start;
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
          (!first && (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.'))) {
        ++*pos;
      } else {
        break;
      }
    }
    return doc_.substr(start, *pos - start);
  }

  void SkipSpace(size_t* pos) const {
    while (*pos < doc_.size() && std::isspace(static_cast<unsigned char>(doc_[*pos]))) ++*pos;
  }

  const std::string& doc_;
};

TEST_F(ChordctlToolsTest, RingSvgIsWellFormedSelfContainedAndNamesEveryNode) {
  // The checker itself: it must reject what it is there to catch.
  for (const std::string bad : {"<a><b></a></b>", "<a x=1/>", "<a>1 < 2</a>", "<a>R&D</a>",
                                "<a/><b/>", "<a x=\"1\" x=\"2\"/>", "<a>", "text<a/>"}) {
    std::string why;
    EXPECT_FALSE(XmlChecker(bad).Check(&why).has_value()) << "the checker accepted " << bad;
  }
  std::string why;
  EXPECT_EQ(XmlChecker("<?xml version=\"1.0\"?>\n<a x='&lt;&#38;'><!-- c --><b/>t&amp;</a>\n")
                .Check(&why)
                .value_or(""),
            "a")
      << why;

  ASSERT_TRUE(cluster().StartNodes(3, FastNodes()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs, kSettleTimeout));
  const std::map<std::string, std::string> records = MakeKeys("svg", 60);
  PutAll(addrs.front(), records);
  EXPECT_TRUE(PollUntil(
      [&] { return RingTableMatches(cluster(), addrs.front(), addrs, KeySet(records), &why); },
      kSettleTimeout))
      << why;

  const std::string path = cluster().dir() + "/ring.svg";
  const CommandResult r = cluster().Chordctl({"--node", addrs.front(), "ring", "--svg", path});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "wrote " + path + ": 3 nodes, 60 keys\n");
  const std::string svg = ReadWholeFile(path);
  ASSERT_FALSE(svg.empty());

  const std::optional<std::string> root = XmlChecker(svg).Check(&why);
  ASSERT_TRUE(root.has_value()) << why << "\n" << svg.substr(0, 2000);
  EXPECT_EQ(*root, "svg");
  EXPECT_TRUE(Contains(svg, "xmlns=\"http://www.w3.org/2000/svg\"")) << svg.substr(0, 300);
  EXPECT_TRUE(Contains(svg, "<circle")) << "no <circle> for the ring";
  EXPECT_TRUE(Contains(svg, "<path")) << "no arc <path> for the owned ranges";
  for (const std::string& addr : addrs) {
    EXPECT_TRUE(Contains(svg, ">" + addr)) << "the SVG has no label for " << addr;
  }
  const std::map<std::string, uint64_t> counts = ExpectedPrimaryCounts(addrs, KeySet(records));
  for (const auto& [addr, count] : counts) {
    EXPECT_TRUE(Contains(svg, ">" + std::to_string(count) + (count == 1 ? " key<" : " keys<")))
        << "no label with " << addr << "'s " << count << " keys";
  }
  EXPECT_TRUE(Contains(svg, "60 keys")) << "the title does not give the total";
  EXPECT_TRUE(Contains(svg, "[OK] all 3 nodes agree")) << "the title does not give the verdict";
  // Self-contained: nothing is fetched from elsewhere.
  for (const std::string external :
       {"href", "url(", "@import", "<script", "<image", "<foreignObject", "https://"}) {
    EXPECT_FALSE(Contains(svg, external)) << "the SVG refers to something outside: " << external;
  }
  size_t http = 0;
  for (size_t i = svg.find("http://"); i != std::string::npos; i = svg.find("http://", i + 1)) {
    ++http;
  }
  EXPECT_EQ(http, 1u) << "only the SVG namespace may be a URL";

  // Where xmllint is installed, it must agree.
  if (::access("/usr/bin/xmllint", X_OK) == 0) {
    const CommandResult lint =
        RunCommand({"/usr/bin/xmllint", "--noout", path}, cluster().dir(), kCommandTimeout);
    EXPECT_EQ(lint.exit_code, 0) << lint.err;
  }

  // "-" writes the SVG to stdout and the summary to stderr.
  const CommandResult to_stdout =
      cluster().Chordctl({"--node", addrs.front(), "ring", "--svg", "-"});
  EXPECT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_TRUE(XmlChecker(to_stdout.out).Check(&why).has_value()) << why;
  EXPECT_EQ(to_stdout.err, "wrote -: 3 nodes, 60 keys\n");
}

// --- load and dump --------------------------------------------------------------------------

// The TSV escaping dump documents (tab, newline, carriage return, backslash), written here.
std::string Escape(const std::string& field) {
  std::string out;
  for (char c : field) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out;
}

// key -> value with every awkward byte: tabs, newlines, CRs, backslashes, NULs, high bytes,
// empty values, a key that starts with '{', long values.
std::map<std::string, std::string> AwkwardRecords(int count) {
  std::mt19937 rng(20240501);
  std::map<std::string, std::string> records;
  for (int i = 0; i < count; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "load-%05d", i);
    std::string key = name;
    if (i % 7 == 0) key += "\ttab";
    if (i % 11 == 0) key += "\\back\\slash\\";
    if (i % 13 == 0) key += std::string("\n\r\0\xff", 4);
    if (i % 101 == 0) key = "{\"key\": \"" + key + "\"}";
    std::string value;
    switch (i % 6) {
      case 0:
        value = "";
        break;
      case 1:
        value = "plain value " + std::to_string(i);
        break;
      case 2:
        value = "tab\there\nnewline\r\ncrlf \\ backslash \\t not-an-escape \\\\";
        break;
      case 3:
        for (int b = 0; b < 256; ++b) value += static_cast<char>(b);
        break;
      case 4: {
        const size_t len = 1 + rng() % 300;
        for (size_t b = 0; b < len; ++b) value += static_cast<char>(rng() % 256);
        break;
      }
      default:
        value = std::string(static_cast<size_t>(4000 + i % 500), static_cast<char>('a' + i % 26));
    }
    records[key] = value;
  }
  return records;
}

// The TSV dump prints for `records`: sorted by key bytes, escaped.
std::string ExpectedDump(const std::map<std::string, std::string>& records) {
  std::string out;
  for (const auto& [key, value] : records) out += Escape(key) + "\t" + Escape(value) + "\n";
  return out;
}

// Where two byte strings first differ, for a failure message.
std::string FirstDifference(const std::string& got, const std::string& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  const size_t from = i < 60 ? 0 : i - 60;
  return "sizes " + std::to_string(got.size()) + " and " + std::to_string(want.size()) +
         ", first difference at byte " + std::to_string(i) + ": got \"" +
         Escape(got.substr(from, 120)) + "\" want \"" + Escape(want.substr(from, 120)) + "\"";
}

TEST_F(ChordctlToolsTest, LoadAndDumpRoundTripByteForByte) {
  ASSERT_TRUE(cluster().StartNodes(3, FastNodes()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs, kSettleTimeout));
  const std::string via = addrs.front();

  // 3200 records, in shuffled order, with blank lines (skipped) and a CRLF line ending.
  const std::map<std::string, std::string> records = AwkwardRecords(3200);
  ASSERT_EQ(records.size(), 3200u);
  std::vector<std::string> lines;
  for (const auto& [key, value] : records) lines.push_back(Escape(key) + "\t" + Escape(value));
  std::shuffle(lines.begin(), lines.end(), std::mt19937(7));
  std::string input;
  for (size_t i = 0; i < lines.size(); ++i) {
    input += lines[i] + (i == 5 ? "\r\n" : "\n");
    if (i % 500 == 0) input += "\n";
  }
  const std::string tsv_path = cluster().dir() + "/records.tsv";
  WriteWholeFile(tsv_path, input);

  CommandResult r = cluster().Chordctl({"--node", via, "load", tsv_path}, kCommandTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 4000);
  EXPECT_EQ(r.err.rfind("loaded 3200 records in ", 0), 0u) << r.err.substr(0, 2000);
  EXPECT_TRUE(Contains(r.err, " records/s)")) << r.err;
  EXPECT_EQ(r.out, "");

  const std::string want = ExpectedDump(records);
  std::string dumped;
  EXPECT_TRUE(PollUntil(
      [&] {
        r = cluster().Chordctl({"--node", via, "dump"}, kCommandTimeout);
        dumped = r.out;
        return r.exit_code == 0 && dumped == want;
      },
      kSettleTimeout, milliseconds(500)))
      << "dump differs from the sorted input: " << FirstDifference(dumped, want) << "; stderr "
      << r.err;
  EXPECT_EQ(r.err, "") << "dump printed on stderr although it is not a terminal";

  // dump | load - : the dump read back from stdin stores the same records.
  const std::string dump_path = cluster().dir() + "/dump.tsv";
  WriteWholeFile(dump_path, dumped);
  r = cluster().Chordctl({"--node", addrs.back(), "load", "-", "--parallel", "2"}, kCommandTimeout,
                         dump_path);
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  EXPECT_EQ(r.err.rfind("loaded 3200 records in ", 0), 0u) << r.err.substr(0, 2000);
  r = cluster().Chordctl({"--node", via, "dump"}, kCommandTimeout);
  EXPECT_TRUE(r.out == want) << FirstDifference(r.out, want);

  // JSON lines, mixed with a TSV line; values with quotes, unicode and escapes.
  std::map<std::string, std::string> json_records;
  std::string json_input;
  for (int i = 0; i < 40; ++i) {
    const std::string key = "json-" + std::to_string(i) + (i % 3 == 0 ? " \"quoted\"" : "");
    const std::string value = "line one\nline \"two\"\t\\ caf\xc3\xa9 " + std::to_string(i);
    json_records[key] = value;
    json_input += nlohmann::json{{"key", key}, {"value", value}}.dump() + "\n";
    if (i == 20) {
      json_records["json-tsv"] = "mixed in";
      json_input += "json-tsv\tmixed in\n";
    }
  }
  json_input += "{\"value\": \"v\", \"key\": \"json-reordered\", \"extra\": 1}\n";
  json_records["json-reordered"] = "v";
  const std::string json_path = cluster().dir() + "/records.jsonl";
  WriteWholeFile(json_path, json_input);
  r = cluster().Chordctl({"--node", via, "load", json_path}, kCommandTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.rfind("loaded " + std::to_string(json_records.size()) + " records in ", 0), 0u)
      << r.err;
  ChordClient client(addrs[1]);
  for (const auto& [key, value] : json_records) {
    auto got = client.Get(key);
    EXPECT_TRUE(IsOk(got) && got->value() == value) << key << ": " << Describe(got);
  }

  // Malformed lines: reported by number and skipped, the rest stored, exit 2.
  const std::string exact_value(kMaxValueBytes, 'v');
  const std::string bad_input =
      "good-1\tone\n"          // 1
      "no tab on this line\n"  // 2
      "good-2\ttwo\n"          // 3
      + std::string(kMaxKeyBytes + 1, 'k') +
      "\tv\n"                             // 4
      "{\"key\": 5, \"value\": \"x\"}\n"  // 5
      "bad\\qescape\tv\n"                 // 6
      "\n"                                // 7
      "three\ttabs\there\n"               // 8
      "good-max\t" +
      exact_value +
      "\n"  // 9
      "too-big\t" +
      exact_value +
      "x\n"               // 10
      "\tempty key\n"     // 11
      "good-3\tthree\n";  // 12
  const std::string bad_path = cluster().dir() + "/bad.tsv";
  WriteWholeFile(bad_path, bad_input);
  r = cluster().Chordctl({"--node", via, "load", bad_path}, kCommandTimeout);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  for (int line : {2, 4, 5, 6, 8, 10, 11}) {
    EXPECT_TRUE(Contains(r.err, "chordctl: line " + std::to_string(line) + ": "))
        << "no error for line " << line << " in:\n"
        << r.err;
  }
  for (int line : {1, 3, 7, 9, 12}) {
    EXPECT_FALSE(Contains(r.err, "line " + std::to_string(line) + ": ")) << r.err;
  }
  EXPECT_TRUE(Contains(r.err, "line 2: expected key<TAB>value")) << r.err;
  EXPECT_TRUE(Contains(r.err, "loaded 4 records in ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "skipped 7 malformed lines")) << r.err;
  for (const auto& [key, value] : std::map<std::string, std::string>{
           {"good-1", "one"}, {"good-2", "two"}, {"good-3", "three"}, {"good-max", exact_value}}) {
    auto got = client.Get(key);
    EXPECT_TRUE(IsOk(got) && got->value() == value) << key << ": " << Describe(got);
  }
  EXPECT_TRUE(IsNotFound(client.Get("too-big")));

  // Unreachable node: exit 3 before reading anything; unreadable file: exit 2.
  const std::string nowhere = LocalAddr(PickFreePort());
  r = cluster().Chordctl({"--node", nowhere, "load", tsv_path});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_FALSE(r.err.empty());
  r = cluster().Chordctl({"--node", via, "load", cluster().dir() + "/no-such-file"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, "no-such-file")) << r.err;
}

// A key with a time to live keeps it through dump | load: dump writes when it expires, load
// puts it with the time it has left, so it expires when it would have; a key already past its
// expiry is neither dumped nor loaded.
TEST_F(ChordctlToolsTest, DumpAndLoadKeepTimesToLive) {
  ASSERT_TRUE(cluster().StartNodes(3, FastNodes()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs, kSettleTimeout));
  const std::string via = addrs.front();
  ChordClient client(via);
  DataOptions hour;
  hour.ttl_ms = 3600 * 1000;
  DataOptions short_ttl;
  short_ttl.ttl_ms = 1000;
  ASSERT_TRUE(IsOk(client.Put("plain", "p")));
  ASSERT_TRUE(IsOk(client.Put("ttl\tlong", "l\nl", hour)));
  ASSERT_TRUE(IsOk(client.Put("ttl-short", "s", short_ttl)));
  auto long_read = client.Get("ttl\tlong");
  ASSERT_TRUE(IsOk(long_read)) << Describe(long_read);
  const uint64_t expires = long_read->expires_unix_ms();
  ASSERT_GT(expires, 0u);
  // Past ttl-short's expiry (it may or may not have been swept yet): dump leaves it out.
  ASSERT_TRUE(PollUntil([&] { return IsNotFound(client.Get("ttl-short")); }, kSettleTimeout,
                        milliseconds(100)));
  const std::string want =
      "plain\tp\n"
      "ttl\\tlong\tl\\nl\t" +
      std::to_string(expires) + "\n";
  CommandResult r;
  EXPECT_TRUE(PollUntil(
      [&] {
        r = cluster().Chordctl({"--node", via, "dump"}, kCommandTimeout);
        return r.exit_code == 0 && r.out == want;
      },
      kSettleTimeout, milliseconds(300)))
      << FirstDifference(r.out, want) << "; stderr " << r.err;

  // Erase both, then load the dump, a line whose expiry has passed and one whose expiry lies
  // further ahead than a time to live may reach (put with the longest one instead).
  ASSERT_TRUE(IsOk(client.Delete("plain")));
  ASSERT_TRUE(IsOk(client.Delete("ttl\tlong")));
  const std::string path = cluster().dir() + "/ttl.tsv";
  WriteWholeFile(path, r.out +
                           "gone\tg\t1500000000000\n"  // 2017
                           "far\tf\t1000000000000000\n");
  const uint64_t load_start_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  r = cluster().Chordctl({"--node", addrs.back(), "load", path}, kCommandTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.rfind("loaded 3 records in ", 0), 0u) << r.err;
  EXPECT_TRUE(Contains(r.err, "; 1 record had expired already and was not put")) << r.err;
  auto plain = client.Get("plain");
  EXPECT_TRUE(IsOk(plain) && plain->value() == "p" && plain->expires_unix_ms() == 0)
      << Describe(plain);
  auto reloaded = client.Get("ttl\tlong");
  ASSERT_TRUE(IsOk(reloaded)) << Describe(reloaded);
  EXPECT_EQ(reloaded->value(), "l\nl");
  // The time left was measured by load and the expiry set by the node, on the same clock: the
  // same moment, later only by the time between the two.
  EXPECT_GE(reloaded->expires_unix_ms(), expires);
  EXPECT_LE(reloaded->expires_unix_ms(), expires + 10'000);
  EXPECT_TRUE(IsNotFound(client.Get("gone")));
  auto far = client.Get("far");
  ASSERT_TRUE(IsOk(far)) << Describe(far);
  EXPECT_GE(far->expires_unix_ms(), load_start_ms + kMaxTtlMs);
  EXPECT_LE(far->expires_unix_ms(), load_start_ms + kMaxTtlMs + 60'000);
}

// --- watch ----------------------------------------------------------------------------------

// A chordctl run in the background (for signals), its output in files. Killed and reaped by
// PID when still running at destruction.
class BackgroundChordctl {
 public:
  BackgroundChordctl(const std::vector<std::string>& args, const std::string& dir,
                     const std::string& name)
      : out_path_(dir + "/" + name + ".out"), err_path_(dir + "/" + name + ".err") {
    std::vector<std::string> argv = {CHORDCTL_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      const int in = ::open("/dev/null", O_RDONLY);
      const int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0 || err < 0) ::_exit(126);
      ::dup2(in, STDIN_FILENO);
      ::dup2(out, STDOUT_FILENO);
      ::dup2(err, STDERR_FILENO);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
  }
  ~BackgroundChordctl() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  BackgroundChordctl(const BackgroundChordctl&) = delete;
  BackgroundChordctl& operator=(const BackgroundChordctl&) = delete;

  bool started() const { return pid_ > 0; }
  std::string out() const { return ReadWholeFile(out_path_); }
  std::string err() const { return ReadWholeFile(err_path_); }
  bool Signal(int sig) { return pid_ > 0 && !status_ && ::kill(pid_, sig) == 0; }
  // The wait status once it exits within `timeout`; nullopt if it is still running.
  std::optional<int> WaitExit(milliseconds timeout) {
    if (status_) return status_;
    int status = 0;
    if (PollUntil([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, timeout,
                  milliseconds(10))) {
      status_ = status;
    }
    return status_;
  }

 private:
  std::string out_path_;
  std::string err_path_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// The frames of plain watch output: separated by one blank line.
std::vector<std::string> Frames(const std::string& out) {
  std::vector<std::string> frames;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find("\n\n", pos);
    if (end == std::string::npos) end = out.size();
    frames.push_back(out.substr(pos, end - pos));
    pos = end + 2;
  }
  return frames;
}

// Address -> {state, keys} of the rows of one watch frame.
std::map<std::string, std::pair<std::string, std::string>> WatchRows(const std::string& frame) {
  std::map<std::string, std::pair<std::string, std::string>> rows;
  for (const std::string& line : Lines(frame)) {
    const std::vector<std::string> w = Words(line);
    if (w.size() >= 3 &&
        (w[1] == "Up" || w[1] == "Down" || w[1] == "Joining" || w[1] == "Leaving")) {
      // Up rows: ADDR STATE [BAR] KEYS [CHANGE] REPLICAS; KEYS is the first all-digit word.
      std::string keys = "-";
      for (size_t i = 2; i < w.size(); ++i) {
        if (w[i].find_first_not_of("0123456789") == std::string::npos) {
          keys = w[i];
          break;
        }
      }
      rows[w[0]] = {w[1], keys};
    }
  }
  return rows;
}

TEST_F(ChordctlToolsTest, WatchPrintsPlainFramesAndStopsCleanlyOnSignals) {
  ASSERT_TRUE(cluster().StartNodes(3, FastNodes()));
  const std::vector<std::string> addrs = cluster().RunningAddrs();
  ASSERT_TRUE(WaitForRing(cluster(), addrs, kSettleTimeout));
  const std::map<std::string, std::string> records = MakeKeys("watch", 90);
  PutAll(addrs.front(), records);
  std::string why;
  EXPECT_TRUE(PollUntil(
      [&] { return RingTableMatches(cluster(), addrs.front(), addrs, KeySet(records), &why); },
      kSettleTimeout))
      << why;
  const std::map<std::string, uint64_t> counts = ExpectedPrimaryCounts(addrs, KeySet(records));

  // Two plain frames to a pipe, no escape codes, exit 0.
  CommandResult r = cluster().Chordctl(
      {"--node", addrs.front(), "watch", "--count", "2", "--interval-ms", "300"}, kCommandTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "escape codes in plain output:\n" << r.out;
  const std::vector<std::string> frames = Frames(r.out);
  ASSERT_EQ(frames.size(), 2u) << r.out;
  for (size_t f = 0; f < frames.size(); ++f) {
    EXPECT_EQ(frames[f].rfind("chord ring via " + addrs.front() + " at ", 0), 0u) << frames[f];
    EXPECT_TRUE(Contains(frames[f], "3 nodes (3 up), 90 keys")) << frames[f];
    EXPECT_TRUE(Contains(frames[f], "[OK]")) << frames[f];
    const auto rows = WatchRows(frames[f]);
    EXPECT_EQ(rows.size(), 3u) << frames[f];
    for (const auto& [addr, count] : counts) {
      auto it = rows.find(addr);
      ASSERT_NE(it, rows.end()) << addr << " missing from\n" << frames[f];
      EXPECT_EQ(it->second.first, "Up") << frames[f];
      EXPECT_EQ(it->second.second, std::to_string(count)) << frames[f];
    }
  }
  EXPECT_TRUE(Contains(frames[1], "90 keys (+0)")) << "no change column in\n" << frames[1];

  // Until a signal: a killed node shows as Down, then SIGINT ends watch with exit 0.
  {
    BackgroundChordctl watch({"--node", addrs.front(), "watch", "--interval-ms", "200"},
                             cluster().dir(), "watch-int");
    ASSERT_TRUE(watch.started());
    EXPECT_TRUE(PollUntil([&] { return Contains(watch.out(), "chord ring via"); }, kSettleTimeout))
        << watch.out() << watch.err();
    const std::string victim = addrs.back();
    cluster().FindByAddr(victim)->Kill();
    EXPECT_TRUE(PollUntil(
        [&] {
          const std::vector<std::string> seen = Frames(watch.out());
          if (seen.size() < 2) return false;
          // The last complete frame.
          const auto rows = WatchRows(seen[seen.size() - 2]);
          auto it = rows.find(victim);
          return it != rows.end() && it->second.first == "Down";
        },
        kSettleTimeout))
        << "watch never showed " << victim << " as Down:\n"
        << watch.out().substr(0, 6000);
    ASSERT_TRUE(watch.Signal(SIGINT));
    const std::optional<int> status = watch.WaitExit(milliseconds(10000));
    ASSERT_TRUE(status.has_value()) << "watch did not stop within 10 s of SIGINT";
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "wait status " << *status << "; stderr " << watch.err();
    EXPECT_EQ(watch.out().find('\x1b'), std::string::npos);
  }

  // SIGTERM too.
  {
    BackgroundChordctl watch({"--node", addrs.front(), "watch", "--interval-ms", "100"},
                             cluster().dir(), "watch-term");
    ASSERT_TRUE(watch.started());
    EXPECT_TRUE(PollUntil([&] { return Contains(watch.out(), "chord ring via"); }, kSettleTimeout))
        << watch.err();
    ASSERT_TRUE(watch.Signal(SIGTERM));
    const std::optional<int> status = watch.WaitExit(milliseconds(10000));
    ASSERT_TRUE(status.has_value()) << "watch did not stop within 10 s of SIGTERM";
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
  }
}

}  // namespace
}  // namespace chord::testing
