#include "ops/norm.h"

#include "backend/cpu/elementwise_cpu.h"

namespace omni::ops {
namespace {

void CheckFloat(const Tensor& t) {
  OMNI_CHECK(t.dtype() == DType::kF32 || t.dtype() == DType::kBF16) << "expected f32/bf16: " << t.DebugString();
}

// An optional per-channel parameter as contiguous f32 (undefined stays so).
Tensor Param(const Tensor& t, int64_t size, const char* what) {
  if (!t.defined() || t.numel() == 0) return Tensor();
  OMNI_CHECK(t.rank() == 1 && t.dim(0) == size) << what << " must be [" << size << "]: " << t.DebugString();
  return t.dtype() == DType::kF32 ? t.Contiguous() : t.To(DType::kF32);
}

// x as contiguous [rows, last].
Tensor Rows(const Tensor& x) {
  OMNI_CHECK_GE(x.rank(), 1);
  return x.Contiguous().Reshape({x.numel() / std::max<int64_t>(x.dim(-1), 1), x.dim(-1)});
}

}  // namespace

Tensor RmsNorm(const Tensor& x, const Tensor& weight, float eps, float weight_offset) {
  CheckFloat(x);
  Tensor w = Param(weight, x.dim(-1), "rmsnorm weight");
  Tensor out = Tensor::Empty(x.shape(), x.dtype());
  if (x.numel() == 0) return out;
  Tensor xr = Rows(x);
  cpu::RmsNorm(xr, w, eps, weight_offset, out.Reshape(xr.shape()));
  return out;
}

Tensor LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  CheckFloat(x);
  Tensor w = Param(weight, x.dim(-1), "layernorm weight"), b = Param(bias, x.dim(-1), "layernorm bias");
  Tensor out = Tensor::Empty(x.shape(), x.dtype());
  if (x.numel() == 0) return out;
  Tensor xr = Rows(x);
  cpu::LayerNorm(xr, w, b, eps, out.Reshape(xr.shape()));
  return out;
}

Tensor GroupNorm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, float eps) {
  CheckFloat(x);
  OMNI_CHECK_GE(x.rank(), 2) << "groupnorm input [N, C, ...]: " << x.DebugString();
  const int64_t c = x.dim(1);
  OMNI_CHECK(groups > 0 && c % groups == 0) << c << " channels in " << groups << " groups";
  Tensor w = Param(weight, c, "groupnorm weight"), b = Param(bias, c, "groupnorm bias");
  Tensor out = Tensor::Empty(x.shape(), x.dtype());
  if (x.numel() == 0) return out;
  const Shape s3 = {x.dim(0), c, x.numel() / (x.dim(0) * c)};
  cpu::GroupNorm(x.Contiguous().Reshape(s3), groups, w, b, eps, out.Reshape(s3));
  return out;
}

Tensor Softmax(const Tensor& x) {
  CheckFloat(x);
  Tensor out = Tensor::Empty(x.shape(), x.dtype());
  if (x.numel() == 0) return out;
  Tensor xr = Rows(x);
  cpu::Softmax(xr, out.Reshape(xr.shape()));
  return out;
}

}  // namespace omni::ops
