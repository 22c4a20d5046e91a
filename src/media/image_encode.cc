// The front end of the encoders: checks the image and the quality once, then
// hands the pixels to the format's encoder (image_*_encode.cc).
#include "media/image_encode.h"

#include <fmt/core.h>

#include "media/image_codecs.h"

namespace omni::media {
namespace {

// The largest side each format (as its library writes it) can hold: libpng's
// default user limit (PNG_USER_WIDTH_MAX), JPEG_MAX_DIMENSION and
// WEBP_MAX_DIMENSION.
int MaxSide(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng: return 1'000'000;
    case ImageFormat::kJpeg: return 65'500;
    case ImageFormat::kWebp: return 16'383;
  }
  return 0;
}

}  // namespace

StatusOr<ImageFormat> ParseImageFormat(std::string_view name) {
  if (name == "png") return ImageFormat::kPng;
  if (name == "webp") return ImageFormat::kWebp;
  if (name == "jpeg" || name == "jpg") return ImageFormat::kJpeg;
  return InvalidArgument(
             fmt::format("unsupported image format '{}': expected 'png', 'webp' or 'jpeg' ('jpg')", ShownValue(name)))
      .WithParam("format");
}

std::string_view ImageFormatName(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng: return "png";
    case ImageFormat::kWebp: return "webp";
    case ImageFormat::kJpeg: return "jpeg";
  }
  return "unknown";
}

MediaKind MediaKindOf(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng: return MediaKind::kPng;
    case ImageFormat::kWebp: return MediaKind::kWebp;
    case ImageFormat::kJpeg: return MediaKind::kJpeg;
  }
  return MediaKind::kUnknown;
}

std::string_view MimeType(ImageFormat format) { return MediaKindInfo(MediaKindOf(format)).mime; }

std::string_view FileExtension(ImageFormat format) { return MediaKindInfo(MediaKindOf(format)).extension; }

StatusOr<std::string> EncodeImage(const Image& image, ImageFormat format, int quality) {
  OMNI_CHECK(image.width > 0 && image.height > 0) << "encoding a " << image.width << "x" << image.height << " image";
  OMNI_CHECK_EQ(image.rgb.size(), static_cast<size_t>(image.width) * image.height * 3);
  if (quality < 0 || quality > 100) {
    return InvalidArgument(fmt::format("image quality must be between 0 and 100, not {}", quality));
  }
  const std::string_view name = MediaKindInfo(MediaKindOf(format)).name;
  if (const int max_side = MaxSide(format); image.width > max_side || image.height > max_side) {
    return InvalidArgument(fmt::format("a {}x{} image is too large for {} (at most {} pixels a side)", image.width,
                                       image.height, name, max_side));
  }
  switch (format) {
    case ImageFormat::kPng: return internal::EncodePng(image);
    case ImageFormat::kWebp: return internal::EncodeWebp(image, quality);
    case ImageFormat::kJpeg: return internal::EncodeJpeg(image, quality);
  }
  return Internal("an unknown image format");
}

}  // namespace omni::media
