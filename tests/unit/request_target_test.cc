#include "node/http/request_target.h"

#include <gtest/gtest.h>

namespace chord {
namespace {

TEST(RequestTargetTest, DecodesThePathAndTheQuery) {
  auto t = ParseRequestTarget("/v1/keys/a%2Fb%20c?consistency=all&w=2&ttl=1h+30m&flag");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->path, "/v1/keys/a/b c");
  ASSERT_EQ(t->query.size(), 4u);
  EXPECT_EQ(t->Param("consistency"), "all");
  EXPECT_EQ(t->Param("w"), "2");
  EXPECT_EQ(t->Param("ttl"), "1h 30m");  // '+' is a space in a query only
  EXPECT_EQ(t->Param("flag"), "");
  EXPECT_FALSE(t->Param("absent").has_value());
}

TEST(RequestTargetTest, PlusStaysAPlusInThePath) {
  auto t = ParseRequestTarget("/v1/keys/a+b");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->path, "/v1/keys/a+b");
}

TEST(RequestTargetTest, BinaryBytesAndEmptyPairs) {
  auto t = ParseRequestTarget("/k%00%ff%FF?&&a=%3D%26&");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->path, std::string("/k\0\xff\xff", 5));
  ASSERT_EQ(t->query.size(), 1u);
  EXPECT_EQ(t->query[0].second, "=&");
}

TEST(RequestTargetTest, MalformedTargetsAreOneSentence) {
  for (const char* bad : {"", "v1/keys/a", "/a%", "/a%4", "/a%zz", "/a?x=%g0"}) {
    SCOPED_TRACE(bad);
    auto t = ParseRequestTarget(bad);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().message().find('\n'), std::string::npos);
  }
}

TEST(RequestTargetTest, TooManyParametersAreRefused) {
  std::string target = "/v1/status?";
  for (size_t i = 0; i <= kMaxQueryParams; ++i) target += "p" + std::to_string(i) + "=1&";
  EXPECT_FALSE(ParseRequestTarget(target).ok());
}

}  // namespace
}  // namespace chord
