// BigVGAN's anti-aliased periodic activation ("Activation1d" around
// SnakeBeta): the signal is upsampled 2x, SnakeBeta is applied at the higher
// rate, and the result is low-passed and downsampled 2x, so the harmonics the
// activation creates above the original Nyquist frequency do not fold back.
//
//   std::vector<float> taps = ops::KaiserSincFilter(12, 0.25, 0.3);
//   Tensor y = ops::AntiAliasedSnake(x, {.alpha = a, .beta = b, .log_scale = true}, taps);
//
// Both resamplings use the same 12-tap filter and replicate padding, as
// BigVGAN's (non-causal) UpSample1d / DownSample1d: upsampling is 2 x a
// stride-2 transposed convolution with 5 samples of padding per side, cropped
// back to 2T; downsampling is a stride-2 convolution over the row padded by 5
// on the left and 6 on the right. The output has x's length.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ops/elementwise.h"
#include "tensor/tensor.h"

namespace omni::ops {

// The Kaiser-windowed sinc low-pass of alias-free GANs (julius's recipe):
// `kernel_size` taps, cutoff and transition half-width in cycles per sample,
// normalized to sum 1. kernel_size 12, cutoff 0.25, half_width 0.3 for 2x.
std::vector<float> KaiserSincFilter(int kernel_size, double cutoff, double half_width);

// x [C, T] or [B, C, T] f32/bf16, T >= 1 -> the same shape and dtype.
// params: SnakeBeta's alpha and beta [C] (beta required); filter: 12 taps.
// lengths: empty, or one per batch row (0..T): the row's valid prefix, which
// is processed as if the row ended there (a batch of clips of different
// lengths, right-padded); the output is zero past it.
Tensor AntiAliasedSnake(const Tensor& x, const SnakeParams& params, std::span<const float> filter,
                        std::span<const int64_t> lengths = {});

}  // namespace omni::ops
