// Gathers and layout changes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tensor/tensor.h"

namespace omni::ops {

// table [V, D] (any dtype, usually f32/bf16) and ids [...] i32/i64 ->
// [..., D] in the table's dtype. Ids must be in [0, V) (CHECKed: validate
// untrusted ids before this).
Tensor Embedding(const Tensor& table, const Tensor& ids);
// Along `dim` (negative counts from the end); all else equal, one dtype.
Tensor Concat(std::span<const Tensor> tensors, int dim);
// Views (no copy) of consecutive pieces of `sizes` along `dim`.
std::vector<Tensor> Split(const Tensor& x, std::span<const int64_t> sizes, int dim);
// A contiguous copy with dims reordered: out.dim(i) = x.dim(order[i]).
Tensor Permute(const Tensor& x, const std::vector<int>& order);

}  // namespace omni::ops
