// Elementwise, normalisation, RoPE, resize and gather kernels. Front ends in
// ops/{elementwise,norm,rope,resize,shape_ops}.h check shapes and dtypes;
// these kernels trust them. Float tensors are f32 or bf16, computed in f32.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tensor/tensor.h"

namespace omni::cpu {

enum class UnaryKind { kCopy, kScale, kGeluErf, kGeluTanh, kSilu, kTanh };
enum class BinaryKind { kAdd, kSub, kMul, kDiv, kSwiGlu };

// x, out: same shape, contiguous, either float dtype (kCopy converts).
// `arg` is the factor for kScale.
void Unary(UnaryKind kind, const Tensor& x, const Tensor& out, float arg);
// a, b: any strides, shape broadcast to out's (size-1 dims repeat, missing
// leading dims allowed); out contiguous. kSwiGlu: silu(a) * b.
void Binary(BinaryKind kind, const Tensor& a, const Tensor& b, const Tensor& out);
// x, out [B, C, T] contiguous; alpha, beta [C] f32 (beta may be undefined:
// then 1/alpha). log_scale: the parameters hold log values (exp first).
void Snake(const Tensor& x, const Tensor& alpha, const Tensor& beta, bool log_scale, const Tensor& out);

// v[i] = e^(v[i] - shift), 0 below e^-87; returns the sum. One thread.
double ExpShifted(std::span<float> v, float shift);

// x, out [rows, d] contiguous; weight/bias [d] f32 or undefined.
void RmsNorm(const Tensor& x, const Tensor& weight, float eps, float weight_offset, const Tensor& out);
void LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, const Tensor& out);
// x, out [N, C, S] contiguous; weight/bias [C] f32 or undefined.
void GroupNorm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, float eps,
               const Tensor& out);
void Softmax(const Tensor& x, const Tensor& out);  // over the last dim of [rows, d]

// x [T, H, D] (last dim contiguous, other strides free), out [T, H, D]
// contiguous. positions [axes, T] i64; inv_freq [rot/2] f32; sections per
// axis (sum rot/2). Dims >= rot are copied unchanged.
void Rope(const Tensor& x, const std::vector<int64_t>& positions, int64_t axes, const std::vector<float>& inv_freq,
          const std::vector<int64_t>& sections, bool interleaved, float attention_scaling, const Tensor& out);

// x [N, C, H, W] contiguous -> out [N, C, OH, OW]; align_corners = false.
void Resize(const Tensor& x, bool bicubic, const Tensor& out);
// x [N, C, H, W] contiguous -> out [N, C, OH, OW] of x's dtype, PyTorch's
// mode="nearest" given an output size (values copied, not converted).
void ResizeNearest(const Tensor& x, const Tensor& out);

// table [V, D] contiguous; ids as i64 [n]; out [n, D] (table dtype).
void Embedding(const Tensor& table, std::span<const int64_t> ids, const Tensor& out);

}  // namespace omni::cpu
