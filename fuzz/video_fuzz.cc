// libFuzzer target for the media layer's video path: the sniffer, FFmpeg's
// demuxers over our in-memory AVIOContext (ffmpeg_io.cc), the packet count,
// the decoders, the sampling rule, the conversion to RGB and the rotation.
//
// For any input: DecodeVideo returns frames or a Status with a message, never
// crashes, reads out of bounds or runs past its limits; what it returns is
// what the sampling rule allows: an even count of 2..max_frames frames, at
// non-decreasing indices below the frame count, all of the same size, each as
// large as its pixel buffer says. FFmpeg itself is the system's build, not
// instrumented: the fuzzer steers by our code's branches and catches what
// FFmpeg does to our buffers and limits.
#include <cmath>
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "media/video.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni::media;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // Small limits keep every accepted video cheap (and check the limits).
  const VideoDecodeOptions options{.max_frames = 16,
                                   .max_seconds = 30,
                                   .max_pixels = 1 << 16,
                                   .max_total_frames = 600,
                                   .decoder_threads = 1};
  VideoInfo info;
  omni::StatusOr<VideoFrames> video = DecodeVideo(bytes, options, &info);
  if (!video.ok()) {
    OMNI_CHECK(!video.status().message().empty());
    OMNI_CHECK(video.status().code() != omni::StatusCode::kInternal) << video.status().ToString();
    return 0;
  }
  const size_t n = video->frames.size();
  OMNI_CHECK(n >= 2 && n <= 16 && n % 2 == 0) << n;
  OMNI_CHECK_EQ(video->frame_indices.size(), n);
  OMNI_CHECK_EQ(video->timestamps.size(), n);
  OMNI_CHECK(video->total_frames >= static_cast<int64_t>(n) && video->total_frames <= options.max_total_frames);
  OMNI_CHECK(video->source_fps > 0 && std::isfinite(video->source_fps));
  OMNI_CHECK(info.rotation == 0 || info.rotation == 90 || info.rotation == 180 || info.rotation == 270);
  const bool swapped = info.rotation == 90 || info.rotation == 270;
  for (size_t i = 0; i < n; ++i) {
    const Image& frame = video->frames[i];
    OMNI_CHECK_EQ(frame.width, swapped ? info.height : info.width);
    OMNI_CHECK_EQ(frame.height, swapped ? info.width : info.height);
    OMNI_CHECK(static_cast<int64_t>(frame.width) * frame.height <= options.max_pixels);
    OMNI_CHECK_EQ(frame.rgb.size(), static_cast<size_t>(frame.width) * frame.height * 3);
    OMNI_CHECK(video->frame_indices[i] >= 0 && video->frame_indices[i] < video->total_frames);
    OMNI_CHECK(i == 0 || video->frame_indices[i] >= video->frame_indices[i - 1]);
    OMNI_CHECK(std::isfinite(video->timestamps[i]) && video->timestamps[i] >= 0);
  }
  return 0;
}
