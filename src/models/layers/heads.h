// Head views of a fused projection's output, shared by the attention blocks.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace omni::models::layers {

// Columns [begin, begin + count) of a contiguous [T, width] tensor as a
// [T, count / head_dim, head_dim] view (no copy). The view does not keep `t`
// alive: use it while `t` lives.
inline Tensor HeadsView(const Tensor& t, int64_t begin, int64_t count, int64_t head_dim) {
  auto* base = static_cast<uint8_t*>(t.raw_data()) + begin * DTypeSize(t.dtype());
  return Tensor::View(base, {t.dim(0), count / head_dim, head_dim}, {t.dim(1), head_dim, 1}, t.dtype());
}

}  // namespace omni::models::layers
