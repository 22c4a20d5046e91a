// ParseVisionTokens on token strings as the model writes them, and the
// ways they go wrong: sizes per ratio from spec/omni-model.md, the ids in
// order, the 1:1 fallback with its warning, and 4xx for malformed strings.
#include "models/vision_decoder/vision_tokens.h"

#include <gtest/gtest.h>

namespace omni::models {
namespace {

std::string Tokens(std::string_view ratio_token, int n, int first = 0) {
  std::string s = "<|discrete_image_start|>" + std::string(ratio_token) + "<|vision_token|>";
  for (int i = 0; i < n; ++i) {
    s += "<|vision" + std::to_string(first + i) + "|>";
    if (i % 27 == 26) s += "<|vision_eol|>";
  }
  return s + "<|vision_eof|><|discrete_image_end|>";
}

TEST(VisionTokensTest, RatioSizesAreTheSpecsAndTransposed) {
  EXPECT_EQ(VisionRatioSize("1:1")->width, 768);
  EXPECT_EQ(VisionRatioSize("3:4")->width, 656);
  EXPECT_EQ(VisionRatioSize("3:4")->height, 880);
  EXPECT_EQ(VisionRatioSize("4:3")->width, 880);
  EXPECT_EQ(VisionRatioSize("4:3")->height, 656);
  EXPECT_EQ(VisionRatioSize("16:9")->width, 1024);
  EXPECT_EQ(VisionRatioSize("9:6")->height, 624);
  EXPECT_EQ(VisionRatioSize("2:1")->width, 1072);
  EXPECT_FALSE(VisionRatioSize("2:3").has_value());  // spelled 6:9
  EXPECT_FALSE(VisionRatioSize("5:7").has_value());
  int ratios = 0;
  for (const char* r : {"1:1", "1:2", "2:1", "3:4", "4:3", "3:5", "5:3", "4:5", "5:4", "6:9", "9:6", "9:16", "16:9"}) {
    auto size = VisionRatioSize(r);
    ASSERT_TRUE(size.has_value()) << r;
    EXPECT_EQ(size->width % 16, 0) << r;
    EXPECT_EQ(size->height % 16, 0) << r;
    ++ratios;
  }
  EXPECT_EQ(ratios, 13);
}

TEST(VisionTokensTest, AModelStringGivesItsRatioSizeAndIdsInOrder) {
  auto t = ParseVisionTokens(Tokens("<|vision_ratio_3:4|>", 729, 100));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->ratio, "3:4");
  EXPECT_EQ(t->size.width, 656);
  EXPECT_EQ(t->size.height, 880);
  ASSERT_EQ(t->ids.size(), 729u);
  EXPECT_EQ(t->ids.front(), 100);
  EXPECT_EQ(t->ids.back(), 828);
  EXPECT_TRUE(t->warnings.empty());
}

TEST(VisionTokensTest, AMissingOrUnknownRatioIsOneToOneWithAWarning) {
  auto none = ParseVisionTokens(Tokens("", 729));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->ratio, "1:1");
  EXPECT_EQ(none->size.width, 768);
  ASSERT_EQ(none->warnings.size(), 1u);
  auto unknown = ParseVisionTokens(Tokens("<|vision_ratio_5:7|>", 729));
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->ratio, "1:1");
  EXPECT_NE(unknown->warnings.at(0).find("5:7"), std::string::npos);
  // A client's long or unprintable ratio is described, not echoed.
  const std::string junk(300, 'x');
  auto hostile = ParseVisionTokens(Tokens("<|vision_ratio_" + junk + "\x01|>", 729));
  ASSERT_TRUE(hostile.ok());
  EXPECT_EQ(hostile->warnings.at(0).find(junk), std::string::npos) << hostile->warnings.at(0);
  EXPECT_NE(hostile->warnings.at(0).find("of 301 bytes"), std::string::npos) << hostile->warnings.at(0);
  // Extra ids: the first 729, with a warning.
  auto extra = ParseVisionTokens(Tokens("<|vision_ratio_1:2|>", 740));
  ASSERT_TRUE(extra.ok());
  EXPECT_EQ(extra->ids.size(), 729u);
  EXPECT_EQ(extra->size.height, 1072);
  EXPECT_EQ(extra->warnings.size(), 1u);
}

TEST(VisionTokensTest, MalformedStringsAreInvalidArgumentSayingWhat) {
  auto few = ParseVisionTokens(Tokens("<|vision_ratio_1:1|>", 728));
  EXPECT_EQ(few.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(few.status().message().find("728 image ids"), std::string::npos) << few.status().message();
  auto out_of_range = ParseVisionTokens(Tokens("", 728) + "<|vision65536|>");
  EXPECT_NE(out_of_range.status().message().find("65536"), std::string::npos) << out_of_range.status().message();
  for (const std::string& bad : std::vector<std::string>{Tokens("", 729) + "hello", "<|vision12", "<|visionx|>" + Tokens("", 729),
                                "<|vision-1|>" + Tokens("", 729), "<|im_start|>" + Tokens("", 729)}) {
    auto r = ParseVisionTokens(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad.substr(0, 40);
  }
  EXPECT_TRUE(ParseVisionTokens(" \n" + Tokens("", 729) + "\n").ok());
  // A client's bytes are never quoted back unless short printable ASCII.
  auto binary = ParseVisionTokens(std::string("<|\xff\x01\"evil|>") + Tokens("", 729));
  ASSERT_FALSE(binary.ok());
  EXPECT_EQ(binary.status().message().find("evil"), std::string::npos) << binary.status().message();
  EXPECT_NE(binary.status().message().find("of 11 bytes"), std::string::npos) << binary.status().message();  // whitespace between tokens is fine
}

}  // namespace
}  // namespace omni::models
