#include "models/layers/attention_paged.h"

#include <cmath>

#include "models/kv_cache_view.h"
#include "models/layers/heads.h"
#include "models/layers/weights.h"
#include "ops/elementwise.h"

namespace omni::models::layers {

StatusOr<PagedSelfAttention> PagedSelfAttention::Load(const Checkpoint& ckpt, std::string_view prefix,
                                                      const PagedAttentionConfig& c) {
  if (c.num_heads <= 0 || c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0 || c.head_dim <= 0) {
    return InvalidArgument("paged attention: num_heads must be a positive multiple of num_kv_heads");
  }
  PagedSelfAttention attn;
  attn.num_heads = c.num_heads;
  attn.num_kv_heads = c.num_kv_heads;
  attn.head_dim = c.head_dim;
  attn.scale = c.scale != 0.f ? c.scale : 1.f / std::sqrt(static_cast<float>(c.head_dim));
  const int64_t q_out = c.num_heads * c.head_dim, kv_out = c.num_kv_heads * c.head_dim;
  const std::string qkv[] = {WeightName(prefix, c.q_name), WeightName(prefix, c.k_name),
                             WeightName(prefix, c.v_name)};
  const int64_t sizes[] = {q_out, kv_out, kv_out};
  OMNI_ASSIGN_OR_RETURN(attn.qkv_proj, LoadStackedLinear(ckpt, qkv, sizes, c.hidden, c.bias));
  OMNI_ASSIGN_OR_RETURN(attn.o_proj, LoadLinear(ckpt, WeightName(prefix, c.o_name), c.hidden, q_out, c.bias));
  return attn;
}

Tensor PagedSelfAttention::Forward(const Tensor& x, const PagedAttentionBatch& batch, const Tensor& k_cache,
                                   const Tensor& v_cache) const {
  const int64_t d = head_dim, hq = num_heads, hkv = num_kv_heads;
  const int64_t total = x.dim(0);
  Tensor qkv = qkv_proj.Forward(x);  // [T, (hq + 2 hkv) * d]; the views below borrow it
  Tensor q = HeadsView(qkv, 0, hq * d, d);          // [T, hq, d]
  Tensor k = HeadsView(qkv, hq * d, hkv * d, d);    // [T, hkv, d]
  Tensor v = HeadsView(qkv, (hq + hkv) * d, hkv * d, d);
  if (batch.rope != nullptr) {
    q = ops::ApplyRope(q, *batch.positions, *batch.rope);
    k = ops::ApplyRope(k, *batch.positions, *batch.rope);
  }
  int64_t offset = 0;
  for (const ops::PagedSequence& s : batch.sequences) {
    const int64_t n = s.num_queries;
    WriteKvSlots(k_cache, s.block_table, s.start_position, k.Slice(0, offset, offset + n));
    WriteKvSlots(v_cache, s.block_table, s.start_position, v.Slice(0, offset, offset + n));
    offset += n;
  }
  // Every sequence's whole context is read back from the cache, so a prefix
  // computed earlier and the tokens of this step are seen alike (same dtype
  // rounding whether or not the prefix came from a cache hit).
  q = ops::Cast(q, k_cache.dtype());
  // [T, hq, d] in the cache dtype, which o_proj reads as is (a bf16 layer
  // would round f32 to bf16 anyway); its output is f32 for the residual.
  Tensor out = ops::PagedAttention(q, k_cache, v_cache, batch.sequences, scale);
  return o_proj.Forward(out.Reshape({total, hq * d}), DType::kF32);
}

}  // namespace omni::models::layers
