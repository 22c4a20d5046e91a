// The paged KV cache as the model sees it: per layer, one K and one V tensor
// [num_blocks, kKvBlockSize, kv_heads, head_dim] (bf16 or f32, contiguous),
// owned by the engine's block pool. A sequence's token at position p lives in
// slot (block_table[p / kKvBlockSize], p % kKvBlockSize).
//
// Thread-safety: a view is plain data; the engine must not let two forwards
// write the same blocks at once (one engine thread runs forwards).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "tensor/tensor.h"

namespace omni::models {

inline constexpr int64_t kKvBlockSize = 16;

struct KvCacheView {
  std::vector<Tensor> k;  // per layer [num_blocks, kKvBlockSize, kv_heads, head_dim]
  std::vector<Tensor> v;  // per layer, same shape and dtype as k

  int64_t num_blocks() const { return k.empty() ? 0 : k[0].dim(0); }
  DType dtype() const { return k.empty() ? DType::kF32 : k[0].dtype(); }
};

// Owning storage for a KvCacheView (tests, the simple Forward, small engines).
struct KvCacheStorage {
  KvCacheView view;
  static KvCacheStorage Allocate(int64_t num_layers, int64_t num_blocks, int64_t kv_heads, int64_t head_dim,
                                 DType dtype);
};

// OK if `view` has `num_layers` K and V tensors of shape
// [*, kKvBlockSize, kv_heads, head_dim], contiguous, all of one float dtype.
Status ValidateKvCacheView(const KvCacheView& view, int64_t num_layers, int64_t kv_heads, int64_t head_dim);

// Writes rows [n, kv_heads, head_dim] (any float dtype; converted to the
// cache's) into the slots of positions start .. start + n - 1.
void WriteKvSlots(const Tensor& cache, std::span<const int32_t> block_table, int64_t start, const Tensor& rows);

}  // namespace omni::models
