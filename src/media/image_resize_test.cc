// Resize against PIL's Image.resize on the same pixels: bit-exact for
// BICUBIC and BILINEAR, down, up, one axis only and to 1x1.
#include "media/image_resize.h"

#include <gtest/gtest.h>

#include "media/media_test_util.h"

namespace omni::media {
namespace {

TEST(Resize, MatchesPilBitForBit) {
  const nlohmann::json manifest = LoadManifest();
  ASSERT_GE(manifest["resize"].size(), 10u);
  for (const auto& entry : manifest["resize"]) {
    const std::string file = entry["file"];
    SCOPED_TRACE(file);
    StatusOr<Image> source = DecodeImage(ReadTestFile(entry["source"]));
    ASSERT_TRUE(source.ok());
    const ResampleFilter filter =
        entry["filter"] == "bicubic" ? ResampleFilter::kBicubic : ResampleFilter::kBilinear;
    const Image out = Resize(*source, entry["width"], entry["height"], filter);
    EXPECT_EQ(out.width, entry["width"].get<int>());
    EXPECT_EQ(out.height, entry["height"].get<int>());
    EXPECT_EQ(CountDifferentBytes(out.rgb, ReadTestFile(file)), 0u);
  }
}

TEST(Resize, SameSizeIsACopy) {
  Image image{.width = 2, .height = 1, .rgb = {1, 2, 3, 4, 5, 6}};
  EXPECT_EQ(Resize(image, 2, 1).rgb, image.rgb);
}

}  // namespace
}  // namespace omni::media
