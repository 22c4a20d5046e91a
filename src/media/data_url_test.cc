#include "media/data_url.h"

#include <gtest/gtest.h>

namespace omni::media {
namespace {

TEST(ParseDataUrl, Base64AndPercentForms) {
  auto a = ParseDataUrl("data:image/PNG;base64,aGVsbG8=", 100);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->media_type, "image/png");
  EXPECT_EQ(a->bytes, "hello");
  auto b = ParseDataUrl("DATA:text/plain;charset=utf-8,a%20b%00c", 100);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->media_type, "text/plain");
  EXPECT_EQ(b->bytes, std::string("a b\0c", 5));
  auto c = ParseDataUrl("data:;base64,", 100);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->bytes, "");
  auto d = ParseDataUrl("data:image/jpeg;base64,aGVsbG8", 100);  // unpadded
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->bytes, "hello");
}

TEST(ParseDataUrl, RefusesMalformedPayloadsWithoutQuotingThem) {
  for (const char* bad : {"data:image/png;base64", "data:image/png;base64,aGV sbG8=", "data:image/png;base64,aGVsbG8==",
                          "data:image/png;base64,a", "data:image/png;base64,aGVsbG9=", "data:,%zz", "data:,%4",
                          "http://x/y"}) {
    auto r = ParseDataUrl(bad, 100);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.status().message().find("aGV"), std::string::npos);
  }
}

TEST(ParseDataUrl, SizeLimitBeforeDecoding) {
  auto over = ParseDataUrl("data:image/png;base64,aGVsbG8gd29ybGQ=", 10);  // 11 bytes
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_TRUE(ParseDataUrl("data:image/png;base64,aGVsbG8gd29ybGQ=", 11).ok());
  std::string huge = "data:image/png;base64," + std::string(4 << 20, 'A');
  auto too_big = ParseDataUrl(huge, 1 << 20);
  EXPECT_EQ(too_big.status().code(), StatusCode::kPayloadTooLarge);
}

}  // namespace
}  // namespace omni::media
