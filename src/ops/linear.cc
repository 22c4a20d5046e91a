#include "ops/linear.h"

#include "backend/cpu/matmul_cpu.h"

namespace omni::ops {
namespace {

bool IsFloat(DType d) { return d == DType::kF32 || d == DType::kBF16; }

// A view with the leading dims folded into one, copying only if needed.
Tensor As3d(const Tensor& t) {
  const int r = t.rank();
  if (r == 2) return Tensor::View(t.raw_data(), {1, t.dim(0), t.dim(1)},
                                  {t.dim(0) * t.dim(1), t.stride(0), t.stride(1)}, t.dtype());
  bool inner_ok = t.stride(-1) == 1 || t.stride(-2) == 1;
  Tensor c = inner_ok ? t : t.Contiguous();
  // Leading dims must fold into one uniform stride.
  int64_t batch = 1;
  for (int d = 0; d < r - 2; ++d) batch *= c.dim(d);
  bool foldable = true;
  for (int d = 0; d + 1 < r - 2; ++d) {
    if (c.dim(d) != 1 && c.stride(d) != c.stride(d + 1) * c.dim(d + 1)) foldable = false;
  }
  if (!foldable) c = c.Contiguous();
  int64_t bstride = r > 2 ? c.stride(r - 3) : 0;
  if (batch == 1) bstride = c.dim(-2) * c.dim(-1);
  return Tensor::View(c.raw_data(), {batch, c.dim(-2), c.dim(-1)}, {bstride, c.stride(-2), c.stride(-1)},
                      c.dtype());
}

}  // namespace

Linear::Linear() = default;
Linear::~Linear() = default;
Linear::Linear(Linear&&) noexcept = default;
Linear& Linear::operator=(Linear&&) noexcept = default;

Linear::Linear(const Tensor& weight, const Tensor& bias) {
  OMNI_CHECK_EQ(weight.rank(), 2) << weight.DebugString();
  OMNI_CHECK(IsFloat(weight.dtype())) << "linear weight must be f32 or bf16: " << weight.DebugString();
  out_ = weight.dim(0);
  in_ = weight.dim(1);
  dtype_ = weight.dtype();
  has_bias_ = bias.defined() && bias.numel() > 0;
  if (has_bias_) {
    OMNI_CHECK(bias.rank() == 1 && bias.dim(0) == out_) << "bias " << bias.DebugString();
  }
  impl_ = std::make_unique<cpu::CpuLinear>(weight.Contiguous(), has_bias_ ? bias : Tensor());
}

size_t Linear::packed_bytes() const { return impl_ ? impl_->packed_bytes() : 0; }

Tensor Linear::Forward(const Tensor& x) const { return Forward(x, x.dtype()); }

Tensor Linear::Forward(const Tensor& x, DType out_dtype) const {
  OMNI_CHECK(x.rank() >= 1) << x.DebugString();
  Shape shape = x.shape();
  shape.back() = out_;
  Tensor out = Tensor::Empty(shape, out_dtype);
  ForwardInto(x, out);
  return out;
}

void Linear::ForwardInto(const Tensor& x, const Tensor& out) const {
  OMNI_CHECK(impl_ != nullptr) << "Linear used before construction";
  OMNI_CHECK(IsFloat(x.dtype())) << x.DebugString();
  OMNI_CHECK_EQ(x.dim(-1), in_) << "linear input " << x.DebugString();
  OMNI_CHECK(out.is_contiguous() && IsFloat(out.dtype()) && out.dim(-1) == out_ &&
             out.numel() / out_ == x.numel() / in_)
      << "linear output " << out.DebugString() << " for input " << x.DebugString();
  const int64_t m = x.numel() / in_;
  Tensor x2 = x.Contiguous().Reshape({m, in_});
  impl_->Forward(x2, out.Reshape({m, out_}));
}

Tensor MatMul(const Tensor& a, const Tensor& b) {
  OMNI_CHECK(a.rank() >= 2 && b.rank() >= 2) << a.DebugString() << " x " << b.DebugString();
  OMNI_CHECK(IsFloat(a.dtype()) && a.dtype() == b.dtype()) << a.DebugString() << " x " << b.DebugString();
  OMNI_CHECK_EQ(a.dim(-1), b.dim(-2)) << a.DebugString() << " x " << b.DebugString();
  Shape lead_a(a.shape().begin(), a.shape().end() - 2);
  Shape lead_b(b.shape().begin(), b.shape().end() - 2);
  const bool b_broadcast = NumElements(lead_b) == 1;
  OMNI_CHECK(b_broadcast || lead_a == lead_b) << a.DebugString() << " x " << b.DebugString();
  Shape out_shape = lead_a;
  out_shape.push_back(a.dim(-2));
  out_shape.push_back(b.dim(-1));
  Tensor out = Tensor::Empty(out_shape, a.dtype());
  if (out.numel() == 0) return out;
  if (a.dim(-1) == 0) return Tensor::Zeros(out_shape, a.dtype());
  Tensor a3 = As3d(a), b3 = As3d(b);
  Tensor o3 = out.Reshape({a3.dim(0), a.dim(-2), b.dim(-1)});
  cpu::MatMul(a3, b3, o3);
  return out;
}

}  // namespace omni::ops
