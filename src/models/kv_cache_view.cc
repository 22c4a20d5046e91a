#include "models/kv_cache_view.h"

#include <cstring>
#include <string>

#include "ops/elementwise.h"

namespace omni::models {

KvCacheStorage KvCacheStorage::Allocate(int64_t num_layers, int64_t num_blocks, int64_t kv_heads, int64_t head_dim,
                                        DType dtype) {
  KvCacheStorage s;
  for (int64_t l = 0; l < num_layers; ++l) {
    s.view.k.push_back(Tensor::Zeros({num_blocks, kKvBlockSize, kv_heads, head_dim}, dtype));
    s.view.v.push_back(Tensor::Zeros({num_blocks, kKvBlockSize, kv_heads, head_dim}, dtype));
  }
  return s;
}

Status ValidateKvCacheView(const KvCacheView& view, int64_t num_layers, int64_t kv_heads, int64_t head_dim) {
  if (static_cast<int64_t>(view.k.size()) != num_layers || static_cast<int64_t>(view.v.size()) != num_layers) {
    return InvalidArgument("kv cache has " + std::to_string(view.k.size()) + "/" + std::to_string(view.v.size()) +
                           " K/V layers, model has " + std::to_string(num_layers));
  }
  const DType dtype = view.dtype();
  if (dtype != DType::kF32 && dtype != DType::kBF16) return InvalidArgument("kv cache must be f32 or bf16");
  const int64_t blocks = view.num_blocks();
  for (int64_t l = 0; l < num_layers; ++l) {
    for (const Tensor* t : {&view.k[l], &view.v[l]}) {
      const Shape want = {blocks, kKvBlockSize, kv_heads, head_dim};
      if (t->shape() != want || t->dtype() != dtype || !t->is_contiguous()) {
        return InvalidArgument("kv cache layer " + std::to_string(l) + " is " + t->DebugString() + ", expected " +
                               ShapeToString(want) + " contiguous " + std::string(DTypeName(dtype)));
      }
    }
  }
  return Status::Ok();
}

void WriteKvSlots(const Tensor& cache, std::span<const int32_t> block_table, int64_t start, const Tensor& rows) {
  const int64_t n = rows.dim(0);
  const Tensor src = ops::Cast(rows, cache.dtype()).Contiguous();
  const size_t row_bytes = static_cast<size_t>(cache.dim(2) * cache.dim(3)) * DTypeSize(cache.dtype());
  OMNI_CHECK_EQ(src.nbytes(), row_bytes * n);
  auto* dst = static_cast<uint8_t*>(cache.raw_data());
  const auto* from = static_cast<const uint8_t*>(src.raw_data());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pos = start + i;
    const int64_t slot = block_table[pos / kKvBlockSize] * kKvBlockSize + pos % kKvBlockSize;
    std::memcpy(dst + slot * row_bytes, from + i * row_bytes, row_bytes);
  }
}

}  // namespace omni::models
