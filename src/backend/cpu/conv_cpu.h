// oneDNN convolution / deconvolution behind a dnnl-free declaration.
// Front end: ops/conv.h (which checks shapes and computes output sizes).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "tensor/tensor.h"

namespace omni::cpu {

struct ConvSpec {
  int spatial = 1;  // 1, 2 or 3
  std::vector<int64_t> stride, padding, dilation, output_padding;  // [spatial] each, PyTorch meaning
  int64_t groups = 1;
  bool transposed = false;
};

// Weights packed once; primitives cached per input shape. Thread-safe.
class CpuConv {
 public:
  // weight in PyTorch layout: conv [O, I/g, k...], transposed [I, O/g, k...],
  // contiguous f32/bf16; bias [O] or undefined.
  CpuConv(const Tensor& weight, const Tensor& bias, const ConvSpec& spec);
  ~CpuConv();
  CpuConv(const CpuConv&) = delete;
  CpuConv& operator=(const CpuConv&) = delete;

  // x [N, C, *] contiguous f32/bf16; out [N, O, *] contiguous, x's dtype.
  void Forward(const Tensor& x, const Tensor& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace omni::cpu
