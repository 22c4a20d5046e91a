// GIF through giflib: the first frame only, read record by record (a
// thousand-frame GIF costs one frame), placed on the logical screen; the
// transparent index and the area outside the frame are transparent (and so
// end up white, see image.h).
#include <cstring>

#include <gif_lib.h>

#include <fmt/core.h>

#include "media/image_codecs.h"

namespace omni::media::internal {
namespace {

struct Cursor {
  std::string_view bytes;
  size_t at = 0;
};

int ReadBytes(GifFileType* gif, GifByteType* out, int n) {
  auto* c = static_cast<Cursor*>(gif->UserData);
  const size_t take = std::min<size_t>(static_cast<size_t>(n), c->bytes.size() - c->at);
  std::memcpy(out, c->bytes.data() + c->at, take);
  c->at += take;
  return static_cast<int>(take);
}

struct GifHandle {
  GifFileType* gif = nullptr;
  ~GifHandle() {
    int error = 0;
    if (gif != nullptr) DGifCloseFile(gif, &error);
  }
};

Status GifError(int code) {
  if (code == D_GIF_ERR_READ_FAILED || code == D_GIF_ERR_EOF_TOO_SOON) {
    return CorruptImage("GIF", "the data ends before the image does (truncated)");
  }
  const char* text = GifErrorString(code);
  return CorruptImage("GIF", text != nullptr ? text : "the decoder failed");
}

// Skips an extension's data blocks, returning its graphics control block's
// transparent index if it is one.
Status ReadExtension(GifFileType* gif, int* transparent) {
  int code = 0;
  GifByteType* block = nullptr;
  if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) return GifError(gif->Error);
  if (code == GRAPHICS_EXT_FUNC_CODE && block != nullptr && block[0] >= 4) {
    GraphicsControlBlock gcb;
    if (DGifExtensionToGCB(block[0], block + 1, &gcb) == GIF_OK) *transparent = gcb.TransparentColor;
  }
  while (block != nullptr) {
    if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) return GifError(gif->Error);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<RawImage> DecodeGif(std::string_view bytes, const ImageDecodeOptions& options) {
  Cursor cursor{bytes};
  GifHandle h;
  int error = 0;
  h.gif = DGifOpen(&cursor, ReadBytes, &error);
  if (h.gif == nullptr) return GifError(error);
  GifFileType* gif = h.gif;
  OMNI_RETURN_IF_ERROR(CheckImageSize("GIF", gif->SWidth, gif->SHeight, options));
  int transparent = NO_TRANSPARENT_COLOR;
  for (;;) {
    GifRecordType record;
    if (DGifGetRecordType(gif, &record) == GIF_ERROR) return GifError(gif->Error);
    if (record == TERMINATE_RECORD_TYPE) return CorruptImage("GIF", "the file holds no image");
    if (record == EXTENSION_RECORD_TYPE) {
      OMNI_RETURN_IF_ERROR(ReadExtension(gif, &transparent));
      continue;
    }
    if (record != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(gif) == GIF_ERROR) return GifError(gif->Error);
    break;
  }
  const GifImageDesc& frame = gif->Image;
  OMNI_RETURN_IF_ERROR(CheckImageSize("GIF", frame.Width, frame.Height, options));
  const ColorMapObject* colors = frame.ColorMap != nullptr ? frame.ColorMap : gif->SColorMap;
  if (colors == nullptr) return CorruptImage("GIF", "no color table");
  RawImage image;
  image.width = gif->SWidth;
  image.height = gif->SHeight;
  image.channels = 4;
  image.pixels.assign(static_cast<size_t>(image.width) * image.height * 4, 0);  // transparent
  std::vector<GifPixelType> line(static_cast<size_t>(frame.Width));
  // Interlaced frames arrive in four passes of rows.
  static constexpr int kPassStart[] = {0, 4, 2, 1}, kPassStep[] = {8, 8, 4, 2};
  std::vector<int> order;
  order.reserve(frame.Height);
  if (frame.Interlace) {
    for (int pass = 0; pass < 4; ++pass)
      for (int y = kPassStart[pass]; y < frame.Height; y += kPassStep[pass]) order.push_back(y);
  } else {
    for (int y = 0; y < frame.Height; ++y) order.push_back(y);
  }
  for (int y : order) {
    if (DGifGetLine(gif, line.data(), frame.Width) == GIF_ERROR) return GifError(gif->Error);
    const int cy = frame.Top + y;
    if (cy < 0 || cy >= image.height) continue;
    for (int x = 0; x < frame.Width; ++x) {
      const int cx = frame.Left + x;
      if (cx < 0 || cx >= image.width || line[x] == transparent) continue;
      uint8_t* p = image.pixels.data() + (static_cast<size_t>(cy) * image.width + cx) * 4;
      if (line[x] < colors->ColorCount) {
        const GifColorType& c = colors->Colors[line[x]];
        p[0] = c.Red, p[1] = c.Green, p[2] = c.Blue;
      }
      p[3] = 255;  // an index past the table reads as black, as PIL's zero-filled palette does
    }
  }
  return image;
}

}  // namespace omni::media::internal
