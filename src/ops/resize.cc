#include "ops/resize.h"

#include "backend/cpu/elementwise_cpu.h"

namespace omni::ops {

Tensor Resize(const Tensor& x, int64_t out_h, int64_t out_w, ResizeMode mode) {
  OMNI_CHECK(x.rank() == 4 && (x.dtype() == DType::kF32 || x.dtype() == DType::kBF16))
      << "resize input [N, C, H, W] f32/bf16: " << x.DebugString();
  OMNI_CHECK(out_h > 0 && out_w > 0 && x.dim(2) > 0 && x.dim(3) > 0) << out_h << "x" << out_w;
  Tensor out = Tensor::Empty({x.dim(0), x.dim(1), out_h, out_w}, x.dtype());
  if (out.numel() == 0) return out;
  if (mode == ResizeMode::kNearest) {
    cpu::ResizeNearest(x.Contiguous(), out);
  } else {
    cpu::Resize(x.Contiguous(), mode == ResizeMode::kBicubic, out);
  }
  return out;
}

}  // namespace omni::ops
