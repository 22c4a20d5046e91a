#include "engine/kv_cache.h"

#include <string>

namespace omni {

Status KvCacheSpec::Validate() const {
  if (num_layers <= 0) return InvalidArgument("kv cache: num_layers must be > 0");
  if (num_kv_heads <= 0) return InvalidArgument("kv cache: num_kv_heads must be > 0");
  if (head_dim <= 0) return InvalidArgument("kv cache: head_dim must be > 0");
  if (dtype != DType::kBF16 && dtype != DType::kF32) {
    return InvalidArgument("kv cache: dtype must be BF16 or F32, got " +
                           std::string(DTypeName(dtype)));
  }
  return Status::Ok();
}

int64_t BytesPerBlock(const KvCacheSpec& spec) {
  return int64_t{2} * spec.num_layers * spec.num_kv_heads * spec.head_dim * kBlockSize *
         static_cast<int64_t>(DTypeSize(spec.dtype));
}

StatusOr<int> NumBlocksForBudget(const KvCacheSpec& spec, int64_t budget_bytes) {
  OMNI_RETURN_IF_ERROR(spec.Validate());
  const int64_t per_block = BytesPerBlock(spec);
  const int64_t blocks = budget_bytes / per_block;
  if (blocks < 1) {
    return InvalidArgument("kv cache budget of " + std::to_string(budget_bytes) +
                           " bytes holds no block of " + std::to_string(per_block) + " bytes");
  }
  if (blocks > INT32_MAX) return InvalidArgument("kv cache budget too large");
  return static_cast<int>(blocks);
}

KvCache::KvCache(const KvCacheSpec& spec, int num_blocks) : spec_(spec), num_blocks_(num_blocks) {
  OMNI_CHECK(spec.Validate().ok()) << spec.Validate().ToString();
  OMNI_CHECK_GT(num_blocks, 0);
  const Shape shape = {num_blocks, kBlockSize, spec.num_kv_heads, spec.head_dim};
  keys_.reserve(spec.num_layers);
  values_.reserve(spec.num_layers);
  for (int l = 0; l < spec.num_layers; ++l) {
    keys_.push_back(Tensor::Zeros(shape, spec.dtype));
    values_.push_back(Tensor::Zeros(shape, spec.dtype));
  }
}

}  // namespace omni
