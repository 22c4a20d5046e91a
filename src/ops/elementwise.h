// Elementwise arithmetic and activations. Float inputs are f32 or bf16,
// computed in f32; results keep the input dtype (mixed f32/bf16 binary ops
// give f32). Binary ops broadcast as numpy does.
#pragma once

#include <optional>
#include <span>

#include "tensor/tensor.h"

namespace omni::ops {

Tensor Add(const Tensor& a, const Tensor& b);
Tensor Sub(const Tensor& a, const Tensor& b);
Tensor Mul(const Tensor& a, const Tensor& b);
Tensor Div(const Tensor& a, const Tensor& b);
Tensor Scale(const Tensor& x, float factor);

enum class GeluApprox { kNone, kTanh };  // kNone: exact erf form
Tensor Gelu(const Tensor& x, GeluApprox approx = GeluApprox::kNone);
Tensor Silu(const Tensor& x);
Tensor Tanh(const Tensor& x);
// silu(gate) * up; gate and up [..., F] of one shape. `out_dtype` (f32 or
// bf16) overrides the usual result dtype, e.g. bf16 for the bf16 linear
// that reads it next.
Tensor SwiGlu(const Tensor& gate, const Tensor& up, std::optional<DType> out_dtype = std::nullopt);

// x converted to `dtype` (f32 or bf16; round to nearest even), in parallel;
// x itself when it already has that dtype.
Tensor Cast(const Tensor& x, DType dtype);

// Snake / SnakeBeta (BigVGAN): x + 1/beta * sin^2(alpha * x), per channel.
struct SnakeParams {
  Tensor alpha;            // [C]
  Tensor beta;             // [C], or undefined for plain Snake (beta = alpha)
  bool log_scale = false;  // alpha/beta hold logs (BigVGAN alpha_logscale)
};
// x [C, T] or [B, C, T].
Tensor Snake(const Tensor& x, const SnakeParams& params);

// Unnormalized softmax weights in place: v[i] = e^(v[i] - shift), exactly 0
// where v[i] - shift < -87 (e^-87 is near float's smallest normal). Returns
// their sum, accumulated in double. Vectorized: a sampler calls it on a whole
// vocabulary per sequence per step.
double ExpShiftedInPlace(std::span<float> v, float shift);

// The broadcast shape of a and b (numpy rules); CHECK-fails if incompatible.
Shape BroadcastShape(const Shape& a, const Shape& b);

}  // namespace omni::ops
