// The paged KV cache storage: one K and one V tensor per layer, each shaped
// [num_blocks, kBlockSize, kv_heads, head_dim]. The engine never touches the
// bytes; it hands block ids (a sequence's block table) to the ModelRunner,
// which reads and writes the slots. Sizing helpers turn a memory budget into
// a block count.
//
// Thread-safety: a KvCache is owned by the model runner and used from the
// engine thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "models/kv_cache_view.h"
#include "tensor/tensor.h"

namespace omni {

// Tokens per KV block: the model's KV view's constant, so the engine's block
// tables and the model's slots cannot disagree. Fixed: block hashes, KV
// events and the router's prefix index all assume 16 (spec/routing.md).
inline constexpr int kBlockSize = static_cast<int>(models::kKvBlockSize);
static_assert(kBlockSize == 16, "block hashes and KV events assume 16-token blocks");

struct KvCacheSpec {
  int num_layers = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  DType dtype = DType::kBF16;  // kBF16 or kF32

  Status Validate() const;
};

// 2 (K and V) * layers * kv_heads * head_dim * kBlockSize * dtype size.
int64_t BytesPerBlock(const KvCacheSpec& spec);
// How many whole blocks fit in `budget_bytes`; InvalidArgument if not even one.
StatusOr<int> NumBlocksForBudget(const KvCacheSpec& spec, int64_t budget_bytes);

class KvCache {
 public:
  // Allocates zeroed storage for `num_blocks` blocks. `spec` must be valid.
  KvCache(const KvCacheSpec& spec, int num_blocks);

  const KvCacheSpec& spec() const { return spec_; }
  int num_blocks() const { return num_blocks_; }
  // [num_blocks, kBlockSize, kv_heads, head_dim]
  Tensor& key(int layer) { return keys_.at(layer); }
  Tensor& value(int layer) { return values_.at(layer); }
  int64_t nbytes() const { return BytesPerBlock(spec_) * num_blocks_; }

 private:
  KvCacheSpec spec_;
  int num_blocks_;
  std::vector<Tensor> keys_;    // per layer: [num_blocks, kBlockSize, kv_heads, head_dim]
  std::vector<Tensor> values_;  // per layer: [num_blocks, kBlockSize, kv_heads, head_dim]
};

}  // namespace omni
