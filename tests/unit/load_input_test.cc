// The line parser of `chordctl load` (tools/chordctl/load_input.h): TSV with dump's escapes,
// JSON records, and which of the two a line starting with '{' is read as, in particular the
// dump lines of keys that are themselves JSON text (found by fuzz/load_input_fuzz.cc).
#include "tools/chordctl/load_input.h"

#include <gtest/gtest.h>

#include <string>

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
  r = ParseLoadLine("k\t\t5");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.value, "");
  EXPECT_EQ(r.expires_unix_ms, 5u);
  r = ParseLoadLine(R"({"key": "k", "value": "v", "expires_unix_ms": 1900000000123})");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.expires_unix_ms, 1900000000123u);
  r = ParseLoadLine("k\tv");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.expires_unix_ms, 0u);  // never expires
  for (const std::string line :
       {"k\tv\t0", "k\tv\t-5", "k\tv\t12x", "k\tv\t", "k\tv\t 12", "k\tv\t99999999999999999999",
        "k\tv\t1\t2", R"({"key": "k", "value": "v", "expires_unix_ms": "5"})",
        R"({"key": "k", "value": "v", "expires_unix_ms": -1})",
        R"({"key": "k", "value": "v", "expires_unix_ms": 0})"}) {
    SCOPED_TRACE(line);
    r = ParseLoadLine(line);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("expir"), std::string::npos) << r.error;
  }
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
