// Convolutions (1-D, 2-D, 3-D) and transposed convolutions (1-D, 2-D; 3-D
// works too) through oneDNN, with PyTorch's parameter meaning.
//
//   ops::ConvParams p;  p.stride = {2};  p.padding = {3};
//   ops::Conv conv(weight, bias, p);     // weight [O, I/g, k] (nn.Conv1d)
//   Tensor y = conv.Forward(x);          // x [N, I, T] -> [N, O, T']
//
// The weight is reordered once into oneDNN's packed layout at construction
// (the source tensor is not kept). Compute dtype is the weight dtype, as in
// ops::Linear; the output keeps x's dtype.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tensor/tensor.h"

namespace omni::cpu {
class CpuConv;
}

namespace omni::ops {

struct ConvParams {
  // Per spatial dim; empty means the default (1, 0, 1, 0), one value applies to all dims.
  std::vector<int64_t> stride, padding, dilation;
  std::vector<int64_t> output_padding;  // transposed only
  int64_t groups = 1;
  bool transposed = false;  // nn.ConvTranspose{1,2,3}d: weight [I, O/g, k...]
};

// Thread-safe: Forward is const and may run concurrently.
class Conv {
 public:
  Conv();
  // weight [O, I/g, k...] (or [I, O/g, k...] when transposed), f32/bf16;
  // bias [O] or undefined. The spatial rank is weight.rank() - 2.
  Conv(const Tensor& weight, const Tensor& bias, const ConvParams& params);
  ~Conv();
  Conv(Conv&&) noexcept;
  Conv& operator=(Conv&&) noexcept;

  // x [N, I, *spatial] f32/bf16 -> [N, O, *spatial'] in x's dtype.
  Tensor Forward(const Tensor& x) const;
  Shape OutputShape(const Shape& input) const;

  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }

 private:
  std::unique_ptr<cpu::CpuConv> impl_;
  std::vector<int64_t> ksize_, stride_, padding_, dilation_, output_padding_;
  int64_t in_channels_ = 0, out_channels_ = 0, groups_ = 1;
  bool transposed_ = false;
};

}  // namespace omni::ops
