// Normalisations and softmax. x is f32 or bf16 (computed in f32, result in
// x's dtype); weights and biases any float dtype (used as f32).
#pragma once

#include "tensor/tensor.h"

namespace omni::ops {

// x [..., D] / sqrt(mean(x^2) + eps) * (weight + weight_offset).
// weight [D] or undefined; weight_offset = 1 gives Gemma's (1 + w).
Tensor RmsNorm(const Tensor& x, const Tensor& weight, float eps, float weight_offset = 0.f);
// Over the last dim; weight/bias [D] or undefined.
Tensor LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps);
// x [N, C, *spatial]; statistics per (n, group of C/groups channels);
// weight/bias [C] or undefined (PyTorch nn.GroupNorm).
Tensor GroupNorm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, float eps);
// Softmax over the last dim.
Tensor Softmax(const Tensor& x);

}  // namespace omni::ops
