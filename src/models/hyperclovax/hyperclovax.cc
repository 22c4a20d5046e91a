#include "models/hyperclovax.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "models/llm_rope.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/norm.h"
#include "ops/shape_ops.h"

namespace omni::models {

struct HyperClovaxModel::Layer {
  Tensor input_norm;           // [hidden] f32
  Tensor post_attention_norm;  // [hidden] f32
  Tensor post_norm1;           // [hidden] f32, undefined without use_post_norm
  Tensor post_norm2;
  ops::Linear qkv_proj;      // q, k, v stacked: [(heads + 2 kv_heads) * head_dim, hidden]
  ops::Linear o_proj;        // [hidden, heads * head_dim]
  ops::Linear gate_up_proj;  // gate, up stacked: [2 * intermediate, hidden]
  ops::Linear down_proj;     // [hidden, intermediate]
};

namespace {

// A weight of the expected shape in any float dtype.
StatusOr<Tensor> GetWeight(const Checkpoint& ckpt, const std::string& name, const Shape& shape) {
  OMNI_ASSIGN_OR_RETURN(Tensor t, ckpt.Get(name));
  if (!IsFloating(t.dtype())) return InvalidArgument(name + ": expected a float tensor, got " + t.DebugString());
  OMNI_RETURN_IF_ERROR(CheckTensorSpec(t, name, shape, t.dtype()));
  return t;
}

Tensor ToBf16(const Tensor& t) { return t.dtype() == DType::kBF16 ? t : t.To(DType::kBF16); }

// Projections whose weights share an input are stacked into one packed
// Linear: one matmul per block instead of three (or two), which matters most
// for decode where each call is a GEMV.
StatusOr<ops::Linear> StackedLinear(const Checkpoint& ckpt, const std::vector<std::string>& names,
                                    const std::vector<int64_t>& out_sizes, int64_t in, bool bias) {
  std::vector<Tensor> weights, biases;
  for (size_t i = 0; i < names.size(); ++i) {
    OMNI_ASSIGN_OR_RETURN(Tensor w, GetWeight(ckpt, names[i] + ".weight", {out_sizes[i], in}));
    weights.push_back(ToBf16(w));
    if (bias) {
      OMNI_ASSIGN_OR_RETURN(Tensor b, GetWeight(ckpt, names[i] + ".bias", {out_sizes[i]}));
      biases.push_back(b.To(DType::kF32));
    }
  }
  Tensor w = weights.size() == 1 ? weights[0] : ops::Concat(weights, 0);
  Tensor b = !bias ? Tensor() : biases.size() == 1 ? biases[0] : ops::Concat(biases, 0);
  return ops::Linear(w, b);
}

StatusOr<Tensor> NormWeight(const Checkpoint& ckpt, const std::string& name, int64_t hidden) {
  OMNI_ASSIGN_OR_RETURN(Tensor w, GetWeight(ckpt, name, {hidden}));
  return w.To(DType::kF32);
}

// Columns [begin, begin + count) of a contiguous [T, width] tensor as a
// [T, count / head_dim, head_dim] view. The view does not keep `t` alive.
Tensor HeadsView(const Tensor& t, int64_t begin, int64_t count, int64_t head_dim) {
  auto* base = static_cast<uint8_t*>(t.raw_data()) + begin * DTypeSize(t.dtype());
  return Tensor::View(base, {t.dim(0), count / head_dim, head_dim}, {t.dim(1), head_dim, 1}, t.dtype());
}

Tensor ResidualAdd(const Tensor& h, const Tensor& delta, double multiplier) {
  return ops::Add(h, multiplier == 1.0 ? delta : ops::Scale(delta, static_cast<float>(multiplier)));
}

}  // namespace

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
  model->attention_scale_ = config.attention_multiplier != 0.0
                                ? static_cast<float>(config.attention_multiplier)
                                : 1.f / std::sqrt(static_cast<float>(config.head_dim));
  OMNI_RETURN_IF_ERROR(model->LoadWeights(checkpoint).Annotate("loading " + checkpoint.dir()));
  return model;
}

Status HyperClovaxModel::LoadWeights(const Checkpoint& ckpt) {
  const LlmConfig& c = config_;
  const int64_t hidden = c.hidden_size, d = c.head_dim;
  const int64_t q_out = c.num_attention_heads * d, kv_out = c.num_key_value_heads * d;
  OMNI_ASSIGN_OR_RETURN(embed_tokens_, GetWeight(ckpt, "model.embed_tokens.weight", {c.vocab_size, hidden}));
  if (embed_tokens_.dtype() == DType::kF16) embed_tokens_ = embed_tokens_.To(DType::kBF16);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    auto layer = std::make_unique<Layer>();
    OMNI_ASSIGN_OR_RETURN(layer->input_norm, NormWeight(ckpt, p + "input_layernorm.weight", hidden));
    OMNI_ASSIGN_OR_RETURN(layer->post_attention_norm, NormWeight(ckpt, p + "post_attention_layernorm.weight", hidden));
    if (c.use_post_norm) {
      OMNI_ASSIGN_OR_RETURN(layer->post_norm1, NormWeight(ckpt, p + "post_norm1.weight", hidden));
      OMNI_ASSIGN_OR_RETURN(layer->post_norm2, NormWeight(ckpt, p + "post_norm2.weight", hidden));
    }
    OMNI_ASSIGN_OR_RETURN(layer->qkv_proj,
                          StackedLinear(ckpt, {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"},
                                        {q_out, kv_out, kv_out}, hidden, c.attention_bias));
    OMNI_ASSIGN_OR_RETURN(layer->o_proj, StackedLinear(ckpt, {p + "self_attn.o_proj"}, {hidden}, q_out,
                                                       c.attention_bias));
    OMNI_ASSIGN_OR_RETURN(layer->gate_up_proj,
                          StackedLinear(ckpt, {p + "mlp.gate_proj", p + "mlp.up_proj"},
                                        {c.intermediate_size, c.intermediate_size}, hidden, c.mlp_bias));
    OMNI_ASSIGN_OR_RETURN(layer->down_proj,
                          StackedLinear(ckpt, {p + "mlp.down_proj"}, {hidden}, c.intermediate_size, c.mlp_bias));
    layers_.push_back(std::move(layer));
  }
  OMNI_ASSIGN_OR_RETURN(final_norm_, NormWeight(ckpt, "model.norm.weight", hidden));
  if (c.tie_word_embeddings) {
    lm_head_ = ops::Linear(ToBf16(embed_tokens_));
  } else {
    OMNI_ASSIGN_OR_RETURN(lm_head_, StackedLinear(ckpt, {"lm_head"}, {c.vocab_size}, hidden, false));
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

Tensor HyperClovaxModel::AttentionBlock(const Layer& layer, int64_t index, const Tensor& x, const Tensor& positions,
                                        const ForwardBatch& batch, const KvCacheView& kv) const {
  const int64_t d = head_dim(), hq = config_.num_attention_heads, hkv = num_kv_heads();
  const int64_t total = x.dim(0);
  Tensor qkv = layer.qkv_proj.Forward(x);  // [T, (hq + 2 hkv) * d]; the views below borrow it
  Tensor q = ops::ApplyRope(HeadsView(qkv, 0, hq * d, d), positions, rope_);         // [T, hq, d]
  Tensor k = ops::ApplyRope(HeadsView(qkv, hq * d, hkv * d, d), positions, rope_);   // [T, hkv, d]
  Tensor v = HeadsView(qkv, (hq + hkv) * d, hkv * d, d);                              // [T, hkv, d]
  const Tensor& k_cache = kv.k[index];
  const Tensor& v_cache = kv.v[index];
  std::vector<ops::PagedSequence> sequences;
  sequences.reserve(batch.sequences.size());
  int64_t offset = 0;
  for (const BatchSequence& s : batch.sequences) {
    const int64_t n = s.num_tokens;
    WriteKvSlots(k_cache, s.block_table, s.start_position, k.Slice(0, offset, offset + n));
    WriteKvSlots(v_cache, s.block_table, s.start_position, v.Slice(0, offset, offset + n));
    sequences.push_back({.num_queries = n, .start_position = s.start_position, .block_table = s.block_table});
    offset += n;
  }
  // Every sequence's whole context is read back from the cache, so a prefix
  // computed earlier and the tokens of this step are seen alike (same dtype
  // rounding whether or not the prefix came from a cache hit).
  q = ops::Cast(q, k_cache.dtype());
  // [T, hq, d] in the cache dtype, which o_proj reads as is (a bf16 layer
  // would round f32 to bf16 anyway); its output is f32 for the residual.
  Tensor out = ops::PagedAttention(q, k_cache, v_cache, sequences, attention_scale_);
  return layer.o_proj.Forward(out.Reshape({total, hq * d}), DType::kF32);
}

Tensor HyperClovaxModel::MlpBlock(const Layer& layer, const Tensor& x) const {
  const int64_t f = config_.intermediate_size;
  Tensor gate_up = layer.gate_up_proj.Forward(x);  // [T, 2f]
  // Written in down_proj's compute dtype, which it would round to anyway.
  Tensor act = ops::SwiGlu(gate_up.Slice(1, 0, f), gate_up.Slice(1, f, 2 * f), layer.down_proj.weight_dtype());
  return layer.down_proj.Forward(act, x.dtype());
}

Status HyperClovaxModel::Forward(const ForwardBatch& batch, const KvCacheView& kv, Tensor* logits) const {
  OMNI_RETURN_IF_ERROR(ValidateBatch(batch, kv));
  auto emit = [&](const std::string& name, const Tensor& t) {
    if (batch.on_activation != nullptr) (*batch.on_activation)(name, t);
  };
  const int64_t total = static_cast<int64_t>(batch.token_ids.size());
  const float eps = static_cast<float>(config_.rms_norm_eps);
  Tensor positions = Tensor::Empty({total}, DType::kI32);
  int64_t t = 0;
  for (const BatchSequence& s : batch.sequences) {
    for (int64_t i = 0; i < s.num_tokens; ++i) positions.data<int32_t>()[t++] = static_cast<int32_t>(s.start_position + i);
  }
  Tensor h = Embed(batch);  // [T, hidden] f32
  emit("embed", h);
  for (int64_t i = 0; i < num_layers(); ++i) {
    const Layer& layer = *layers_[i];
    const std::string prefix = "layers." + std::to_string(i) + ".";
    Tensor attn = AttentionBlock(layer, i, ops::RmsNorm(h, layer.input_norm, eps), positions, batch, kv);
    if (config_.use_post_norm) attn = ops::RmsNorm(attn, layer.post_norm1, eps);
    emit(prefix + "attn_out", attn);
    h = ResidualAdd(h, attn, config_.residual_multiplier);
    Tensor mlp = MlpBlock(layer, ops::RmsNorm(h, layer.post_attention_norm, eps));
    if (config_.use_post_norm) mlp = ops::RmsNorm(mlp, layer.post_norm2, eps);
    emit(prefix + "mlp_out", mlp);
    h = ResidualAdd(h, mlp, config_.residual_multiplier);
    emit(prefix + "out", h);
  }
  const int64_t rows = static_cast<int64_t>(batch.logit_rows.size());
  Tensor selected = Tensor::Empty({rows, hidden_size()}, DType::kF32);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(selected.data<float>() + r * hidden_size(), h.data<float>() + batch.logit_rows[r] * hidden_size(),
                hidden_size() * sizeof(float));
  }
  Tensor normed = ops::RmsNorm(selected, final_norm_, eps);
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
