// Encoding RGB images for clients: what the vision decoder's pixels become in
// an answer (PNG by default, WebP or JPEG on request).
//
//   OMNI_ASSIGN_OR_RETURN(ImageFormat format, ParseImageFormat(request.output_format));
//   OMNI_ASSIGN_OR_RETURN(std::string bytes, EncodeImage(image, format, request.quality));
//   response.content_type = MimeType(format);
//
// Per format:
//  - PNG (libpng): 8-bit RGB, not interlaced, adaptive row filters with
//    zlib's Z_RLE strategy (about 30 ms for 656x880, 5x faster than libpng's
//    defaults and no larger on photographic images; see image_png_encode.cc).
//    Lossless; quality is ignored.
//  - JPEG (libjpeg-turbo): baseline JFIF, 4:2:0 chroma, the library's (and
//    PIL's) defaults at `quality`.
//  - WebP (libwebp): lossy at `quality`; quality 100 asks for lossless WebP,
//    which gives the pixels back exactly (lossy WebP at 100 would still be
//    lossy and larger). Lossless is slower (about 120 ms for 656x880) and
//    5x larger than lossy at 90 on photographs.
// The output is deterministic: the same pixels and quality give the same
// bytes (no timestamp or other metadata is written; the encoders run on the
// calling thread).
//
// Errors: InvalidArgument for a quality outside 0..100 or an image larger
// than the format can hold (WebP: 16383 pixels a side; JPEG: 65500);
// Internal if a library fails. An Image whose buffer does not hold
// width x height x 3 bytes is a bug (OMNI_CHECK).
// Thread-safety: pure functions; the encoders keep no global state.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "media/image.h"
#include "media/media_kind.h"

namespace omni::media {

enum class ImageFormat { kPng, kWebp, kJpeg };

// The default quality of JPEG and lossy WebP (PIL's WebP default is 80 and
// JPEG 75; 90 keeps generated images' fine texture).
inline constexpr int kDefaultImageQuality = 90;

// "png", "webp", "jpeg" or "jpg" (exactly, as OpenAI's `output_format`);
// anything else is InvalidArgument with param "format".
StatusOr<ImageFormat> ParseImageFormat(std::string_view name);

std::string_view ImageFormatName(ImageFormat format);  // "png", "webp", "jpeg"
MediaKind MediaKindOf(ImageFormat format);
std::string_view MimeType(ImageFormat format);       // "image/png"
std::string_view FileExtension(ImageFormat format);  // "png", "webp", "jpg" (no dot)

StatusOr<std::string> EncodeImage(const Image& image, ImageFormat format, int quality = kDefaultImageQuality);

}  // namespace omni::media
