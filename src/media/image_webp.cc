// WebP through libwebp (still images) and libwebpdemux (an animation's first
// frame, composed on its canvas as PIL composes it; the EXIF chunk).
#include <webp/decode.h>
#include <webp/demux.h>

#include <fmt/core.h>

#include "media/image_codecs.h"

namespace omni::media::internal {
namespace {

std::string_view Vp8StatusText(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_NOT_ENOUGH_DATA: return "the data ends before the image does (truncated)";
    case VP8_STATUS_BITSTREAM_ERROR: return "a malformed bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "a feature libwebp does not support";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    default: return "the decoder failed";
  }
}

std::string ExifChunk(const WebPData& data) {
  WebPDemuxer* demux = WebPDemux(&data);
  if (demux == nullptr) return {};
  std::string exif;
  WebPChunkIterator chunk;
  if (WebPDemuxGetChunk(demux, "EXIF", 1, &chunk)) {
    exif.assign(reinterpret_cast<const char*>(chunk.chunk.bytes), chunk.chunk.size);
    WebPDemuxReleaseChunkIterator(&chunk);
  }
  WebPDemuxDelete(demux);
  return exif;
}

StatusOr<RawImage> FirstFrame(const WebPData& data, const ImageDecodeOptions& options) {
  WebPAnimDecoderOptions anim_options;
  if (!WebPAnimDecoderOptionsInit(&anim_options)) return Internal("libwebp version mismatch");
  anim_options.color_mode = MODE_RGBA;
  anim_options.use_threads = 0;
  WebPAnimDecoder* decoder = WebPAnimDecoderNew(&data, &anim_options);
  if (decoder == nullptr) return CorruptImage("WebP", "a malformed animation");
  RawImage image;
  WebPAnimInfo info;
  Status status = Status::Ok();
  uint8_t* canvas = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetInfo(decoder, &info)) {
    status = CorruptImage("WebP", "a malformed animation");
  } else if (status = CheckImageSize("WebP", info.canvas_width, info.canvas_height, options); status.ok()) {
    if (!WebPAnimDecoderGetNext(decoder, &canvas, &timestamp)) {
      status = CorruptImage("WebP", "the first frame does not decode");
    } else {
      image.width = static_cast<int>(info.canvas_width);
      image.height = static_cast<int>(info.canvas_height);
      image.channels = 4;
      image.pixels.assign(canvas, canvas + static_cast<size_t>(image.width) * image.height * 4);
    }
  }
  WebPAnimDecoderDelete(decoder);
  if (!status.ok()) return status;
  return image;
}

}  // namespace

StatusOr<RawImage> DecodeWebp(std::string_view bytes, const ImageDecodeOptions& options) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  WebPBitstreamFeatures features;
  if (VP8StatusCode st = WebPGetFeatures(data, bytes.size(), &features); st != VP8_STATUS_OK) {
    return CorruptImage("WebP", Vp8StatusText(st));
  }
  OMNI_RETURN_IF_ERROR(CheckImageSize("WebP", features.width, features.height, options));
  const WebPData webp{data, bytes.size()};
  if (features.has_animation) {
    OMNI_ASSIGN_OR_RETURN(RawImage image, FirstFrame(webp, options));
    image.exif = ExifChunk(webp);
    return image;
  }
  RawImage image;
  image.width = features.width;
  image.height = features.height;
  image.channels = features.has_alpha ? 4 : 3;
  const size_t stride = static_cast<size_t>(image.width) * image.channels;
  image.pixels.resize(stride * image.height);
  uint8_t* out = features.has_alpha
                     ? WebPDecodeRGBAInto(data, bytes.size(), image.pixels.data(), image.pixels.size(), static_cast<int>(stride))
                     : WebPDecodeRGBInto(data, bytes.size(), image.pixels.data(), image.pixels.size(), static_cast<int>(stride));
  if (out == nullptr) {
    // The header was fine; find out why the body is not.
    WebPDecoderConfig config;
    WebPInitDecoderConfig(&config);
    VP8StatusCode st = WebPDecode(data, bytes.size(), &config);
    WebPFreeDecBuffer(&config.output);
    return CorruptImage("WebP", Vp8StatusText(st == VP8_STATUS_OK ? VP8_STATUS_BITSTREAM_ERROR : st));
  }
  image.exif = ExifChunk(webp);
  return image;
}

}  // namespace omni::media::internal
