#include "media/image.h"

#include <fmt/core.h>

#include "media/exif.h"
#include "media/image_codecs.h"

namespace omni::media {
namespace internal {

Status CorruptImage(std::string_view format, std::string_view detail) {
  return InvalidArgument(fmt::format("the {} image is corrupt: {}", format, detail));
}

Status CheckImageSize(std::string_view format, int64_t width, int64_t height, const ImageDecodeOptions& options) {
  if (width <= 0 || height <= 0) return CorruptImage(format, fmt::format("it declares {}x{} pixels", width, height));
  if (width * height > options.max_pixels) {
    return PayloadTooLarge(fmt::format("the {} image is {}x{} pixels, over the limit of {} pixels", format, width,
                                       height, options.max_pixels));
  }
  return Status::Ok();
}

}  // namespace internal

namespace {

using internal::RawImage;

// PIL's Image.paste(src, mask=alpha) onto white, per channel:
// (255 * (255 - a) + v * a) / 255 with PIL's rounded division by 255.
uint8_t OnWhite(int v, int a) {
  const int t = 255 * (255 - a) + v * a + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

Image ToRgb(const RawImage& raw) {
  Image out;
  out.width = raw.width;
  out.height = raw.height;
  const size_t n = static_cast<size_t>(raw.width) * raw.height;
  out.rgb.resize(n * 3);
  const uint8_t* s = raw.pixels.data();
  uint8_t* d = out.rgb.data();
  switch (raw.channels) {
    case 1:
      for (size_t i = 0; i < n; ++i) d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = s[i];
      break;
    case 2:
      for (size_t i = 0; i < n; ++i) d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = OnWhite(s[2 * i], s[2 * i + 1]);
      break;
    case 3:
      std::copy(s, s + n * 3, d);
      break;
    default:
      for (size_t i = 0; i < n; ++i)
        for (int c = 0; c < 3; ++c) d[3 * i + c] = OnWhite(s[4 * i + c], s[4 * i + 3]);
      break;
  }
  return out;
}

// The EXIF orientation undone, as PIL's ImageOps.exif_transpose does:
// 2 mirror, 3 rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise,
// 7 transverse, 8 rotate 90 counter-clockwise. (x, y) in the result reads
// (sx, sy) of the stored image.
Image Orient(const Image& in, int orientation) {
  const bool swap = orientation >= 5;
  Image out;
  out.width = swap ? in.height : in.width;
  out.height = swap ? in.width : in.height;
  out.rgb.resize(in.rgb.size());
  const int w = in.width, h = in.height;
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      int sx = x, sy = y;
      switch (orientation) {
        case 2: sx = w - 1 - x; break;
        case 3: sx = w - 1 - x, sy = h - 1 - y; break;
        case 4: sy = h - 1 - y; break;
        case 5: sx = y, sy = x; break;
        case 6: sx = y, sy = h - 1 - x; break;
        case 7: sx = w - 1 - y, sy = h - 1 - x; break;
        case 8: sx = w - 1 - y, sy = x; break;
        default: break;
      }
      const uint8_t* p = in.Pixel(sx, sy);
      uint8_t* q = out.rgb.data() + (static_cast<size_t>(y) * out.width + x) * 3;
      q[0] = p[0], q[1] = p[1], q[2] = p[2];
    }
  }
  return out;
}

Status NotAnImage(std::string_view bytes, MediaKind kind) {
  constexpr std::string_view kSupported = "JPEG, PNG, WebP or GIF";
  const MediaKindDescription& d = MediaKindInfo(kind);
  switch (d.cls) {
    case MediaClass::kImage:
      return Status(StatusCode::kUnsupportedMedia,
                    fmt::format("{} images are not supported; send {}", d.name, kSupported));
    case MediaClass::kAudio:
    case MediaClass::kVideo:
      return Status(StatusCode::kUnsupportedMedia,
                    fmt::format("the data is {} ({}), not an image; send {}",
                                d.cls == MediaClass::kAudio ? "an audio file" : "a video", d.name, kSupported));
    case MediaClass::kUnknown:
      break;
  }
  return Status(StatusCode::kUnsupportedMedia,
                fmt::format("the data is not an image omniserve can read ({}); send {}",
                            DescribeUnknownBytes(bytes), kSupported));
}

}  // namespace

StatusOr<Image> DecodeImage(std::string_view bytes, const ImageDecodeOptions& options, ImageInfo* info) {
  if (bytes.empty()) return InvalidArgument("the image is empty (0 bytes)");
  const MediaKind kind = SniffMediaKind(bytes);
  StatusOr<RawImage> raw = InvalidArgument("");
  switch (kind) {
    case MediaKind::kJpeg: raw = internal::DecodeJpeg(bytes, options); break;
    case MediaKind::kPng: raw = internal::DecodePng(bytes, options); break;
    case MediaKind::kWebp: raw = internal::DecodeWebp(bytes, options); break;
    case MediaKind::kGif: raw = internal::DecodeGif(bytes, options); break;
    default: return NotAnImage(bytes, kind);
  }
  if (!raw.ok()) return raw.status();
  const int orientation = options.apply_exif_orientation && !raw->exif.empty() ? ExifOrientation(raw->exif) : 1;
  if (info != nullptr) {
    *info = {.kind = kind, .source_width = raw->width, .source_height = raw->height,
             .orientation = orientation, .had_alpha = raw->channels == 2 || raw->channels == 4};
  }
  Image image = ToRgb(*raw);
  if (orientation != 1) image = Orient(image, orientation);
  return image;
}

}  // namespace omni::media
