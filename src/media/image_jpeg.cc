// JPEG through libjpeg-turbo, with the library's defaults (islow IDCT, fancy
// upsampling), which are PIL's too, so pixels match PIL's bit for bit.
#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE
#include <cstring>

#include <jpeglib.h>
#include <jerror.h>

#include "media/image_codecs.h"

namespace omni::media::internal {
namespace {

// A progressive JPEG may hold thousands of tiny scans, each a full pass over
// the coefficients (a known CPU bomb); real encoders write about 10.
constexpr int kMaxScans = 256;
// Coefficient buffers of a progressive image, beyond the pixels themselves.
constexpr long kMaxLibjpegMemory = 1l << 30;

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = "";
  bool truncated = false;
};

[[noreturn]] void OnError(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings are corrupt-data notices libjpeg recovers from. Only running out
// of data fails the decode (PIL too refuses a truncated JPEG); extraneous
// bytes and the like are accepted, as PIL accepts them.
void OnMessage(j_common_ptr cinfo, int level) {
  auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) e->truncated = true;
}

struct ScanLimit {
  jpeg_progress_mgr pub;
  ErrorManager* err;
};

void OnProgress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxScans) {
    auto* limit = reinterpret_cast<ScanLimit*>(cinfo->progress);
    std::snprintf(limit->err->message, sizeof(limit->err->message), "more than %d progressive scans", kMaxScans);
    std::longjmp(limit->err->jump, 1);
  }
}

// PIL's CMYK -> RGB: each channel is (255 - k) - c * (255 - k) / 255, with
// its rounding of the division by 255.
uint8_t CmykChannel(int c, int k) {
  const int nk = 255 - k;
  const int t = c * nk + 128;
  return static_cast<uint8_t>(nk - (((t >> 8) + t) >> 8));
}

std::string ExifOf(const jpeg_decompress_struct& cinfo) {
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m != nullptr; m = m->next) {
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && std::memcmp(m->data, "Exif\0\0", 6) == 0) {
      return std::string(reinterpret_cast<const char*>(m->data), m->data_length);
    }
  }
  return {};
}

// The libjpeg calls run in these two functions, which hold no object with a
// destructor: an error longjmps back to their setjmp, and a longjmp must not
// skip a destructor. Each returns false after an error (message in err).
bool ReadHeader(jpeg_decompress_struct* cinfo, ErrorManager* err, std::string_view bytes) {
  if (setjmp(err->jump)) return false;
  jpeg_mem_src(cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xffff);
  jpeg_read_header(cinfo, TRUE);
  return true;
}

// Rows into out ([height][width][channels]); CMYK rows go through
// cmyk_row ([width][4]) and are converted as PIL converts them.
bool ReadPixels(jpeg_decompress_struct* cinfo, ErrorManager* err, uint8_t* out, int channels, uint8_t* cmyk_row) {
  if (setjmp(err->jump)) return false;
  jpeg_start_decompress(cinfo);
  const size_t width = cinfo->output_width;
  while (cinfo->output_scanline < cinfo->output_height) {
    uint8_t* row = out + static_cast<size_t>(cinfo->output_scanline) * width * channels;
    JSAMPROW target = cmyk_row != nullptr ? cmyk_row : row;
    jpeg_read_scanlines(cinfo, &target, 1);
    if (cmyk_row == nullptr) continue;
    // Adobe's CMYK JPEGs store inverted values (PIL's "CMYK;I" raw mode).
    const bool inverted = cinfo->saw_Adobe_marker;
    for (size_t x = 0; x < width; ++x) {
      const uint8_t* p = cmyk_row + x * 4;
      const int k = inverted ? 255 - p[3] : p[3];
      for (int c = 0; c < 3; ++c) row[x * 3 + c] = CmykChannel(inverted ? 255 - p[c] : p[c], k);
    }
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

// Owns the decompressor, so every path destroys it.
struct Decompressor {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  ScanLimit limit;
  Decompressor() {
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = OnError;
    err.pub.emit_message = OnMessage;
    jpeg_create_decompress(&cinfo);
    cinfo.mem->max_memory_to_use = kMaxLibjpegMemory;
    limit.pub = {};
    limit.pub.progress_monitor = OnProgress;
    limit.err = &err;
    cinfo.progress = &limit.pub;
  }
  ~Decompressor() { jpeg_destroy_decompress(&cinfo); }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
};

}  // namespace

StatusOr<RawImage> DecodeJpeg(std::string_view bytes, const ImageDecodeOptions& options) {
  Decompressor d;
  if (!ReadHeader(&d.cinfo, &d.err, bytes)) return CorruptImage("JPEG", d.err.message);
  OMNI_RETURN_IF_ERROR(CheckImageSize("JPEG", d.cinfo.image_width, d.cinfo.image_height, options));
  const bool cmyk = d.cinfo.jpeg_color_space == JCS_CMYK || d.cinfo.jpeg_color_space == JCS_YCCK;
  const bool gray = d.cinfo.jpeg_color_space == JCS_GRAYSCALE;
  d.cinfo.out_color_space = cmyk ? JCS_CMYK : gray ? JCS_GRAYSCALE : JCS_RGB;
  RawImage image;
  image.width = static_cast<int>(d.cinfo.image_width);
  image.height = static_cast<int>(d.cinfo.image_height);
  image.channels = gray ? 1 : 3;
  image.exif = ExifOf(d.cinfo);  // saved markers live until jpeg_finish_decompress
  image.pixels.resize(static_cast<size_t>(image.width) * image.height * image.channels);
  std::vector<uint8_t> cmyk_row(cmyk ? static_cast<size_t>(image.width) * 4 : 0);
  if (!ReadPixels(&d.cinfo, &d.err, image.pixels.data(), image.channels, cmyk ? cmyk_row.data() : nullptr)) {
    return CorruptImage("JPEG", d.err.message);
  }
  if (d.err.truncated) return CorruptImage("JPEG", "the data ends before the image does (truncated)");
  return image;
}

}  // namespace omni::media::internal
