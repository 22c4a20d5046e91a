// libFuzzer target for the media layer's image path: the sniffer, the four
// decoders (JPEG, PNG, WebP, GIF, chosen by the sniffed kind), the EXIF
// orientation and the conversion to RGB, then a resize of what decodes.
//
// For any input: DecodeImage returns an image or a Status with a message,
// never crashes, reads out of bounds or allocates past the pixel limit; an
// image has the size it reports, and the pixel limit holds for it.
//
// media_test also links this file and replays the committed corpus through it
// (image_corpus_test.cc).
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "media/image.h"
#include "media/image_resize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni::media;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // A small limit keeps every accepted image cheap (and checks the limit).
  const ImageDecodeOptions options{.max_pixels = 1 << 20};
  ImageInfo info;
  omni::StatusOr<Image> image = DecodeImage(bytes, options, &info);
  if (!image.ok()) {
    OMNI_CHECK(!image.status().message().empty());
    return 0;
  }
  OMNI_CHECK(image->width > 0 && image->height > 0);
  OMNI_CHECK(static_cast<int64_t>(image->width) * image->height <= options.max_pixels);
  OMNI_CHECK_EQ(image->rgb.size(), static_cast<size_t>(image->width) * image->height * 3);
  OMNI_CHECK(info.kind == SniffMediaKind(bytes));
  OMNI_CHECK(info.orientation >= 1 && info.orientation <= 8);
  const bool swapped = info.orientation >= 5;
  OMNI_CHECK_EQ(image->width, swapped ? info.source_height : info.source_width);
  const Image small = Resize(*image, 1 + image->width % 37, 1 + image->height % 29);
  OMNI_CHECK_EQ(small.rgb.size(), static_cast<size_t>(small.width) * small.height * 3);
  return 0;
}
