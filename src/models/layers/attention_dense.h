// Bidirectional (or masked) self-attention of encoders and DiTs over one
// packed sequence, no cache:
//
//   q, k, v = split(qkv(x))                        x [T, hidden]
//   q, k    = q_norm(q), k_norm(k)                 per head over head_dim (optional QK-norm)
//   call.qk_hook(&q, &k)                           the family's position encoding (2-D RoPE, M-RoPE)
//   out     = o_proj(SDPA(q, k, v; scale, call.mask))   [T, hidden]
//
// Several images (or windows) in one batch are one packed sequence with a
// segment mask (ops::SegmentIdsFromCuSeqlens), as the ViTs of the field do.
//
// Thread-safety: immutable after Load; Forward is const.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "ops/attention.h"
#include "ops/linear.h"
#include "tensor/tensor.h"

namespace omni::models::layers {

enum class QkNorm { kNone, kRmsNorm, kLayerNorm };

struct DenseAttentionConfig {
  int64_t hidden = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // 0: num_heads (no GQA)
  int64_t head_dim = 0;
  bool bias = true;   // q/k/v/o biases
  bool k_bias = true;  // with `bias`: false when k alone has none (Whisper, the S3 tokenizer)
  float scale = 0.f;  // 0: 1 / sqrt(head_dim)
  QkNorm qk_norm = QkNorm::kNone;
  float qk_norm_eps = 1e-6f;
  // Names under the block's prefix. One name: a fused [(heads + 2 kv_heads)
  // * head_dim, hidden] weight (timm ViT's "qkv"); three: q, k, v.
  std::vector<std::string> qkv_names = {"q_proj", "k_proj", "v_proj"};
  std::string o_name = "out_proj";
  std::string q_norm_name = "q_norm", k_norm_name = "k_norm";  // "<name>.weight" [head_dim] (and ".bias" for LayerNorm)
};

// Called with q [T, heads, head_dim] and k [T, kv_heads, head_dim] after the
// QK-norm; may replace either (e.g. with RoPE applied).
using QkHook = std::function<void(Tensor* q, Tensor* k)>;

// Called with v [T, kv_heads, head_dim] (a view, valid during the call), for
// blocks that also read the values (the S3 tokenizer's FSMN memory).
using VHook = std::function<void(const Tensor& v)>;

struct DenseAttentionCall {
  ops::AttentionMask mask;  // default: every token sees every token
  QkHook qk_hook;           // empty: none
  VHook v_hook;             // empty: none
};

struct DenseAttention {
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  float scale = 1.f;
  QkNorm qk_norm = QkNorm::kNone;
  float qk_norm_eps = 1e-6f;
  ops::Linear qkv_proj;  // [(heads + 2 kv_heads) * head_dim, hidden]
  ops::Linear o_proj;    // [hidden, heads * head_dim]
  Tensor q_norm_weight, q_norm_bias;  // [head_dim] f32 (bias: LayerNorm only), undefined without QK-norm
  Tensor k_norm_weight, k_norm_bias;

  static StatusOr<DenseAttention> Load(const Checkpoint& ckpt, std::string_view prefix,
                                       const DenseAttentionConfig& config);
  // x [T, hidden] f32/bf16 -> [T, hidden] in x's dtype.
  Tensor Forward(const Tensor& x, const DenseAttentionCall& call = {}) const;
};

}  // namespace omni::models::layers
