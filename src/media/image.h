// Decoded images: 8-bit RGB, row-major, what every vision processor starts
// from.
//
//   StatusOr<Image> image = DecodeImage(bytes, {.max_pixels = 50'000'000});
//
// DecodeImage sniffs the bytes (media_kind.h), decodes JPEG (libjpeg-turbo),
// PNG (libpng), WebP (libwebp; an animation's first frame) and GIF (giflib;
// the first frame) and then, as the reference processor does, turns every
// mode into RGB:
//  - alpha (RGBA, gray + alpha, a palette or GIF with a transparent entry,
//    WebP with alpha) is composited on white exactly as PIL's
//    Image.paste(rgba, mask=alpha) over a white RGB image;
//    the reference (Qwen2-VL's to_rgb) does this for RGBA only and drops the
//    alpha of the other modes; omniserve treats them all alike;
//  - gray is replicated to three channels;
//  - 16-bit samples keep their high byte (as PIL reads 16-bit PNGs);
//  - CMYK and YCCK JPEGs are converted as PIL converts CMYK to RGB (Adobe's
//    inverted storage undone first);
//  - the EXIF orientation (JPEG APP1, PNG eXIf, WebP EXIF) is applied, as
//    PIL's ImageOps.exif_transpose does. OmniServe applies none: a phone
//    photo stored sideways reaches its model sideways.
// The size is read from the header and checked against max_pixels before any
// pixel is decoded (a decompression bomb costs nothing).
//
// Errors: InvalidArgument for empty, truncated or corrupt data ("the PNG
// image is corrupt: ..."); UnsupportedMedia for bytes that are not one of the
// four formats (naming what they are: "BMP", "an audio file (WAV)", "text");
// PayloadTooLarge over max_pixels.
// Thread-safety: pure functions; decoders keep no global state.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "media/media_kind.h"

namespace omni::media {

struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // [height][width][3]

  const uint8_t* Pixel(int x, int y) const { return rgb.data() + (static_cast<size_t>(y) * width + x) * 3; }
};

struct ImageDecodeOptions {
  // PIL's own bomb limit (Image.MAX_IMAGE_PIXELS) is 89,478,485; a 4096x4096
  // photo is 16.8M. Images above this are refused before decoding.
  int64_t max_pixels = 64'000'000;
  bool apply_exif_orientation = true;
};

// What DecodeImage learnt besides the pixels, for answers and logs.
struct ImageInfo {
  MediaKind kind = MediaKind::kUnknown;
  int source_width = 0;   // as stored, before the orientation
  int source_height = 0;
  int orientation = 1;    // EXIF 1..8; 1 when absent or not applied
  bool had_alpha = false;
};

StatusOr<Image> DecodeImage(std::string_view bytes, const ImageDecodeOptions& options = {},
                            ImageInfo* info = nullptr);

}  // namespace omni::media
