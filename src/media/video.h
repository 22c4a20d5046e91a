// Decoded video: the RGB frames the Omni model's video input is built from,
// sampled as the reference samples them.
//
//   OMNI_ASSIGN_OR_RETURN(VideoFrames video, DecodeVideo(bytes));
//   // video.frames: 4..128 full-size RGB frames, an even count
//
// The reference is OmniServe's vision encoder for the Omni model
// (encoder/vision/track_b/app/model/qwen_vision_process.py, adapted from
// Qwen's qwen-vl-utils; __init__.py's _process_video), which reads a video
// given as bytes with decord and samples it so:
//  - total_frames: decord's len(VideoReader), the number of packets of the
//    video stream (decord indexes them all when it opens the file);
//    video_fps: decord's get_avg_fps(), the stream's avg_frame_rate;
//  - nframes (smart_nframes, FPS = 2.0, FPS_MIN_FRAMES = 4, FPS_MAX_FRAMES =
//    128, FRAME_FACTOR = 2):
//      min_frames = ceil(4 / 2) * 2; max_frames = floor(min(128, total) / 2) * 2
//      n = total / video_fps * 2.0
//      n = floor(min(min(max(n, min_frames), max_frames), total) / 2) * 2
//    and fewer than 2 is an error (a one-frame video is refused). OmniServe's
//    other vision track (track_a, the 32B model) has FPS_MAX_FRAMES = 170;
//    the Omni model's is 128 (the spec: "4 to 128 frames");
//  - which frames: torch.linspace(0, total - 1, n).round(), computed in
//    float32 as torch computes it (ATen's linspace kernel: the first half
//    from the start, the second half back from the end) and rounded half to
//    even; the i-th index counts frames in decoding (presentation) order;
//  - rotation: decord turns the frame by the stream's display matrix
//    (-av_display_rotation_get, else a "rotate" tag) when it is 90, 180 or
//    270 degrees (transpose filters), so width and height swap for 90/270;
//    flips in the matrix are ignored, as decord and FFmpeg 5.1 ignore them;
//  - sample_fps = n / total * video_fps and the duration total / video_fps
//    are what the reference hands on with the frames.
// The reference then resizes every frame at decode time (fetch_video):
// smart_resize(h, w, factor 28, min_pixels 128*28*28 = 100352, max_pixels
// 378*378 = 142884) and torchvision's bicubic resize with antialias. That
// resize is the vision processor's step in omniserve; DecodeVideo returns the
// frames at their full (rotated) size.
//
// Frames are decoded sequentially and only the sampled ones are kept, so
// memory is the n output frames plus one held frame, whatever the length. The
// file is read twice: a demuxing pass counts the packets (the reference's
// total_frames, with no decoding), then a decoding pass keeps the sampled
// frames. Frames come out as 8-bit RGB via libswscale (bicubic, accurate
// rounding, bit-exact: the same output on every CPU), using the colour matrix
// the frame declares (BT.601 when unspecified, as swscale and decord assume)
// and its range (limited unless the frame says full or the format is a yuvj
// one). A frame whose size differs from the stream's first is scaled to that
// size, as decord's fixed filter graph does. Should the decoder give fewer
// frames than packets (corrupt packets skipped, VP8 hidden frames), sampled
// indices past the last decoded frame repeat it.
//
// Limits, each checked as early as possible:
//  - the frame size (header) against max_pixels, before decoding; the decoder
//    also refuses larger frames should the header lie;
//  - the duration in the header against max_seconds, before any packet is
//    read; then the packets' own timestamps and count (max_total_frames)
//    during the demuxing pass, so a header that lies stays bounded.
//
// Errors: InvalidArgument for empty, truncated or corrupt data and for a
// video with fewer than two frames; UnsupportedMedia for bytes that are not
// a video (an image, an audio file, text: "the video has no video stream",
// "... is a PNG image, not a video") or a codec FFmpeg cannot decode;
// PayloadTooLarge over max_seconds, max_total_frames or max_pixels.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "media/image.h"
#include "media/media_kind.h"

namespace omni::media {

struct VideoDecodeOptions {
  // The reference's sampling (qwen_vision_process.py, track_b).
  double fps = 2.0;     // FPS
  int min_frames = 4;   // FPS_MIN_FRAMES
  int max_frames = 128;  // FPS_MAX_FRAMES
  // Bounds on the work, refused with PayloadTooLarge.
  double max_seconds = 600;
  int64_t max_pixels = 16'000'000;      // per frame
  int64_t max_total_frames = 100'000;   // packets of the video stream
  int decoder_threads = 2;
};

struct VideoFrames {
  std::vector<Image> frames;           // [n], each [height][width][3], n even, in time order
  std::vector<int64_t> frame_indices;  // [n] the sampled frame numbers, 0-based, decoding order
  std::vector<double> timestamps;      // [n] seconds from the stream's start
  double source_fps = 0;               // the stream's average frame rate (decord's get_avg_fps)
  double sample_fps = 0;               // n / total_frames * source_fps, the reference's "fps"
  double seconds = 0;                  // total_frames / source_fps, the reference's duration
  int64_t total_frames = 0;            // packets of the video stream (decord's len())
};

// What DecodeVideo learnt besides the frames, for answers and logs.
struct VideoInfo {
  MediaKind kind = MediaKind::kUnknown;  // sniffed; kUnknown for e.g. MPEG-TS, FLV
  std::string container;                 // FFmpeg's demuxer name, "mov,mp4,m4a,3gp,3g2,mj2"
  std::string codec;                     // "h264", "vp9"
  int width = 0;                         // as stored, before the rotation
  int height = 0;
  int rotation = 0;                      // clockwise degrees applied: 0, 90, 180 or 270
};

StatusOr<VideoFrames> DecodeVideo(std::string_view bytes, const VideoDecodeOptions& options = {},
                                  VideoInfo* info = nullptr);

// The sampling rule alone (smart_nframes): how many frames of a video of
// `total_frames` frames at `video_fps` are kept. InvalidArgument below 2.
StatusOr<int> SampledFrameCount(int64_t total_frames, double video_fps, const VideoDecodeOptions& options = {});

// Which frames (torch.linspace(0, total_frames - 1, n).round() in float32):
// n indices in [0, total_frames), non-decreasing.
std::vector<int64_t> SampledFrameIndices(int64_t total_frames, int n);

}  // namespace omni::media
