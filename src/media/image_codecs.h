// The per-format decoders behind DecodeImage (image.h) and encoders behind
// EncodeImage (image_encode.h); not for use outside src/media. Each decoder
// returns the stored pixels in their own channel layout (gray, gray + alpha,
// RGB or RGBA, 8 bits) with the EXIF block if the format carries one, and
// checks the size from the header against max_pixels before decoding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "media/image.h"

namespace omni::media::internal {

struct RawImage {
  int width = 0;
  int height = 0;
  int channels = 0;             // 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA
  std::vector<uint8_t> pixels;  // [height][width][channels]
  std::string exif;             // a TIFF-structured EXIF block, or empty
};

StatusOr<RawImage> DecodeJpeg(std::string_view bytes, const ImageDecodeOptions& options);
StatusOr<RawImage> DecodePng(std::string_view bytes, const ImageDecodeOptions& options);
StatusOr<RawImage> DecodeWebp(std::string_view bytes, const ImageDecodeOptions& options);
StatusOr<RawImage> DecodeGif(std::string_view bytes, const ImageDecodeOptions& options);

// The per-format encoders behind EncodeImage (image_encode.h), which has
// checked the image's size and the quality (0..100) already.
StatusOr<std::string> EncodePng(const Image& image);
StatusOr<std::string> EncodeJpeg(const Image& image, int quality);
StatusOr<std::string> EncodeWebp(const Image& image, int quality);  // 100: lossless

// The shared refusals, worded alike for every format.
Status CorruptImage(std::string_view format, std::string_view detail);
Status CheckImageSize(std::string_view format, int64_t width, int64_t height, const ImageDecodeOptions& options);

}  // namespace omni::media::internal
