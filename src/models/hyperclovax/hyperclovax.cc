#include "models/hyperclovax/hyperclovax.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "models/hyperclovax/llm_rope.h"
#include "models/layers/attention_paged.h"
#include "models/layers/mlp.h"
#include "models/layers/weights.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"

namespace omni::models {

struct HyperClovaxModel::Layer {
  layers::RmsNorm input_norm;
  layers::RmsNorm post_attention_norm;
  layers::RmsNorm post_norm1;  // weight undefined without use_post_norm (Peri-LN)
  layers::RmsNorm post_norm2;
  layers::PagedSelfAttention self_attn;
  layers::GatedMlp mlp;
};

HyperClovaxModel::HyperClovaxModel(LlmConfig config) : config_(std::move(config)) {}
HyperClovaxModel::~HyperClovaxModel() = default;

StatusOr<std::unique_ptr<HyperClovaxModel>> HyperClovaxModel::Load(const std::string& dir) {
  OMNI_ASSIGN_OR_RETURN(LlmConfig config, LoadLlmConfig(dir));
  OMNI_ASSIGN_OR_RETURN(Checkpoint ckpt, Checkpoint::Open(dir));
  return Load(config, ckpt);
}

StatusOr<std::unique_ptr<HyperClovaxModel>> HyperClovaxModel::Load(const LlmConfig& config,
                                                                   const Checkpoint& checkpoint) {
  if (config.hidden_act != "silu") return InvalidArgument("unsupported hidden_act " + config.hidden_act);
  if (config.num_attention_heads <= 0 || config.num_key_value_heads <= 0 ||
      config.num_attention_heads % config.num_key_value_heads != 0) {
    return InvalidArgument("num_attention_heads must be a multiple of num_key_value_heads");
  }
  std::unique_ptr<HyperClovaxModel> model(new HyperClovaxModel(config));
  OMNI_ASSIGN_OR_RETURN(model->rope_, RopeParamsForConfig(config));
  OMNI_RETURN_IF_ERROR(model->LoadWeights(checkpoint).Annotate("loading " + checkpoint.dir()));
  return model;
}

Status HyperClovaxModel::LoadWeights(const Checkpoint& ckpt) {
  const LlmConfig& c = config_;
  const int64_t hidden = c.hidden_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const layers::PagedAttentionConfig attention{
      .hidden = hidden,
      .num_heads = c.num_attention_heads,
      .num_kv_heads = c.num_key_value_heads,
      .head_dim = c.head_dim,
      .bias = c.attention_bias,
      .scale = static_cast<float>(c.attention_multiplier),  // 0: 1 / sqrt(head_dim)
  };
  const layers::GatedMlpConfig mlp{.hidden = hidden, .intermediate = c.intermediate_size, .bias = c.mlp_bias};
  OMNI_ASSIGN_OR_RETURN(embed_tokens_,
                        layers::LoadFloatWeight(ckpt, "model.embed_tokens.weight", {c.vocab_size, hidden}));
  if (embed_tokens_.dtype() == DType::kF16) embed_tokens_ = embed_tokens_.To(DType::kBF16);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    auto layer = std::make_unique<Layer>();
    OMNI_ASSIGN_OR_RETURN(layer->input_norm, layers::RmsNorm::Load(ckpt, p + "input_layernorm", hidden, eps));
    OMNI_ASSIGN_OR_RETURN(layer->post_attention_norm,
                          layers::RmsNorm::Load(ckpt, p + "post_attention_layernorm", hidden, eps));
    if (c.use_post_norm) {
      OMNI_ASSIGN_OR_RETURN(layer->post_norm1, layers::RmsNorm::Load(ckpt, p + "post_norm1", hidden, eps));
      OMNI_ASSIGN_OR_RETURN(layer->post_norm2, layers::RmsNorm::Load(ckpt, p + "post_norm2", hidden, eps));
    }
    OMNI_ASSIGN_OR_RETURN(layer->self_attn, layers::PagedSelfAttention::Load(ckpt, p + "self_attn", attention));
    OMNI_ASSIGN_OR_RETURN(layer->mlp, layers::GatedMlp::Load(ckpt, p + "mlp", mlp));
    layers_.push_back(std::move(layer));
  }
  OMNI_ASSIGN_OR_RETURN(final_norm_, layers::RmsNorm::Load(ckpt, "model.norm", hidden, eps));
  if (c.tie_word_embeddings) {
    lm_head_ = ops::Linear(layers::ToBf16(embed_tokens_));
  } else {
    OMNI_ASSIGN_OR_RETURN(lm_head_, layers::LoadLinear(ckpt, "lm_head", c.vocab_size, hidden, false));
  }
  return Status::Ok();
}

Status HyperClovaxModel::ValidateBatch(const ForwardBatch& batch, const KvCacheView& kv) const {
  OMNI_RETURN_IF_ERROR(ValidateKvCacheView(kv, num_layers(), num_kv_heads(), head_dim()));
  const int64_t total = static_cast<int64_t>(batch.token_ids.size());
  if (total == 0) return InvalidArgument("forward batch has no tokens");
  std::vector<bool> injected(total, false);
  for (const InjectedRows& r : batch.injected) {
    if (!r.rows.defined() || r.rows.rank() != 2 || r.rows.dim(1) != hidden_size() ||
        (r.rows.dtype() != DType::kF32 && r.rows.dtype() != DType::kBF16)) {
      return InvalidArgument("injected rows must be [n, " + std::to_string(hidden_size()) +
                             "] f32/bf16, got " + r.rows.DebugString());
    }
    if (r.token_index < 0 || r.token_index + r.rows.dim(0) > total) {
      return InvalidArgument("injected rows at " + std::to_string(r.token_index) + " run past the batch");
    }
    for (int64_t i = 0; i < r.rows.dim(0); ++i) injected[r.token_index + i] = true;
  }
  for (int64_t i = 0; i < total; ++i) {
    const int32_t id = batch.token_ids[i];
    if (!injected[i] && (id < 0 || id >= vocab_size())) {
      return InvalidArgument("token id " + std::to_string(id) + " outside vocab " + std::to_string(vocab_size()));
    }
  }
  int64_t covered = 0;
  for (const BatchSequence& s : batch.sequences) {
    if (s.num_tokens < 1 || s.start_position < 0) return InvalidArgument("sequence needs >= 1 token and start >= 0");
    const int64_t end = s.start_position + s.num_tokens;
    const int64_t blocks_needed = (end + kKvBlockSize - 1) / kKvBlockSize;
    if (static_cast<int64_t>(s.block_table.size()) < blocks_needed) {
      return InvalidArgument("block table of " + std::to_string(s.block_table.size()) + " blocks cannot hold " +
                             std::to_string(end) + " tokens");
    }
    for (int64_t b = 0; b < blocks_needed; ++b) {
      if (s.block_table[b] < 0 || s.block_table[b] >= kv.num_blocks()) {
        return InvalidArgument("block id " + std::to_string(s.block_table[b]) + " outside the cache");
      }
    }
    covered += s.num_tokens;
  }
  if (covered != total) {
    return InvalidArgument("sequences cover " + std::to_string(covered) + " of " + std::to_string(total) + " tokens");
  }
  for (int64_t r : batch.logit_rows) {
    if (r < 0 || r >= total) return InvalidArgument("logit row " + std::to_string(r) + " outside the batch");
  }
  return Status::Ok();
}

Tensor HyperClovaxModel::Embed(const ForwardBatch& batch) const {
  std::vector<int32_t> ids(batch.token_ids.begin(), batch.token_ids.end());
  for (const InjectedRows& r : batch.injected) {
    for (int64_t i = 0; i < r.rows.dim(0); ++i) ids[r.token_index + i] = 0;  // placeholder, overwritten below
  }
  Tensor id_tensor = Tensor::View(ids.data(), {static_cast<int64_t>(ids.size())}, DType::kI32);
  Tensor h = ops::Embedding(embed_tokens_, id_tensor).To(DType::kF32);  // [T, hidden]
  const size_t row_bytes = static_cast<size_t>(hidden_size()) * sizeof(float);
  for (const InjectedRows& r : batch.injected) {
    Tensor rows = r.rows.To(DType::kF32);
    std::memcpy(h.data<float>() + r.token_index * hidden_size(), rows.data<float>(), row_bytes * rows.dim(0));
  }
  if (config_.embedding_multiplier != 1.0) h = ops::Scale(h, static_cast<float>(config_.embedding_multiplier));
  return h;
}

Status HyperClovaxModel::Forward(const ForwardBatch& batch, const KvCacheView& kv, Tensor* logits) const {
  OMNI_RETURN_IF_ERROR(ValidateBatch(batch, kv));
  auto emit = [&](const std::string& name, const Tensor& t) {
    if (batch.on_activation != nullptr) (*batch.on_activation)(name, t);
  };
  const int64_t total = static_cast<int64_t>(batch.token_ids.size());
  const double residual = config_.residual_multiplier;
  Tensor positions = Tensor::Empty({total}, DType::kI32);
  std::vector<ops::PagedSequence> sequences;
  sequences.reserve(batch.sequences.size());
  int64_t t = 0;
  for (const BatchSequence& s : batch.sequences) {
    for (int64_t i = 0; i < s.num_tokens; ++i) positions.data<int32_t>()[t++] = static_cast<int32_t>(s.start_position + i);
    sequences.push_back({.num_queries = s.num_tokens, .start_position = s.start_position, .block_table = s.block_table});
  }
  const layers::PagedAttentionBatch attention_batch{.positions = &positions, .rope = &rope_, .sequences = sequences};
  Tensor h = Embed(batch);  // [T, hidden] f32
  emit("embed", h);
  for (int64_t i = 0; i < num_layers(); ++i) {
    const Layer& layer = *layers_[i];
    const std::string prefix = "layers." + std::to_string(i) + ".";
    Tensor attn = layer.self_attn.Forward(layer.input_norm.Forward(h), attention_batch, kv.k[i], kv.v[i]);
    if (config_.use_post_norm) attn = layer.post_norm1.Forward(attn);
    emit(prefix + "attn_out", attn);
    Tensor mlp = layer.mlp.Forward(layer.post_attention_norm.AddResidualAndNorm(&h, attn, residual));
    if (config_.use_post_norm) mlp = layer.post_norm2.Forward(mlp);
    emit(prefix + "mlp_out", mlp);
    h = layers::ResidualAdd(h, mlp, residual);
    emit(prefix + "out", h);
  }
  const int64_t rows = static_cast<int64_t>(batch.logit_rows.size());
  Tensor selected = Tensor::Empty({rows, hidden_size()}, DType::kF32);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(selected.data<float>() + r * hidden_size(), h.data<float>() + batch.logit_rows[r] * hidden_size(),
                hidden_size() * sizeof(float));
  }
  Tensor normed = final_norm_.Forward(selected);
  emit("final_norm", normed);
  Tensor out = lm_head_.Forward(normed);  // [rows, vocab] f32
  if (config_.logits_scaling != 1.0) out = ops::Scale(out, static_cast<float>(config_.logits_scaling));
  emit("logits", out);
  *logits = std::move(out);
  return Status::Ok();
}

StatusOr<Tensor> HyperClovaxModel::Forward(std::span<const int32_t> ids, const ActivationCallback* on_activation) const {
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t blocks = std::max<int64_t>(1, (n + kKvBlockSize - 1) / kKvBlockSize);
  KvCacheStorage cache = KvCacheStorage::Allocate(num_layers(), blocks, num_kv_heads(), head_dim(), DType::kF32);
  std::vector<int32_t> table(blocks);
  for (int64_t b = 0; b < blocks; ++b) table[b] = static_cast<int32_t>(b);
  ForwardBatch batch;
  batch.token_ids = ids;
  batch.sequences.push_back({.num_tokens = n, .start_position = 0, .block_table = table});
  for (int64_t i = 0; i < n; ++i) batch.logit_rows.push_back(i);
  batch.on_activation = on_activation;
  Tensor logits;
  OMNI_RETURN_IF_ERROR(Forward(batch, cache.view, &logits));
  return logits;
}

StatusOr<Tensor> HyperClovaxModel::EmbedTokens(std::span<const int32_t> ids) const {
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) return InvalidArgument("token id " + std::to_string(id) + " outside vocab");
  }
  std::vector<int32_t> copy(ids.begin(), ids.end());
  Tensor id_tensor = Tensor::View(copy.data(), {static_cast<int64_t>(copy.size())}, DType::kI32);
  return ops::Embedding(embed_tokens_, id_tensor).To(DType::kF32);
}

}  // namespace omni::models
