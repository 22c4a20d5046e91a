#include "net/router.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

TEST(RouterTest, ExactMatch) {
  Router<int> r;
  r.Add(HttpMethod::kGet, "/v1/models", 1);
  r.Add(HttpMethod::kPost, "/v1/models", 2);
  auto m = r.Find(HttpMethod::kPost, "/v1/models");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m->value, 2);
  EXPECT_EQ(m->pattern, "/v1/models");
}

TEST(RouterTest, UnknownPathIs404WrongMethodIs405) {
  Router<int> r;
  r.Add(HttpMethod::kGet, "/health", 1);
  EXPECT_EQ(r.Find(HttpMethod::kGet, "/nope").status().code(), StatusCode::kNotFound);
  auto m = r.Find(HttpMethod::kPost, "/health");
  EXPECT_EQ(m.status().code(), StatusCode::kMethodNotAllowed);
  EXPECT_NE(m.status().message().find("GET"), std::string::npos);
  EXPECT_EQ(r.Find(HttpMethod::kGet, "/health/").status().code(), StatusCode::kNotFound);
}

TEST(RouterTest, HeadFallsBackToGet) {
  Router<int> r;
  r.Add(HttpMethod::kGet, "/x", 1);
  auto m = r.Find(HttpMethod::kHead, "/x");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m->value, 1);
}

TEST(RouterTest, PrefixRoutesLongestWinsExactFirst) {
  Router<int> r;
  r.Add(HttpMethod::kPost, "/v1/*", 1);
  r.Add(HttpMethod::kPost, "/v1/models/*", 2);
  r.Add(HttpMethod::kPost, "/v1/chat/completions", 3);
  EXPECT_EQ(*r.Find(HttpMethod::kPost, "/v1/completions")->value, 1);
  EXPECT_EQ(*r.Find(HttpMethod::kPost, "/v1/")->value, 1);
  EXPECT_EQ(*r.Find(HttpMethod::kPost, "/v1/models/a/b")->value, 2);
  EXPECT_EQ(*r.Find(HttpMethod::kPost, "/v1/chat/completions")->value, 3);
  EXPECT_EQ(r.Find(HttpMethod::kPost, "/v1/chat/completions")->pattern, "/v1/chat/completions");
  EXPECT_EQ(r.Find(HttpMethod::kPost, "/v1/x")->pattern, "/v1/*");
  EXPECT_EQ(r.Find(HttpMethod::kPost, "/v1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.Find(HttpMethod::kGet, "/v1/x").status().code(), StatusCode::kMethodNotAllowed);
}

TEST(RouterDeathTest, DuplicateRouteAborts) {
  Router<int> r;
  r.Add(HttpMethod::kGet, "/x", 1);
  EXPECT_DEATH(r.Add(HttpMethod::kGet, "/x", 2), "registered twice");
}

}  // namespace
}  // namespace omni
