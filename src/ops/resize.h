// Image resize with PyTorch F.interpolate semantics, align_corners=False,
// antialias=False, given an output size: source coordinate
// (dst + 0.5) * in / out - 0.5; bilinear clamps negative coordinates to 0;
// bicubic uses Keys' kernel with A = -0.75 and clamps taps at the border.
// Nearest is mode="nearest" (not "nearest-exact"): source index
// min(floor(dst * (float(in) / out)), in - 1), which is dst / 2 for an exact
// x2 (the VAE decoder's upsampler); values are copied, not converted.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace omni::ops {

enum class ResizeMode { kBilinear, kBicubic, kNearest };

// x [N, C, H, W] f32/bf16 -> [N, C, out_h, out_w] in x's dtype.
Tensor Resize(const Tensor& x, int64_t out_h, int64_t out_w, ResizeMode mode);

}  // namespace omni::ops
