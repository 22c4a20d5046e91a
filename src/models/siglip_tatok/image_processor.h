// TA-Tok's image processor (the discrete branch): the original image resized
// to size x size (384, aspect not kept) with PIL bicubic, x / 255, then
// (x - 0.5) / 0.5 (SigLIP's normalisation), channels first.
// Thread-safety: pure function.
#pragma once

#include <cstdint>

#include "media/image.h"
#include "tensor/tensor.h"

namespace omni::models {

struct TaTokImageProcessorConfig {
  int64_t size = 384;
  float mean = 0.5f;
  float std = 0.5f;
};

// [3, size, size] f32.
Tensor PreprocessTaTokImage(const media::Image& image, const TaTokImageProcessorConfig& config = {});

}  // namespace omni::models
