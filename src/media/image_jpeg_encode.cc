// JPEG through libjpeg-turbo with the library's defaults (baseline JFIF,
// 4:2:0 chroma, islow DCT, standard Huffman tables), which are PIL's too.
#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE
#include <memory>
#include <new>

#include <jpeglib.h>
#include <jerror.h>

#include "media/image_codecs.h"

namespace omni::media::internal {
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = "";
};

[[noreturn]] void OnError(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void OnMessage(j_common_ptr, int) {}

// Compressed bytes collect in `buffer` and move to `out` a buffer at a
// time. (jpeg_mem_dest would leak its grown buffer on an error.)
struct StringDestination {
  jpeg_destination_mgr pub;
  std::string* out;
  JOCTET buffer[1 << 16];
};

bool Append(j_compress_ptr cinfo, size_t n) {
  auto* d = reinterpret_cast<StringDestination*>(cinfo->dest);
  try {
    d->out->append(reinterpret_cast<const char*>(d->buffer), n);
  } catch (const std::bad_alloc&) {
    return false;  // no exception may cross libjpeg's C frames
  }
  d->pub.next_output_byte = d->buffer;
  d->pub.free_in_buffer = sizeof(d->buffer);
  return true;
}

void InitDestination(j_compress_ptr cinfo) {
  auto* d = reinterpret_cast<StringDestination*>(cinfo->dest);
  d->pub.next_output_byte = d->buffer;
  d->pub.free_in_buffer = sizeof(d->buffer);
}

// Called when the whole buffer is full, whatever free_in_buffer says.
boolean EmptyOutputBuffer(j_compress_ptr cinfo) {
  auto* d = reinterpret_cast<StringDestination*>(cinfo->dest);
  if (!Append(cinfo, sizeof(d->buffer))) ERREXIT(cinfo, JERR_OUT_OF_MEMORY);
  return TRUE;
}

void TermDestination(j_compress_ptr cinfo) {
  auto* d = reinterpret_cast<StringDestination*>(cinfo->dest);
  if (!Append(cinfo, sizeof(d->buffer) - d->pub.free_in_buffer)) ERREXIT(cinfo, JERR_OUT_OF_MEMORY);
}

// The libjpeg calls run in this function, which holds no object with a
// destructor: an error longjmps back to its setjmp.
bool Compress(jpeg_compress_struct* cinfo, ErrorManager* err, const Image& image, int quality) {
  if (setjmp(err->jump)) return false;
  cinfo->image_width = static_cast<JDIMENSION>(image.width);
  cinfo->image_height = static_cast<JDIMENSION>(image.height);
  cinfo->input_components = 3;
  cinfo->in_color_space = JCS_RGB;
  jpeg_set_defaults(cinfo);
  jpeg_set_quality(cinfo, quality, TRUE);
  jpeg_start_compress(cinfo, TRUE);
  const size_t row_bytes = static_cast<size_t>(image.width) * 3;
  while (cinfo->next_scanline < cinfo->image_height) {
    // libjpeg takes non-const rows but only reads them.
    JSAMPROW row = const_cast<JSAMPLE*>(image.rgb.data() + cinfo->next_scanline * row_bytes);
    jpeg_write_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_compress(cinfo);
  return true;
}

// Owns the compressor, so every path destroys it.
struct Compressor {
  jpeg_compress_struct cinfo;
  ErrorManager err;
  StringDestination dest;
  explicit Compressor(std::string* out) {
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = OnError;
    err.pub.emit_message = OnMessage;
    jpeg_create_compress(&cinfo);
    dest.pub.init_destination = InitDestination;
    dest.pub.empty_output_buffer = EmptyOutputBuffer;
    dest.pub.term_destination = TermDestination;
    dest.out = out;
    cinfo.dest = &dest.pub;
  }
  ~Compressor() { jpeg_destroy_compress(&cinfo); }
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
};

}  // namespace

StatusOr<std::string> EncodeJpeg(const Image& image, int quality) {
  std::string out;
  auto c = std::make_unique<Compressor>(&out);  // 64 KiB of buffer: not on the stack
  if (!Compress(&c->cinfo, &c->err, image, quality)) {
    return Internal(std::string("the JPEG encoder failed: ") + c->err.message);
  }
  return out;
}

}  // namespace omni::media::internal
