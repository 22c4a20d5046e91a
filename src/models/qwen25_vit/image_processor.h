// The continuous branch's image processor (Qwen2-VL's, as the reference
// serves it): smart resize to multiples of 28, PIL bicubic on 8-bit pixels,
// x / 255, CLIP mean/std, the frame tiled to temporal patch 2, and the
// patches laid out as the ViT reads them.
//
//   OMNI_ASSIGN_OR_RETURN(VisionPatches p, PreprocessImage(image, config));
//   // p.pixel_values [grid_h * grid_w, 3 * 2 * 14 * 14] f32
//
// Rows are ordered (block row, block col, row in block, col in block) for
// 2x2 merge blocks, each row laid out (channel, frame, y, x), as the
// reference's reshape/transpose gives them; the merger later takes each 4
// consecutive rows as one 2x2 block.
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "media/image.h"
#include "tensor/tensor.h"

namespace omni::models {

struct Qwen2VlImageProcessorConfig {
  int64_t min_pixels = 3136;      // 56 * 56
  int64_t max_pixels = 12845056;  // 16384 * 28 * 28, the reference processor's default
  int64_t patch_size = 14;
  int64_t temporal_patch_size = 2;
  int64_t merge_size = 2;
  std::array<float, 3> image_mean = {0.48145466f, 0.4578275f, 0.40821073f};  // CLIP
  std::array<float, 3> image_std = {0.26862954f, 0.26130258f, 0.27577711f};
};

// preprocessor_config.json of a Qwen2-VL style processor (min_pixels /
// max_pixels, or size.shortest_edge / size.longest_edge; patch_size,
// temporal_patch_size, merge_size, image_mean, image_std). Missing keys keep
// the defaults above.
StatusOr<Qwen2VlImageProcessorConfig> ParseQwen2VlImageProcessorConfig(std::string_view json,
                                                                       std::string_view source);

// The size (height, width) the image is resized to: multiples of
// patch * merge (28) near the original aspect ratio, rounded half to even as
// Python's round() does, scaled into [min_pixels, max_pixels]. The reference
// refuses an aspect ratio over 200 (InvalidArgument here); where its formula
// would give a side of 0 this gives one factor instead.
StatusOr<std::pair<int64_t, int64_t>> SmartResize(int64_t height, int64_t width,
                                                   const Qwen2VlImageProcessorConfig& config);

struct VisionPatches {
  Tensor pixel_values;  // [grid_t * grid_h * grid_w, 3 * temporal * patch * patch] f32
  int64_t grid_t = 1, grid_h = 0, grid_w = 0;  // in patches
  int64_t resized_height = 0, resized_width = 0;
};

StatusOr<VisionPatches> PreprocessImage(const media::Image& image, const Qwen2VlImageProcessorConfig& config);

}  // namespace omni::models
