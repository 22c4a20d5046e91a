#include "core/base64.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

// RFC 4648 section 10 test vectors.
TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"}};
  for (auto [plain, encoded] : vectors) {
    EXPECT_EQ(Base64Encode(plain), encoded);
    EXPECT_EQ(Base64Decode(encoded), std::optional<std::string>(plain)) << encoded;
  }
}

TEST(Base64, BinaryRoundTrip) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  EXPECT_EQ(Base64Decode(Base64Encode(all)), all);
}

TEST(Base64, UrlSafeAlphabet) {
  // "\xfb\xff" is "+/8=" in the standard alphabet, "-_8" in the URL-safe one.
  EXPECT_EQ(Base64UrlDecode("-_8"), std::string("\xfb\xff"));
  EXPECT_EQ(Base64UrlDecode("-_8="), std::string("\xfb\xff"));
  EXPECT_EQ(Base64UrlDecode("aHR0cHM6Ly9h"), "https://a");
  EXPECT_FALSE(Base64UrlDecode("+/8=").has_value());
  EXPECT_FALSE(Base64UrlDecode("a").has_value());
}

TEST(Base64, StrictDecoding) {
  EXPECT_EQ(Base64Decode("Zm9vYg"), std::optional<std::string>("foob"));  // unpadded
  for (const char* bad : {"Zg=", "Z", "Zm9v=", "Zh==", "Zm9=", "Zm 9v", "Zm9v\n", "Zm-v", "Zm_v", "===="}) {
    EXPECT_EQ(Base64Decode(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace omni
