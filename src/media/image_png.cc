// PNG through libpng's full API: palettes, low bit depths and tRNS expanded
// to 8-bit gray/RGB with alpha, 16-bit samples cut to their high byte (as PIL
// reads them), Adam7 interlacing handled, no gamma correction (PIL applies
// none either).
#include <csetjmp>
#include <cstring>

#include <png.h>

#include "media/image_codecs.h"

namespace omni::media::internal {
namespace {

struct Reader {
  std::string_view bytes;
  size_t at = 0;
  char message[256] = "";
};

void ReadData(png_structp png, png_bytep out, size_t n) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (r->bytes.size() - r->at < n) png_error(png, "the data ends before the image does (truncated)");
  std::memcpy(out, r->bytes.data() + r->at, n);
  r->at += n;
}

[[noreturn]] void OnError(png_structp png, png_const_charp message) {
  auto* r = static_cast<Reader*>(png_get_error_ptr(png));
  std::strncpy(r->message, message, sizeof(r->message) - 1);
  png_longjmp(png, 1);
}

void OnWarning(png_structp, png_const_charp) {}

// libpng's calls run in these two functions, which hold no object with a
// destructor (an error longjmps back to their setjmp).
bool ReadHeader(png_structp png, png_infop info, png_uint_32* width, png_uint_32* height) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  *width = png_get_image_width(png, info);
  *height = png_get_image_height(png, info);
  png_set_expand(png);    // palette -> RGB, gray < 8 bits -> 8, tRNS -> alpha
  png_set_strip_16(png);  // the high byte of a 16-bit sample
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return true;
}

bool ReadRows(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, info);  // an eXIf chunk may follow the image data
  return true;
}

struct PngReadState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngReadState() { png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr); }
};

}  // namespace

StatusOr<RawImage> DecodePng(std::string_view bytes, const ImageDecodeOptions& options) {
  Reader reader{.bytes = bytes};
  PngReadState s;
  s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, OnError, OnWarning);
  if (s.png == nullptr) return Internal("libpng could not start");
  s.info = png_create_info_struct(s.png);
  if (s.info == nullptr) return Internal("libpng could not start");
  png_set_read_fn(s.png, &reader, ReadData);
  // libpng refuses larger sides itself; our own pixel limit is checked below.
  png_set_user_limits(s.png, 1u << 20, 1u << 20);
  png_uint_32 width = 0, height = 0;
  if (!ReadHeader(s.png, s.info, &width, &height)) return CorruptImage("PNG", reader.message);
  OMNI_RETURN_IF_ERROR(CheckImageSize("PNG", width, height, options));
  RawImage image;
  image.width = static_cast<int>(width);
  image.height = static_cast<int>(height);
  image.channels = png_get_channels(s.png, s.info);
  const size_t row_bytes = png_get_rowbytes(s.png, s.info);
  if (image.channels < 1 || image.channels > 4 || row_bytes != static_cast<size_t>(width) * image.channels) {
    return CorruptImage("PNG", "an unexpected pixel layout after expansion");
  }
  image.pixels.resize(row_bytes * height);
  std::vector<png_bytep> rows(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = image.pixels.data() + y * row_bytes;
  if (!ReadRows(s.png, s.info, rows.data())) return CorruptImage("PNG", reader.message);
  png_uint_32 exif_size = 0;
  png_bytep exif = nullptr;
  if (png_get_eXIf_1(s.png, s.info, &exif_size, &exif) != 0 && exif != nullptr) {
    image.exif.assign(reinterpret_cast<const char*>(exif), exif_size);
  }
  return image;
}

}  // namespace omni::media::internal
