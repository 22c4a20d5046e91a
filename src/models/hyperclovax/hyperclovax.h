// HyperCLOVAXForCausalLM (and plain LlamaForCausalLM, its case with every
// muP multiplier 1 and no post-norms): a decoder-only transformer with RoPE,
// GQA, SwiGLU and RMSNorm, loaded from a Hugging Face folder by the real
// tensor names (docs/MODELS.md lists them).
//
//   h = embed(ids) (injected rows replace some)       [T, hidden]
//   h *= embedding_multiplier
//   per layer:
//     a = o_proj(Attention(rope(q), rope(k), v; scale = attention_multiplier))
//         of input_layernorm(h)
//     a = post_norm1(a)                             (use_post_norm: Peri-LN)
//     h = h + residual_multiplier * a
//     m = down(silu(gate(x)) * up(x)), x = post_attention_layernorm(h)
//     m = post_norm2(m)                             (use_post_norm)
//     h = h + residual_multiplier * m
//   logits = lm_head(norm(h)) * logits_scaling
//
// Activations are f32; every projection runs with bf16 packed weights
// (activations rounded to bf16 at the matmul input, f32 accumulation).
// Built from the shared blocks of models/layers/: layers::RmsNorm,
// layers::PagedSelfAttention, layers::GatedMlp.
//
// Thread-safety: immutable after Load; Forward is const, but two concurrent
// forwards must not write the same KV blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "modelfile/hf_config.h"
#include "models/activation_callback.h"
#include "models/kv_cache_view.h"
#include "models/layers/norm.h"
#include "ops/linear.h"
#include "ops/rope.h"
#include "tensor/tensor.h"

namespace omni::models {

// Rows that replace embed(ids) for `rows.dim(0)` consecutive tokens of the
// batch starting at `token_index` (media embeddings; discrete ids embedded
// through EmbedTokens). embedding_multiplier still applies to them.
struct InjectedRows {
  int64_t token_index = 0;  // index into ForwardBatch::token_ids
  Tensor rows;              // [n, hidden] f32 or bf16
};

// One sequence's share of a batch: its tokens are consecutive in
// ForwardBatch::token_ids, in sequence order.
struct BatchSequence {
  int64_t num_tokens = 0;      // new tokens in this forward (>= 1)
  int64_t start_position = 0;  // tokens already in the cache
  // Block ids covering positions 0 .. start_position + num_tokens - 1.
  std::span<const int32_t> block_table;
};

// The named activations (ActivationCallback, activation_callback.h): "embed",
// "layers.{i}.attn_out", "layers.{i}.mlp_out", "layers.{i}.out",
// "final_norm", "logits" (docs/MODELS.md). Debugging and tests only.

struct ForwardBatch {
  std::span<const int32_t> token_ids;  // [total_tokens]; ids under injected rows are ignored
  std::vector<InjectedRows> injected;
  std::vector<BatchSequence> sequences;  // sum of num_tokens == total_tokens
  // Token indices (into token_ids) whose logits are wanted, e.g. each
  // sequence's last token; logits row r belongs to logit_rows[r].
  std::vector<int64_t> logit_rows;
  const ActivationCallback* on_activation = nullptr;
};

class HyperClovaxModel {
 public:
  // `dir`: config.json plus model.safetensors or a sharded index.
  static StatusOr<std::unique_ptr<HyperClovaxModel>> Load(const std::string& dir);
  static StatusOr<std::unique_ptr<HyperClovaxModel>> Load(const LlmConfig& config, const Checkpoint& checkpoint);

  HyperClovaxModel(const HyperClovaxModel&) = delete;
  HyperClovaxModel& operator=(const HyperClovaxModel&) = delete;
  ~HyperClovaxModel();

  const LlmConfig& config() const { return config_; }
  int64_t num_layers() const { return config_.num_hidden_layers; }
  int64_t num_kv_heads() const { return config_.num_key_value_heads; }
  int64_t head_dim() const { return config_.head_dim; }
  int64_t hidden_size() const { return config_.hidden_size; }
  int64_t vocab_size() const { return config_.vocab_size; }

  // Runs the new tokens of several sequences: projections over all tokens as
  // one [total_tokens, hidden] matmul, attention per sequence over its cached
  // prefix plus its new tokens. Writes the new K/V into `kv` and sets
  // *logits to [logit_rows.size(), vocab] f32. InvalidArgument for ids out
  // of range, inconsistent sequence sizes, block tables too short or naming
  // blocks outside the cache, or a cache of the wrong shape.
  Status Forward(const ForwardBatch& batch, const KvCacheView& kv, Tensor* logits) const;

  // One sequence without a cache of the caller's: logits of every position
  // [ids.size(), vocab] f32 (tests and quick checks).
  StatusOr<Tensor> Forward(std::span<const int32_t> ids, const ActivationCallback* on_activation = nullptr) const;

  // embed(ids) without the multiplier: [ids.size(), hidden] f32. For
  // discrete media ids that are injected as rows.
  StatusOr<Tensor> EmbedTokens(std::span<const int32_t> ids) const;

 private:
  struct Layer;
  explicit HyperClovaxModel(LlmConfig config);
  Status LoadWeights(const Checkpoint& checkpoint);
  Status ValidateBatch(const ForwardBatch& batch, const KvCacheView& kv) const;
  Tensor Embed(const ForwardBatch& batch) const;

  LlmConfig config_;
  ops::RopeParams rope_;
  Tensor embed_tokens_;  // [vocab, hidden], a view of the checkpoint (bf16 as stored)
  std::vector<std::unique_ptr<Layer>> layers_;
  layers::RmsNorm final_norm_;  // [hidden]
  ops::Linear lm_head_;  // [vocab, hidden]; a packed copy of embed_tokens_ when tied
};

}  // namespace omni::models
