#include "net/url.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

TEST(UrlTest, FullUrl) {
  auto u = ParseUrl("http://127.0.0.1:8080/v1/chat?stream=true");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->scheme, "http");
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->target, "/v1/chat?stream=true");
  EXPECT_EQ(u->HostPort(), "127.0.0.1:8080");
}

TEST(UrlTest, DefaultsPortAndPath) {
  auto u = ParseUrl("HTTP://example.com");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/");
  auto q = ParseUrl("http://example.com?x=1#frag");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->target, "/?x=1");
}

TEST(UrlTest, Ipv6Literal) {
  auto u = ParseUrl("http://[::1]:9000/x");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 9000);
  EXPECT_EQ(u->HostPort(), "[::1]:9000");
}

TEST(UrlTest, Rejects) {
  auto https = ParseUrl("https://x/a");
  ASSERT_TRUE(https.ok());
  EXPECT_TRUE(https->tls());
  EXPECT_EQ(https->port, 443);
  EXPECT_EQ(ParseUrl("https://x:8443/").value().port, 8443);
  EXPECT_FALSE(ParseUrl("http://x/").value().tls());
  EXPECT_EQ(ParseUrl("ftp://x/").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("no-scheme").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("http://:80/").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("http://h:0/").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("http://h:65536/").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("http://h:8x/").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("http://user:pw@h/").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("http://[::1/").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace omni
