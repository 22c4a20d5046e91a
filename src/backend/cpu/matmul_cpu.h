// oneDNN matmul kernels behind dnnl-free declarations. The front ends are in
// ops/linear.h; only src/ops/*.cc include this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tensor/tensor.h"

namespace omni::cpu {

// The most rows (tokens) a Linear with packed bf16 weights runs on our own
// GEMV (kernels.h's packed_linear); more go to oneDNN's matmul where it has
// one for the level.
constexpr int64_t kGemvMaxM = 16;

// Weights packed once into oneDNN's preferred blocked layout; matmul
// primitives cached per (M, activation dtype). Thread-safe: Forward may run
// from many threads (the cache is guarded by a mutex inside Impl).
class CpuLinear {
 public:
  // weight [N, K] contiguous f32 or bf16; bias [N] (any float dtype) or undefined.
  CpuLinear(const Tensor& weight, const Tensor& bias);
  ~CpuLinear();
  CpuLinear(const CpuLinear&) = delete;
  CpuLinear& operator=(const CpuLinear&) = delete;

  // x [M, K] contiguous f32/bf16; out [M, N] contiguous f32/bf16, preallocated.
  void Forward(const Tensor& x, const Tensor& out) const;
  size_t packed_bytes() const;

 private:
  // M <= 16 with packed bf16 weights: our AVX512-BF16 GEMV on the same packed
  // bytes. x [M, K] bf16 contiguous.
  void SmallM(const Tensor& x, const Tensor& out) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// a [B, M, K], b [Bb, K, N] with Bb == B or 1 (broadcast), out [B, M, N]
// contiguous. a and b may be strided views as long as one of their two last
// strides is 1. All three share one float dtype (f32 or bf16).
void MatMul(const Tensor& a, const Tensor& b, const Tensor& out);

}  // namespace omni::cpu
