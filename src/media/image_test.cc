// DecodeImage against PIL: every fixture of tools/media/make_fixtures.py
// decodes to exactly the pixels PIL gives (after the documented conversion
// to RGB and the EXIF orientation), and every bad input gets its precise
// error.
#include "media/image.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "media/media_test_util.h"

namespace omni::media {
namespace {

TEST(DecodeImage, MatchesPilOnEveryFixture) {
  const nlohmann::json manifest = LoadManifest();
  ASSERT_GE(manifest["decode"].size(), 20u);
  for (const auto& entry : manifest["decode"]) {
    const std::string name = entry["file"];
    SCOPED_TRACE(name);
    StatusOr<Image> image = DecodeImage(ReadTestFile(name));
    ASSERT_TRUE(image.ok()) << image.status().ToString();
    EXPECT_EQ(image->width, entry["width"].get<int>());
    EXPECT_EQ(image->height, entry["height"].get<int>());
    const std::string expected = ReadTestFile(name + ".rgb");
    ASSERT_EQ(image->rgb.size(), expected.size());
    EXPECT_EQ(CountDifferentBytes(image->rgb, expected), 0u);
  }
}

TEST(DecodeImage, ReportsKindOrientationAndAlpha) {
  ImageInfo info;
  ASSERT_TRUE(DecodeImage(ReadTestFile("orient6.jpg"), {}, &info).ok());
  EXPECT_EQ(info.kind, MediaKind::kJpeg);
  EXPECT_EQ(info.orientation, 6);
  EXPECT_EQ(info.source_width, 67);
  EXPECT_EQ(info.source_height, 45);
  EXPECT_FALSE(info.had_alpha);
  ASSERT_TRUE(DecodeImage(ReadTestFile("rgba.png"), {}, &info).ok());
  EXPECT_EQ(info.kind, MediaKind::kPng);
  EXPECT_TRUE(info.had_alpha);
}

TEST(DecodeImage, OrientationCanBeLeftAlone) {
  StatusOr<Image> image = DecodeImage(ReadTestFile("orient6.jpg"), {.apply_exif_orientation = false});
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->width, 67);  // as stored: the rotated fixture is 45 wide
  StatusOr<Image> plain = DecodeImage(ReadTestFile("orient1.jpg"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(CountDifferentBytes(image->rgb, std::string(plain->rgb.begin(), plain->rgb.end())), 0u);
}

TEST(DecodeImage, BadInputGetsItsPreciseError) {
  const nlohmann::json manifest = LoadManifest();
  ASSERT_GE(manifest["bad"].size(), 10u);
  for (const auto& entry : manifest["bad"]) {
    const std::string name = entry["file"];
    SCOPED_TRACE(name);
    StatusOr<Image> image = DecodeImage(ReadTestFile(name));
    ASSERT_FALSE(image.ok());
    EXPECT_EQ(StatusCodeName(image.status().code()), entry["code"].get<std::string>()) << image.status().ToString();
    EXPECT_NE(image.status().message().find(entry["contains"].get<std::string>()), std::string::npos)
        << image.status().message();
  }
}

TEST(DecodeImage, PixelLimitIsCheckedFromTheHeaderForEveryFormat) {
  for (const char* name : {"photo.jpg", "rgb.png", "lossy.webp", "transparent.gif", "animated.webp"}) {
    SCOPED_TRACE(name);
    StatusOr<Image> image = DecodeImage(ReadTestFile(name), {.max_pixels = 67 * 45 - 1});
    ASSERT_FALSE(image.ok());
    EXPECT_EQ(image.status().code(), StatusCode::kPayloadTooLarge);
    EXPECT_NE(image.status().message().find("67x45 pixels, over the limit of 3014 pixels"), std::string::npos)
        << image.status().message();
    EXPECT_TRUE(DecodeImage(ReadTestFile(name), {.max_pixels = 67 * 45}).ok());
  }
}

TEST(DecodeImage, EveryPrefixOfEveryFixtureFailsCleanly) {
  // Truncation at any byte: an error or (for a prefix holding the whole
  // image, e.g. without its trailer) an image; never a crash.
  for (const char* name : {"photo.jpg", "progressive.jpg", "rgba.png", "alpha.webp", "animated.gif"}) {
    const std::string bytes = ReadTestFile(name);
    for (size_t n = 0; n < bytes.size(); n += std::max<size_t>(1, bytes.size() / 97)) {
      StatusOr<Image> image = DecodeImage(std::string_view(bytes).substr(0, n));
      if (!image.ok()) {
        EXPECT_TRUE(image.status().code() == StatusCode::kInvalidArgument ||
                    image.status().code() == StatusCode::kUnsupportedMedia)
            << name << " at " << n << ": " << image.status().ToString();
      }
    }
  }
}

}  // namespace
}  // namespace omni::media
