// Causal self-attention of decoder LLMs over the paged KV cache
// (models/kv_cache_view.h): fused q/k/v projection, RoPE on q and k, the new
// K/V rows written into each sequence's cache slots, attention of every
// query over its sequence's whole cached context, output projection.
//
//   q, k, v = split(qkv_proj(x))                 x [T, hidden]
//   q, k    = rope(q, positions), rope(k, positions)
//   cache[slots of the new positions] = k, v
//   out     = o_proj(PagedAttention(q, cache; scale))  [T, hidden] f32
//
// Thread-safety: immutable after Load; Forward is const but writes the cache
// blocks of the batch's sequences, so two forwards must not share blocks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "ops/attention.h"
#include "ops/linear.h"
#include "ops/rope.h"
#include "tensor/tensor.h"

namespace omni::models::layers {

struct PagedAttentionConfig {
  int64_t hidden = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // num_heads % num_kv_heads == 0 (GQA)
  int64_t head_dim = 0;
  bool bias = false;  // q/k/v/o biases (attention_bias)
  float scale = 0.f;  // multiplies q.k; 0: 1 / sqrt(head_dim)
  // Names under the block's prefix (Hugging Face LLaMA's by default).
  std::string q_name = "q_proj", k_name = "k_proj", v_name = "v_proj", o_name = "o_proj";
};

// What every layer of one forward shares: the tokens' positions, the rotary
// frequencies, and where each sequence's tokens go in the cache.
struct PagedAttentionBatch {
  const Tensor* positions = nullptr;     // [T] i32: each new token's position in its sequence
  const ops::RopeParams* rope = nullptr;  // nullptr: no rotary embedding
  // Consecutive row ranges of x, in order; block tables cover every position
  // up to start_position + num_queries - 1.
  std::span<const ops::PagedSequence> sequences;
};

struct PagedSelfAttention {
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  float scale = 1.f;
  ops::Linear qkv_proj;  // q, k, v stacked: [(heads + 2 kv_heads) * head_dim, hidden]
  ops::Linear o_proj;    // [hidden, heads * head_dim]

  static StatusOr<PagedSelfAttention> Load(const Checkpoint& ckpt, std::string_view prefix,
                                           const PagedAttentionConfig& config);
  // x [T, hidden] f32 -> [T, hidden] f32. k_cache / v_cache: this layer's
  // [num_blocks, kKvBlockSize, kv_heads, head_dim] (bf16 or f32); the batch
  // was validated against them by the caller.
  Tensor Forward(const Tensor& x, const PagedAttentionBatch& batch, const Tensor& k_cache,
                 const Tensor& v_cache) const;
};

}  // namespace omni::models::layers
