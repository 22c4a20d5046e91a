// Linear layers and activation matmuls (oneDNN behind a pimpl).
//
//   ops::Linear proj(weight, bias);   // weight [out, in] as in Hugging Face
//   Tensor y = proj.Forward(x);       // x [..., in] -> [..., out]
//
// The weight is reordered ONCE into oneDNN's packed layout at construction;
// the source tensor is not referenced afterwards (an mmap'd file can be
// closed). Compute dtype is the weight dtype: with bf16 weights, f32
// activations are rounded to bf16 first (what PyTorch autocast does) and the
// output keeps the activation dtype; accumulation is always f32.
#pragma once

#include <cstddef>
#include <memory>

#include "tensor/tensor.h"

namespace omni::cpu {
class CpuLinear;
}

namespace omni::ops {

// Thread-safe: Forward is const and may run concurrently.
class Linear {
 public:
  Linear();
  // weight [out_features, in_features] f32 or bf16 (any strides);
  // bias [out_features] or an undefined Tensor for none.
  explicit Linear(const Tensor& weight, const Tensor& bias = Tensor());
  ~Linear();
  Linear(Linear&&) noexcept;
  Linear& operator=(Linear&&) noexcept;

  // x [..., in_features] f32/bf16 -> [..., out_features], x's dtype.
  Tensor Forward(const Tensor& x) const;
  // Same, with the output in `out_dtype` (f32 or bf16): a bf16 activation
  // can feed the layer without a round trip through f32.
  Tensor Forward(const Tensor& x, DType out_dtype) const;
  // Same, writing into a preallocated contiguous out [..., out_features]
  // of either float dtype.
  void ForwardInto(const Tensor& x, const Tensor& out) const;

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  DType weight_dtype() const { return dtype_; }
  bool has_bias() const { return has_bias_; }
  size_t packed_bytes() const;

 private:
  std::unique_ptr<cpu::CpuLinear> impl_;
  int64_t in_ = 0, out_ = 0;
  DType dtype_ = DType::kF32;
  bool has_bias_ = false;
};

// Batched matmul of activations: a [..., M, K] x b [..., K, N] -> [..., M, N].
// Leading dims must match or b's may be absent/1 (broadcast). Views are fine
// when the last dim or the one before has stride 1 (so b may be
// x.Transpose(-1, -2) without a copy). f32 or bf16 (both the same); output
// in that dtype.
Tensor MatMul(const Tensor& a, const Tensor& b);

}  // namespace omni::ops
