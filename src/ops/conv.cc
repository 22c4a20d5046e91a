#include "ops/conv.h"

#include "backend/cpu/conv_cpu.h"

namespace omni::ops {
namespace {

std::vector<int64_t> PerDim(const std::vector<int64_t>& v, int n, int64_t def, const char* what) {
  if (v.empty()) return std::vector<int64_t>(n, def);
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  OMNI_CHECK_EQ(static_cast<int>(v.size()), n) << what << " needs one value per spatial dim";
  return v;
}

}  // namespace

Conv::Conv() = default;
Conv::~Conv() = default;
Conv::Conv(Conv&&) noexcept = default;
Conv& Conv::operator=(Conv&&) noexcept = default;

Conv::Conv(const Tensor& weight, const Tensor& bias, const ConvParams& params) {
  const int n = weight.rank() - 2;
  OMNI_CHECK(n >= 1 && n <= 3) << "conv weight [O, I/g, k...] with 1-3 spatial dims: " << weight.DebugString();
  OMNI_CHECK(weight.dtype() == DType::kF32 || weight.dtype() == DType::kBF16) << weight.DebugString();
  groups_ = params.groups;
  transposed_ = params.transposed;
  OMNI_CHECK(groups_ >= 1 && weight.dim(0) % groups_ == 0) << "groups " << groups_ << " for " << weight.DebugString();
  stride_ = PerDim(params.stride, n, 1, "stride");
  padding_ = PerDim(params.padding, n, 0, "padding");
  dilation_ = PerDim(params.dilation, n, 1, "dilation");
  output_padding_ = PerDim(params.output_padding, n, 0, "output_padding");
  for (int i = 0; i < n; ++i) {
    ksize_.push_back(weight.dim(2 + i));
    OMNI_CHECK(stride_[i] >= 1 && dilation_[i] >= 1 && padding_[i] >= 0) << "bad conv params";
    OMNI_CHECK(output_padding_[i] == 0 || transposed_) << "output_padding needs transposed";
    // oneDNN expresses output_padding as less right padding; it cannot go negative.
    OMNI_CHECK(output_padding_[i] <= padding_[i] && output_padding_[i] < stride_[i])
        << "output_padding " << output_padding_[i] << " > padding " << padding_[i] << " is unsupported";
  }
  in_channels_ = transposed_ ? weight.dim(0) : weight.dim(1) * groups_;
  out_channels_ = transposed_ ? weight.dim(1) * groups_ : weight.dim(0);
  const bool has_bias = bias.defined() && bias.numel() > 0;
  if (has_bias) OMNI_CHECK(bias.rank() == 1 && bias.dim(0) == out_channels_) << "bias " << bias.DebugString();
  cpu::ConvSpec spec{n, stride_, padding_, dilation_, output_padding_, groups_, transposed_};
  impl_ = std::make_unique<cpu::CpuConv>(weight.Contiguous(), has_bias ? bias : Tensor(), spec);
}

Shape Conv::OutputShape(const Shape& input) const {
  const int n = static_cast<int>(ksize_.size());
  OMNI_CHECK(static_cast<int>(input.size()) == n + 2 && input[1] == in_channels_)
      << "conv input " << ShapeToString(input) << " for " << in_channels_ << " channels, " << n << "-D";
  Shape out = {input[0], out_channels_};
  for (int i = 0; i < n; ++i) {
    const int64_t ext = (ksize_[i] - 1) * dilation_[i] + 1;
    const int64_t size = transposed_ ? (input[2 + i] - 1) * stride_[i] - 2 * padding_[i] + ext + output_padding_[i]
                                     : (input[2 + i] + 2 * padding_[i] - ext) / stride_[i] + 1;
    OMNI_CHECK(input[2 + i] > 0 && size > 0) << "conv input " << ShapeToString(input) << " too small";
    out.push_back(size);
  }
  return out;
}

Tensor Conv::Forward(const Tensor& x) const {
  OMNI_CHECK(impl_ != nullptr) << "Conv used before construction";
  OMNI_CHECK(x.dtype() == DType::kF32 || x.dtype() == DType::kBF16) << x.DebugString();
  Tensor out = Tensor::Empty(OutputShape(x.shape()), x.dtype());
  if (out.numel() == 0) return out;
  impl_->Forward(x.Contiguous(), out);
  return out;
}

}  // namespace omni::ops
