#include "ops/elementwise.h"

#include "backend/cpu/elementwise_cpu.h"

namespace omni::ops {
namespace {

bool IsF32OrBf16(DType d) { return d == DType::kF32 || d == DType::kBF16; }

void CheckFloat(const Tensor& t) { OMNI_CHECK(IsF32OrBf16(t.dtype())) << "expected f32/bf16: " << t.DebugString(); }

Tensor RunUnary(cpu::UnaryKind kind, const Tensor& x, float arg = 0) {
  CheckFloat(x);
  Tensor xc = x.Contiguous();
  Tensor out = Tensor::Empty(x.shape(), x.dtype());
  cpu::Unary(kind, xc, out, arg);
  return out;
}

Tensor RunBinary(cpu::BinaryKind kind, const Tensor& a, const Tensor& b, std::optional<DType> out_dtype = std::nullopt) {
  CheckFloat(a);
  CheckFloat(b);
  const DType dt = out_dtype.value_or(a.dtype() == b.dtype() ? a.dtype() : DType::kF32);
  OMNI_CHECK(IsF32OrBf16(dt)) << "output dtype " << DTypeName(dt);
  Tensor out = Tensor::Empty(BroadcastShape(a.shape(), b.shape()), dt);
  cpu::Binary(kind, a, b, out);
  return out;
}

Tensor F32Param(const Tensor& t, int64_t size, const char* what) {
  OMNI_CHECK(t.rank() == 1 && t.dim(0) == size) << what << " must be [" << size << "]: " << t.DebugString();
  return t.dtype() == DType::kF32 ? t.Contiguous() : t.To(DType::kF32);
}

}  // namespace

Shape BroadcastShape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    OMNI_CHECK(da == db || da == 1 || db == 1) << "cannot broadcast " << ShapeToString(a) << " with "
                                               << ShapeToString(b);
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

Tensor Add(const Tensor& a, const Tensor& b) { return RunBinary(cpu::BinaryKind::kAdd, a, b); }
Tensor Sub(const Tensor& a, const Tensor& b) { return RunBinary(cpu::BinaryKind::kSub, a, b); }
Tensor Mul(const Tensor& a, const Tensor& b) { return RunBinary(cpu::BinaryKind::kMul, a, b); }
Tensor Div(const Tensor& a, const Tensor& b) { return RunBinary(cpu::BinaryKind::kDiv, a, b); }
Tensor Scale(const Tensor& x, float factor) { return RunUnary(cpu::UnaryKind::kScale, x, factor); }

Tensor Gelu(const Tensor& x, GeluApprox approx) {
  return RunUnary(approx == GeluApprox::kTanh ? cpu::UnaryKind::kGeluTanh : cpu::UnaryKind::kGeluErf, x);
}
Tensor Silu(const Tensor& x) { return RunUnary(cpu::UnaryKind::kSilu, x); }
Tensor Tanh(const Tensor& x) { return RunUnary(cpu::UnaryKind::kTanh, x); }

double ExpShiftedInPlace(std::span<float> v, float shift) { return cpu::ExpShifted(v, shift); }

Tensor SwiGlu(const Tensor& gate, const Tensor& up, std::optional<DType> out_dtype) {
  OMNI_CHECK(gate.shape() == up.shape()) << gate.DebugString() << " vs " << up.DebugString();
  return RunBinary(cpu::BinaryKind::kSwiGlu, gate, up, out_dtype);
}

Tensor Cast(const Tensor& x, DType dtype) {
  CheckFloat(x);
  OMNI_CHECK(IsF32OrBf16(dtype)) << "cast to " << DTypeName(dtype);
  if (x.dtype() == dtype) return x;
  Tensor out = Tensor::Empty(x.shape(), dtype);
  cpu::Unary(cpu::UnaryKind::kCopy, x.Contiguous(), out, 0.f);
  return out;
}

Tensor Snake(const Tensor& x, const SnakeParams& params) {
  CheckFloat(x);
  OMNI_CHECK(x.rank() == 2 || x.rank() == 3) << "snake input [C, T] or [B, C, T]: " << x.DebugString();
  const int64_t c = x.dim(-2);
  Tensor alpha = F32Param(params.alpha, c, "snake alpha");
  Tensor beta = params.beta.defined() ? F32Param(params.beta, c, "snake beta") : Tensor();
  Tensor x3 = x.Contiguous().Reshape({x.rank() == 3 ? x.dim(0) : 1, c, x.dim(-1)});
  Tensor out = Tensor::Empty(x.shape(), x.dtype());
  cpu::Snake(x3, alpha, beta, params.log_scale, out.Reshape(x3.shape()));
  return out;
}

}  // namespace omni::ops
