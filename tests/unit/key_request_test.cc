#include "node/http/key_request.h"

#include <gtest/gtest.h>

#include "tools/client/value_json.h"

namespace chord {
namespace {

HttpRequest Request(const std::string& method, const std::string& target,
                    const std::string& body = "", const std::string& content_type = "") {
  HttpRequest r;
  r.method = method;
  r.target = target;
  r.body = body;
  r.content_type = content_type;
  return r;
}

std::optional<HttpProblem> Parse(const HttpRequest& r, const std::string& key, KeyRequest* out) {
  auto target = ParseRequestTarget(r.target);
  EXPECT_TRUE(target.ok());
  return ParseKeyRequest(r, key, *target, out);
}

TEST(KeyRequestTest, APutTakesTheConsistencyCasAndTtlOptions) {
  KeyRequest kr;
  auto problem = Parse(
      Request("PUT", "/v1/keys/k?consistency=all&w=2&if_version=7&ttl=30s", "the value"), "k", &kr);
  ASSERT_FALSE(problem.has_value()) << problem->sentence;
  EXPECT_EQ(kr.op, KeyRequest::Op::kPut);
  EXPECT_EQ(kr.value, "the value");
  EXPECT_EQ(kr.options.consistency, wire::CONSISTENCY_ALL);
  EXPECT_EQ(kr.options.required, 2u);
  EXPECT_EQ(kr.options.if_version, 7u);
  EXPECT_EQ(kr.options.ttl_ms, 30'000u);
}

TEST(KeyRequestTest, AJsonBodyCarriesTextOrBase64) {
  KeyRequest kr;
  ASSERT_FALSE(
      Parse(Request("PUT", "/v1/keys/k", R"({"value":"héllo"})", "application/json"), "k", &kr));
  EXPECT_EQ(kr.value, "héllo");
  ASSERT_FALSE(Parse(Request("POST", "/v1/keys/k", R"({"value_base64":"AP8="})",
                             "application/json; charset=utf-8"),
                     "k", &kr));
  EXPECT_EQ(kr.value, std::string("\x00\xff", 2));
  auto bad = Parse(Request("PUT", "/v1/keys/k", R"({"v":1})", "application/json"), "k", &kr);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, 400);
}

TEST(KeyRequestTest, WrongOptionsAreRefusedWithASentence) {
  struct Case {
    const char* method;
    const char* target;
    int status;
  };
  for (const Case& c :
       {Case{"GET", "/v1/keys/k?consistency=most", 400},
        Case{"GET", "/v1/keys/k?w=2", 400},  // a get takes r
        Case{"PUT", "/v1/keys/k?r=2", 400},
        Case{"PUT", "/v1/keys/k?if_absent=true&if_version=3", 400},
        Case{"GET", "/v1/keys/k?ttl=5s", 400}, Case{"PUT", "/v1/keys/k?ttl=soon", 400},
        Case{"PUT", "/v1/keys/k?if_version=0", 400}, Case{"PUT", "/v1/keys/k?color=red", 400},
        Case{"PATCH", "/v1/keys/k", 405}}) {
    SCOPED_TRACE(std::string(c.method) + " " + c.target);
    KeyRequest kr;
    auto problem = Parse(Request(c.method, c.target), "k", &kr);
    ASSERT_TRUE(problem.has_value());
    EXPECT_EQ(problem->status, c.status);
    EXPECT_FALSE(problem->sentence.empty());
  }
  KeyRequest kr;
  auto empty_key = Parse(Request("GET", "/v1/keys/"), "", &kr);
  ASSERT_TRUE(empty_key.has_value());
  EXPECT_EQ(empty_key->status, 400);
}

TEST(KeyRequestTest, Utf8AndBase64) {
  EXPECT_TRUE(IsValidUtf8("plain héllo ✓ 𝄞"));
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));      // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));  // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));      // cut short
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t n : {0u, 1u, 2u, 3u, 4u, 255u, 256u}) {
    const std::string bytes = all.substr(0, n);
    EXPECT_EQ(Base64Decode(Base64Encode(bytes)), bytes) << n;
  }
  EXPECT_FALSE(Base64Decode("abc").has_value());
  // Padding only at the end, at most two; nothing outside the alphabet.
  EXPECT_EQ(Base64Decode("QQ=="), "A");
  EXPECT_EQ(Base64Decode("QUI="), "AB");
  for (const char* bad : {"=AAA", "AA=A", "====", "A===", "AB*=", "AB C"}) {
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
  }
  nlohmann::json doc;
  SetValueJson(&doc, std::string("\xff\x00", 2));
  EXPECT_EQ(doc["value_base64"], "/wA=");
}

}  // namespace
}  // namespace chord
