// BigVGAN's anti-aliased activation as one pass per row: 2x upsampling with a
// low-pass filter, SnakeBeta, 2x low-pass downsampling. The front end is
// ops/anti_alias.h; this kernel trusts its shapes.
#pragma once

#include <span>

#include "tensor/tensor.h"

namespace omni::cpu {

// x, out [B, C, T] f32 contiguous; alpha, inv_beta [C] f32 (alpha already
// exponentiated, inv_beta = 1 / (beta + 1e-9)); filter: the 12 taps used for
// both resamplings. lengths: empty, or per batch row the valid prefix (the
// row ends there: padding replicates its last valid sample; out is zero past it).
void AntiAliasedSnake(const Tensor& x, const float* alpha, const float* inv_beta, std::span<const float> filter,
                      std::span<const int64_t> lengths, const Tensor& out);

}  // namespace omni::cpu
