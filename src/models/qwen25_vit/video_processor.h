// The continuous branch's video processor, as OmniServe's Omni vision
// encoder prepares a video (encoder/vision/track_b/app/model/: __init__.py's
// _process_video, qwen_vision_process.py's fetch_video, then transformers'
// Qwen2VLVideoProcessor on each chunk of frames):
//
//   OMNI_ASSIGN_OR_RETURN(auto size, VideoFrameSize(h, w, n, image_config, {}));
//   for each chunk of chunk_frames frames:
//     resized = ResizeBicubicAntialias(frame, size)        // every frame
//     OMNI_ASSIGN_OR_RETURN(VisionPatches p, PatchifyVideoFrames(resized, image_config));
//     // p.pixel_values [ceil(k/2) * grid_h * grid_w, 3 * 2 * 14 * 14] f32
//
// The reference's steps and where each is here:
//  - fetch_video: every sampled frame (media::DecodeVideo) resized to one
//    size, smart_resize(h, w, factor 28, min_pixels, max_pixels) with
//    min_pixels = VIDEO_MIN_PIXELS = 128*28*28 and max_pixels =
//    min(378*378 (_process_video's request), max(min(VIDEO_MAX_PIXELS =
//    768*28*28, VIDEO_TOTAL_PIXELS / n * 2), int(min_pixels * 1.05))), where
//    VIDEO_TOTAL_PIXELS = int(128000*28*28*0.9) unless the VIDEO_MAX_PIXELS
//    environment variable says otherwise: for 4..128 frames, 142884 (frames
//    of at most 378x378 pixels, e.g. 364x364 or 280x504). VideoFrameSize.
//  - the resize: torchvision.transforms.functional.resize on the uint8 TCHW
//    tensor, bicubic, antialias=True, which (torchvision's tensor path)
//    interpolates in float32 (PyTorch's separable antialiased kernel, Keys
//    cubic a = -0.5 widened by the scale when downsampling, horizontal pass
//    first, neither pass rounded), clamps to [0, 255] and rounds half to
//    even back to uint8. ResizeBicubicAntialias does that arithmetic; the
//    golden test measures how close (docs/MODELS.md).
//  - the frames are cut into chunks of 32 (_process_video's max_batch), each
//    run through Qwen2VLVideoProcessor and the ViT on its own. The
//    processor's own smart_resize (factor 28, the image config's
//    min_pixels/max_pixels) leaves an already-resized frame as it is for the
//    Omni model's config (3136..2073600 holds 100352..142884); should a
//    config not, the frames are resized again here, as there.
//  - per chunk: x * (1/255) and CLIP mean/std fused as transformers' fast
//    processors do ((x - mean*255) / (std*255) in f32), frames in temporal
//    pairs (an odd count repeats the last frame), rows ordered (pair,
//    block row, block col, row in block, col in block) and each row laid out
//    (channel, frame of the pair, y, x): PatchifyVideoFrames.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/status.h"
#include "media/image.h"
#include "models/qwen25_vit/image_processor.h"

namespace omni::models {

// The video bounds of the reference (qwen_vision_process.py, track_b;
// __init__.py's _process_video).
struct Qwen2VlVideoProcessorConfig {
  int64_t min_pixels = 128 * 28 * 28;            // VIDEO_MIN_PIXELS, 100352
  int64_t max_pixels = 768 * 28 * 28;            // VIDEO_MAX_PIXELS, 602112
  int64_t total_pixels = 90'316'800;             // VIDEO_TOTAL_PIXELS: int(128000 * 28 * 28 * 0.9)
  int64_t requested_max_pixels = 378 * 378;      // the "max_pixels" _process_video asks for
  int64_t chunk_frames = 32;                     // frames per processor + ViT pass (max_batch)
};

// fetch_video's per-frame bound for a video of `num_frames` sampled frames
// (Python computes it as a float; it has a fraction only for a total_pixels
// far below the default, and is floored here).
int64_t VideoFrameMaxPixels(int64_t num_frames, const Qwen2VlVideoProcessorConfig& video);

// The (height, width) every frame of a height x width video of `num_frames`
// frames is resized to: smart_resize with factor patch * merge and the
// bounds above. InvalidArgument as SmartResize (aspect ratio over 200).
StatusOr<std::pair<int64_t, int64_t>> VideoFrameSize(int64_t height, int64_t width, int64_t num_frames,
                                                      const Qwen2VlImageProcessorConfig& image,
                                                      const Qwen2VlVideoProcessorConfig& video);

// torchvision's resize of a uint8 tensor (bicubic, antialias=True): `image`
// to width x height (both >= 1), as described above.
media::Image ResizeBicubicAntialias(const media::Image& image, int width, int height);

// Frames already resized to one size (a multiple of patch * merge on each
// side) -> the ViT's patch rows, grid t = ceil(frames / temporal_patch).
// InvalidArgument for no frames, frames of different sizes or a size the
// patches do not tile.
StatusOr<VisionPatches> PatchifyVideoFrames(std::span<const media::Image> frames,
                                            const Qwen2VlImageProcessorConfig& config);

}  // namespace omni::models
