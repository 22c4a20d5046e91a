#include "ops/rope.h"

#include <cmath>
#include <numeric>

#include "backend/cpu/elementwise_cpu.h"

namespace omni::ops {

Tensor ApplyRope(const Tensor& x, const Tensor& positions, const RopeParams& params) {
  OMNI_CHECK(positions.rank() == 1) << "positions [T]: " << positions.DebugString();
  const int64_t half = params.inv_freq.numel();
  return ApplyMultiAxisRope(x, positions.Reshape({1, positions.dim(0)}), {half}, params);
}

Tensor ApplyMultiAxisRope(const Tensor& x, const Tensor& positions, const std::vector<int64_t>& sections,
                          const RopeParams& params) {
  OMNI_CHECK(x.rank() == 3 && (x.dtype() == DType::kF32 || x.dtype() == DType::kBF16))
      << "rope input [T, H, D] f32/bf16: " << x.DebugString();
  OMNI_CHECK(positions.rank() == 2 && positions.dim(1) == x.dim(0) &&
             (positions.dtype() == DType::kI32 || positions.dtype() == DType::kI64))
      << "positions [A, T] i32/i64: " << positions.DebugString() << " for " << x.DebugString();
  const int64_t axes = positions.dim(0), half = params.inv_freq.numel();
  OMNI_CHECK(params.inv_freq.rank() == 1 && 2 * half <= x.dim(2)) << "inv_freq " << params.inv_freq.DebugString();
  OMNI_CHECK_EQ(static_cast<int64_t>(sections.size()), axes);
  OMNI_CHECK_EQ(std::accumulate(sections.begin(), sections.end(), int64_t{0}), half) << "sections must sum to rot/2";
  std::vector<int64_t> pos(positions.numel());
  Tensor pc = positions.Contiguous();
  for (size_t i = 0; i < pos.size(); ++i) {
    pos[i] = pc.dtype() == DType::kI64 ? pc.data<int64_t>()[i] : pc.data<int32_t>()[i];
  }
  std::vector<float> inv = params.inv_freq.ToFloats();
  Tensor xv = x.stride(2) == 1 ? x : x.Contiguous();
  Tensor out = Tensor::Empty(x.shape(), x.dtype());
  if (out.numel() == 0) return out;
  cpu::Rope(xv, pos, axes, inv, sections, params.style == RopeStyle::kInterleaved, params.attention_scaling, out);
  return out;
}

Tensor RopeInvFreq(int64_t dim, double theta) {
  std::vector<float> v(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) v[i] = static_cast<float>(1.0 / std::pow(theta, 2.0 * i / dim));
  return Tensor::FromFloats(v, {dim / 2});
}

}  // namespace omni::ops
