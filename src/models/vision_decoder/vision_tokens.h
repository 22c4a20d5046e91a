// What the vision decoder is asked to draw: the model's image token string
// (the argument of its t2i_model_generation call) parsed into an aspect
// ratio, the output size it implies, and the discrete image ids
// (spec/omni-model.md, "Vision decoder details").
//
//   <|discrete_image_start|><|vision_ratio_3:4|><|vision_token|><|vision5|>...
//   <|vision_eol|>...<|vision_eof|><|discrete_image_end|>
//
// The ids are every <|visionN|> in order, the first `num_ids` kept; the ratio
// is the first <|vision_ratio_W:H|>. A missing or unknown ratio is 1:1 with a
// warning (OmniServe answers 500); fewer ids than `num_ids`, an id outside
// the table and any text that is not one of these tokens (whitespace aside)
// are InvalidArgument naming what and where.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace omni::models {

struct ImageSize {
  int width = 0;
  int height = 0;
};

// The output size of ratio "W:H" (13 ratios: 1:1, 1:2, 3:4, 3:5, 4:5, 6:9,
// 9:16 and their transposes), multiples of 16 near 768^2 pixels; nullopt for
// any other.
std::optional<ImageSize> VisionRatioSize(std::string_view ratio);

struct VisionTokens {
  std::string ratio;  // "3:4"; "1:1" when the string had none usable
  ImageSize size;
  std::vector<int32_t> ids;
  std::vector<std::string> warnings;  // e.g. the ratio that was replaced by 1:1
};

StatusOr<VisionTokens> ParseVisionTokens(std::string_view text, int num_ids = 729, int num_codes = 65536);

}  // namespace omni::models
