// PNG through libpng: 8-bit RGB, not interlaced, and no ancillary chunk (no
// tIME above all), so the same pixels always give the same bytes.
//
// Compression: libpng's adaptive per-row filter choice with zlib's Z_RLE
// strategy. On photographic 656x880 images (what the vision decoder makes)
// that is about 5x faster than libpng's defaults (zlib level 6, Z_FILTERED:
// 100-270 ms) and no larger, because after filtering a photograph's matches
// are mostly at distance 1. Flat graphics (text, large uniform areas)
// come out larger than at level 6, but such images are small either way.
#include <csetjmp>
#include <cstring>
#include <new>
#include <vector>

#include <png.h>
#include <zlib.h>

#include "media/image_codecs.h"

namespace omni::media::internal {
namespace {

struct Writer {
  std::string* out;
  char message[256] = "";
};

void WriteData(png_structp png, png_bytep data, size_t n) {
  auto* w = static_cast<Writer*>(png_get_io_ptr(png));
  bool appended = true;
  try {
    w->out->append(reinterpret_cast<const char*>(data), n);
  } catch (const std::bad_alloc&) {
    appended = false;  // no exception may cross libpng's C frames
  }
  if (!appended) png_error(png, "out of memory");
}

void FlushData(png_structp) {}

[[noreturn]] void OnError(png_structp png, png_const_charp message) {
  auto* w = static_cast<Writer*>(png_get_error_ptr(png));
  std::strncpy(w->message, message, sizeof(w->message) - 1);
  png_longjmp(png, 1);
}

void OnWarning(png_structp, png_const_charp) {}

// libpng's calls run in this function, which holds no object with a
// destructor (an error longjmps back to its setjmp).
bool WritePng(png_structp png, png_infop info, int width, int height, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_ALL_FILTERS);
  png_set_compression_strategy(png, Z_RLE);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  return true;
}

struct PngWriteState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngWriteState() { png_destroy_write_struct(&png, info != nullptr ? &info : nullptr); }
};

}  // namespace

StatusOr<std::string> EncodePng(const Image& image) {
  std::string out;
  Writer writer{.out = &out};
  PngWriteState s;
  s.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &writer, OnError, OnWarning);
  if (s.png == nullptr) return Internal("libpng could not start");
  s.info = png_create_info_struct(s.png);
  if (s.info == nullptr) return Internal("libpng could not start");
  png_set_write_fn(s.png, &writer, WriteData, FlushData);
  const size_t row_bytes = static_cast<size_t>(image.width) * 3;
  // libpng takes non-const rows but only reads them: it filters a copy.
  auto* pixels = const_cast<uint8_t*>(image.rgb.data());
  std::vector<png_bytep> rows(image.height);
  for (int y = 0; y < image.height; ++y) rows[y] = pixels + y * row_bytes;
  if (!WritePng(s.png, s.info, image.width, image.height, rows.data())) {
    return Internal(std::string("the PNG encoder failed: ") + writer.message);
  }
  return out;
}

}  // namespace omni::media::internal
