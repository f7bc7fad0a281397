// The line parser of `chordctl load` (tools/chordctl/load_input.h): TSV with dump's escapes,
// JSON records, and which of the two a line starting with '{' is read as, in particular the
// dump lines of keys that are themselves JSON text (found by fuzz/load_input_fuzz.cc).
#include "tools/chordctl/load_input.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/chordctl/render.h"

namespace chord::ctl {
namespace {

void ExpectRecord(const std::string& line, const std::string& key, const std::string& value) {
  SCOPED_TRACE(line);
  const LoadRecord r = ParseLoadLine(line);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.key, key);
  EXPECT_EQ(r.value, value);
}

TEST(LoadInputTest, TsvAndJsonLines) {
  ExpectRecord("user-1\talice", "user-1", "alice");
  ExpectRecord("a\\tb\tline\\none\\r\\\\\r", "a\tb", "line\none\r\\");
  ExpectRecord("k\t", "k", "");
  ExpectRecord(R"({"key": "user-3", "value": "carol"})", "user-3", "carol");
  ExpectRecord(R"({"key":"k","value":"\u00e9\t"})", "k", "\xc3\xa9\t");
  // A tab between the tokens of a JSON line is JSON whitespace.
  ExpectRecord("{\"key\": \"a\",\t\"value\": \"b\"}\t\t", "a", "b");
  EXPECT_TRUE(ParseLoadLine("").empty);
  EXPECT_TRUE(ParseLoadLine("\r").empty);
}

TEST(LoadInputTest, DumpLinesOfKeysThatAreJsonTextLoadAsTsv) {
  // dump writes a key that is itself a JSON record like any other key; what follows its tab
  // may be empty or spaces, which JSON would take for trailing whitespace.
  const std::string json_key = R"({"key":"a","value":"b"})";
  ExpectRecord(json_key + "\t", json_key, "");
  ExpectRecord(json_key + "\t  ", json_key, "  ");
  ExpectRecord(json_key + "  \tv", json_key + "  ", "v");
  ExpectRecord(R"({"key": "load-1"})"
               "\t",
               R"({"key": "load-1"})", "");
  ExpectRecord("{not json\tvalue", "{not json", "value");
  ExpectRecord("{}\t ", "{}", " ");
}

// dump writes a key with a time to live with a third field, when it expires; JSON lines may
// carry it as "expires_unix_ms".
TEST(LoadInputTest, AnExpiryIsReadFromTheThirdFieldOrTheJsonObject) {
  LoadRecord r = ParseLoadLine("k\\tx\tv\t1900000000123");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.key, "k\tx");
  EXPECT_EQ(r.value, "v");
  EXPECT_EQ(r.expires_unix_ms, 1900000000123u);
  r = ParseLoadLine("k\t\t0001500000000000");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.value, "");
  EXPECT_EQ(r.expires_unix_ms, 1500000000000u);  // leading zeros are digits too
  r = ParseLoadLine(R"({"key": "k", "value": "v", "expires_unix_ms": 1900000000123})");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.expires_unix_ms, 1900000000123u);
  r = ParseLoadLine("k\tv");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.expires_unix_ms, 0u);  // never expires
  // Leading zeros do not count toward the digits.
  r = ParseLoadLine("k\tv\t000000001500000000000");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.expires_unix_ms, 1500000000000u);
  // A JSON record (with a tab as whitespace) whose expiry is wrong is that error, not a TSV
  // line with the key '{"key":"k",'.
  r = ParseLoadLine("{\"key\":\"k\",\t\"value\":\"v\",\"expires_unix_ms\":1700000000}");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("\"expires_unix_ms\""), std::string::npos) << r.error;
  // Bounds: a time in seconds, a stray count in a third column, an expiry beyond the year
  // 33658 (in either format) are errors, not expiries long past or far ahead.
  EXPECT_TRUE(ParseLoadLine("k\tv\t" + std::to_string(kMinLoadExpiryUnixMs)).ok);
  EXPECT_TRUE(ParseLoadLine("k\tv\t" + std::to_string(kMaxLoadExpiryUnixMs)).ok);
  for (const std::string& line :
       {std::string("k\tv\t0"), std::string("k\tv\t-5"), std::string("k\tv\t12x"),
        std::string("k\tv\t"), std::string("k\tv\t 12"), std::string("k\tv\t30"),
        std::string("k\tv\t1700000000"), std::string("k\tv\t99999999999999999999"),
        "k\tv\t" + std::to_string(kMinLoadExpiryUnixMs - 1),
        "k\tv\t" + std::to_string(kMaxLoadExpiryUnixMs + 1), std::string("k\tv\t1\t2"),
        std::string(R"({"key": "k", "value": "v", "expires_unix_ms": "5"})"),
        std::string(R"({"key": "k", "value": "v", "expires_unix_ms": -1})"),
        std::string(R"({"key": "k", "value": "v", "expires_unix_ms": 0})"),
        std::string(R"({"key": "k", "value": "v", "expires_unix_ms": 1700000000})"),
        std::string(R"({"key": "k", "value": "v", "expires_unix_ms": 1.9e12})"),
        std::string(R"({"key":"k","value":"v","expires_unix_ms":10000000000000000000})")}) {
    SCOPED_TRACE(line);
    r = ParseLoadLine(line);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("expir"), std::string::npos) << r.error;
  }
}

// dump's lines: sorted by key, escaped, an expiry as a third field, records past it (by the
// given clock) left out, one line per key.
TEST(DumpTextTest, ListsLiveKeysSortedWithTheirExpiries) {
  const uint64_t now = 1'900'000'000'000;
  std::vector<DumpRecord> records = {
      {"b", "two", 0},       {"a\tkey", "one\n", now + 5000},
      {"expired", "x", now}, {"gone", "x", now - 1},
      {"b", "two", 0},  // the same key from a second node
      {"c", "", now + 1},
  };
  size_t lines = 0;
  const std::string text = DumpText(records, now, &lines);
  EXPECT_EQ(text, "a\\tkey\tone\\n\t" + std::to_string(now + 5000) +
                      "\n"
                      "b\ttwo\n"
                      "c\t\t" +
                      std::to_string(now + 1) + "\n");
  EXPECT_EQ(lines, 3u);
  // Each line loads back as the record it came from.
  const LoadRecord back = ParseLoadLine(text.substr(0, text.find('\n')));
  ASSERT_TRUE(back.ok) << back.error;
  EXPECT_EQ(back.key, "a\tkey");
  EXPECT_EQ(back.value, "one\n");
  EXPECT_EQ(back.expires_unix_ms, now + 5000);
}

TEST(LoadInputTest, MalformedLinesSayWhy) {
  for (const std::string line :
       {"no tab here", "a\tb\tc", "lone\\\tv", "k\tbad \\x escape", "\tempty key",
        R"({"key": 1, "value": "x"})", "[1,2]", R"({"key": "a", "value": "b")"}) {
    SCOPED_TRACE(line);
    const LoadRecord r = ParseLoadLine(line);
    EXPECT_FALSE(r.ok);
    EXPECT_FALSE(r.empty);
    EXPECT_NE(r.error, "");
  }
  EXPECT_FALSE(ParseLoadLine("k\tvvv", 2).ok);
  EXPECT_TRUE(ParseLoadLine("k\tvv", 2).ok);
}

}  // namespace
}  // namespace chord::ctl
