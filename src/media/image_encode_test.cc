// EncodeImage round trips through DecodeImage: PNG and lossless WebP give
// the pixels back exactly, JPEG and lossy WebP closely; sizes survive; the
// bytes are the same on every encode of the same pixels.
#include "media/image_encode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>

#include "media/image.h"
#include "media/image_codecs.h"
#include "media/media_kind.h"

namespace omni::media {
namespace {

// Smooth gradients with a little seeded noise: compresses like a photograph,
// and its odd sizes exercise partial JPEG blocks and 4:2:0 chroma edges.
Image TestImage(int width, int height, uint32_t seed = 7) {
  Image image{.width = width, .height = height};
  image.rgb.resize(static_cast<size_t>(width) * height * 3);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(-4, 4);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = image.rgb.data() + (static_cast<size_t>(y) * width + x) * 3;
      const int base[3] = {x * 255 / width, y * 255 / height, 128 + static_cast<int>(100 * std::sin((x + y) / 23.0))};
      for (int c = 0; c < 3; ++c) p[c] = static_cast<uint8_t>(std::clamp(base[c] + noise(rng), 0, 255));
    }
  }
  return image;
}

double MeanAbsError(const Image& a, const Image& b) {
  EXPECT_EQ(a.rgb.size(), b.rgb.size());
  double sum = 0;
  for (size_t i = 0; i < std::min(a.rgb.size(), b.rgb.size()); ++i) sum += std::abs(a.rgb[i] - b.rgb[i]);
  return sum / static_cast<double>(a.rgb.size());
}

uint32_t BigEndian32(std::string_view b, size_t at) {
  return uint32_t{static_cast<uint8_t>(b[at])} << 24 | uint32_t{static_cast<uint8_t>(b[at + 1])} << 16 |
         uint32_t{static_cast<uint8_t>(b[at + 2])} << 8 | static_cast<uint8_t>(b[at + 3]);
}

Image EncodeAndDecode(const Image& image, ImageFormat format, int quality, MediaKind expected_kind) {
  StatusOr<std::string> bytes = EncodeImage(image, format, quality);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  if (!bytes.ok()) return {};
  EXPECT_EQ(SniffMediaKind(*bytes), expected_kind);
  ImageInfo info;
  StatusOr<Image> decoded = DecodeImage(*bytes, {}, &info);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  if (!decoded.ok()) return {};
  EXPECT_FALSE(info.had_alpha);
  EXPECT_EQ(decoded->width, image.width);
  EXPECT_EQ(decoded->height, image.height);
  return *std::move(decoded);
}

TEST(EncodeImage, PngGivesThePixelsBackExactly) {
  const Image image = TestImage(67, 45);
  const Image decoded = EncodeAndDecode(image, ImageFormat::kPng, kDefaultImageQuality, MediaKind::kPng);
  EXPECT_EQ(decoded.rgb, image.rgb);
}

TEST(EncodeImage, PngStartsWithTheSignatureAndAnRgbHeader) {
  StatusOr<std::string> png = EncodeImage(TestImage(656, 880), ImageFormat::kPng);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  ASSERT_GT(png->size(), 33u);
  EXPECT_EQ(png->substr(0, 8), std::string_view("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(BigEndian32(*png, 8), 13u);  // the IHDR chunk's length
  EXPECT_EQ(png->substr(12, 4), "IHDR");
  EXPECT_EQ(BigEndian32(*png, 16), 656u);
  EXPECT_EQ(BigEndian32(*png, 20), 880u);
  EXPECT_EQ((*png)[24], 8);  // bit depth
  EXPECT_EQ((*png)[25], 2);  // color type: RGB
  EXPECT_EQ((*png)[28], 0);  // interlace: none
  EXPECT_EQ(png->find("tIME"), std::string::npos);
  EXPECT_EQ(png->substr(png->size() - 8, 4), "IEND");
}

TEST(EncodeImage, WebpAt100IsLosslessAndExact) {
  const Image image = TestImage(67, 45);
  const Image decoded = EncodeAndDecode(image, ImageFormat::kWebp, 100, MediaKind::kWebp);
  EXPECT_EQ(decoded.rgb, image.rgb);
}

TEST(EncodeImage, LossyWebpIsClose) {
  const Image image = TestImage(67, 45);
  const Image decoded = EncodeAndDecode(image, ImageFormat::kWebp, 90, MediaKind::kWebp);
  EXPECT_LT(MeanAbsError(decoded, image), 4.0);
}

TEST(EncodeImage, JpegIsClose) {
  const Image image = TestImage(67, 45);
  const Image decoded = EncodeAndDecode(image, ImageFormat::kJpeg, 90, MediaKind::kJpeg);
  EXPECT_LT(MeanAbsError(decoded, image), 4.0);
}

TEST(EncodeImage, LowerQualityIsSmallerAndLooser) {
  const Image image = TestImage(160, 120);
  for (ImageFormat format : {ImageFormat::kJpeg, ImageFormat::kWebp}) {
    SCOPED_TRACE(ImageFormatName(format));
    StatusOr<std::string> high = EncodeImage(image, format, 95);
    StatusOr<std::string> low = EncodeImage(image, format, 20);
    ASSERT_TRUE(high.ok() && low.ok());
    EXPECT_LT(low->size(), high->size());
    StatusOr<Image> high_pixels = DecodeImage(*high);
    StatusOr<Image> low_pixels = DecodeImage(*low);
    ASSERT_TRUE(high_pixels.ok() && low_pixels.ok());
    EXPECT_LT(MeanAbsError(*high_pixels, image), MeanAbsError(*low_pixels, image));
  }
}

TEST(EncodeImage, TinyAndOddSizesRoundTrip) {
  for (auto [width, height] : {std::pair{1, 1}, std::pair{1, 17}, std::pair{17, 1}, std::pair{33, 9}}) {
    SCOPED_TRACE(testing::Message() << width << "x" << height);
    const Image image = TestImage(width, height);
    EXPECT_EQ(EncodeAndDecode(image, ImageFormat::kPng, 90, MediaKind::kPng).rgb, image.rgb);
    EXPECT_EQ(EncodeAndDecode(image, ImageFormat::kWebp, 100, MediaKind::kWebp).rgb, image.rgb);
    EncodeAndDecode(image, ImageFormat::kWebp, 90, MediaKind::kWebp);
    EncodeAndDecode(image, ImageFormat::kJpeg, 90, MediaKind::kJpeg);
  }
}

TEST(EncodeImage, SamePixelsGiveTheSameBytes) {
  for (ImageFormat format : {ImageFormat::kPng, ImageFormat::kWebp, ImageFormat::kJpeg}) {
    for (int quality : {75, 100}) {
      SCOPED_TRACE(testing::Message() << ImageFormatName(format) << " at " << quality);
      StatusOr<std::string> first = EncodeImage(TestImage(200, 150, 11), format, quality);
      StatusOr<std::string> second = EncodeImage(TestImage(200, 150, 11), format, quality);
      ASSERT_TRUE(first.ok() && second.ok());
      EXPECT_EQ(*first, *second);
      StatusOr<std::string> other = EncodeImage(TestImage(200, 150, 12), format, quality);
      ASSERT_TRUE(other.ok());
      EXPECT_NE(*first, *other);
    }
  }
}

TEST(EncodeImage, RefusesQualityOutOfRangeAndOversizedImages) {
  const Image image = TestImage(8, 8);
  for (int quality : {-1, 101}) {
    StatusOr<std::string> bytes = EncodeImage(image, ImageFormat::kJpeg, quality);
    ASSERT_FALSE(bytes.ok());
    EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(bytes.status().message().find("between 0 and 100"), std::string::npos) << bytes.status().message();
  }
  EXPECT_TRUE(EncodeImage(image, ImageFormat::kJpeg, 0).ok());
  EXPECT_TRUE(EncodeImage(image, ImageFormat::kWebp, 0).ok());

  // The side is checked before any pixel is read: 16384 x 1 is only 48 KiB.
  const Image wide = TestImage(16384, 1);
  StatusOr<std::string> webp = EncodeImage(wide, ImageFormat::kWebp);
  ASSERT_FALSE(webp.ok());
  EXPECT_EQ(webp.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(webp.status().message().find("too large for WebP (at most 16383 pixels a side)"), std::string::npos)
      << webp.status().message();
  EXPECT_TRUE(EncodeImage(wide, ImageFormat::kPng).ok());
  EXPECT_TRUE(EncodeImage(wide, ImageFormat::kJpeg).ok());
}

// The front end refuses these sizes first; called directly, each library
// fails inside its encoder, and the failure (libpng's and libjpeg's through
// longjmp) comes back as a Status.
TEST(EncodeImage, LibraryFailuresBecomeStatuses) {
  const Image png_too_wide = TestImage(1'000'001, 1);
  StatusOr<std::string> png = internal::EncodePng(png_too_wide);
  ASSERT_FALSE(png.ok());
  EXPECT_EQ(png.status().code(), StatusCode::kInternal);
  EXPECT_NE(png.status().message().find("the PNG encoder failed: "), std::string::npos) << png.status().message();
  EXPECT_NE(png.status().message().find("IHDR"), std::string::npos) << png.status().message();

  StatusOr<std::string> jpeg = internal::EncodeJpeg(TestImage(65'501, 1), 90);
  ASSERT_FALSE(jpeg.ok());
  EXPECT_EQ(jpeg.status().code(), StatusCode::kInternal);
  EXPECT_NE(jpeg.status().message().find("the JPEG encoder failed: "), std::string::npos) << jpeg.status().message();
  EXPECT_NE(jpeg.status().message().find("65500"), std::string::npos) << jpeg.status().message();

  for (int quality : {90, 100}) {
    StatusOr<std::string> webp = internal::EncodeWebp(TestImage(16'384, 1), quality);
    ASSERT_FALSE(webp.ok());
    EXPECT_EQ(webp.status().code(), StatusCode::kInternal);
    EXPECT_NE(webp.status().message().find("the WebP encoder failed: "), std::string::npos) << webp.status().message();
  }
}

TEST(ParseImageFormat, AcceptsTheOpenAiNamesAndJpg) {
  EXPECT_EQ(ParseImageFormat("png").value(), ImageFormat::kPng);
  EXPECT_EQ(ParseImageFormat("webp").value(), ImageFormat::kWebp);
  EXPECT_EQ(ParseImageFormat("jpeg").value(), ImageFormat::kJpeg);
  EXPECT_EQ(ParseImageFormat("jpg").value(), ImageFormat::kJpeg);
  for (ImageFormat format : {ImageFormat::kPng, ImageFormat::kWebp, ImageFormat::kJpeg}) {
    EXPECT_EQ(ParseImageFormat(ImageFormatName(format)).value(), format);
  }
}

TEST(ParseImageFormat, RefusesOthersNamingTheAcceptedValues) {
  for (std::string_view name : {"", "gif", "PNG", "image/png", ".png", "png "}) {
    SCOPED_TRACE(name);
    StatusOr<ImageFormat> format = ParseImageFormat(name);
    ASSERT_FALSE(format.ok());
    EXPECT_EQ(format.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(format.status().param(), "format");
    EXPECT_NE(format.status().message().find("expected 'png', 'webp' or 'jpeg'"), std::string::npos)
        << format.status().message();
  }
  StatusOr<ImageFormat> long_name = ParseImageFormat(std::string(10'000, 'x'));
  ASSERT_FALSE(long_name.ok());
  EXPECT_LT(long_name.status().message().size(), 200u);  // the value is shown cut
}

TEST(ImageFormat, MimeTypesAndExtensions) {
  EXPECT_EQ(MimeType(ImageFormat::kPng), "image/png");
  EXPECT_EQ(MimeType(ImageFormat::kWebp), "image/webp");
  EXPECT_EQ(MimeType(ImageFormat::kJpeg), "image/jpeg");
  EXPECT_EQ(FileExtension(ImageFormat::kPng), "png");
  EXPECT_EQ(FileExtension(ImageFormat::kWebp), "webp");
  EXPECT_EQ(FileExtension(ImageFormat::kJpeg), "jpg");
  EXPECT_EQ(MediaKindOf(ImageFormat::kWebp), MediaKind::kWebp);
}

}  // namespace
}  // namespace omni::media
