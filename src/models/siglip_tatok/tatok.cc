#include "models/siglip_tatok/tatok.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "models/layers/attention_dense.h"
#include "models/layers/mlp.h"
#include "models/layers/norm.h"
#include "models/layers/patch_embed.h"
#include "models/layers/weights.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"

namespace omni::models {
namespace {

// Rows of x [n, d] f32 scaled to unit length (a zero row stays zero), as
// torch's F.normalize with its eps 1e-12.
void NormalizeRows(Tensor* x) {
  const int64_t n = x->dim(0), d = x->dim(1);
  float* p = x->data<float>();
  for (int64_t r = 0; r < n; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(p[r * d + i]) * p[r * d + i];
    const float inv = static_cast<float>(1.0 / std::max(std::sqrt(ss), 1e-12));
    for (int64_t i = 0; i < d; ++i) p[r * d + i] *= inv;
  }
}

}  // namespace

struct TaTok::Weights {
  struct Layer {
    layers::LayerNorm norm1, norm2;
    layers::DenseAttention attn;
    layers::Mlp mlp;
  };
  layers::PatchEmbedding patch_embed;
  Tensor positions;  // [num_tokens, hidden] f32
  std::vector<Layer> layers;
  ops::Linear task;        // encode_task_layer.0, then tanh
  ops::Linear bottleneck;  // in_linear
  ops::Linear codes;       // [codebook_size, bottleneck_dim]: the projected codebook, rows unit length
};

TaTok::TaTok(TaTokConfig config, std::unique_ptr<Weights> weights)
    : config_(std::move(config)), w_(std::move(weights)) {}
TaTok::~TaTok() = default;

int64_t TaTok::num_tokens() const {
  const int64_t side = config_.image_size / config_.patch_size;
  return side * side;
}

StatusOr<TaTokConfig> ParseTaTokConfig(std::string_view json, std::string_view source) {
  nlohmann::json root = nlohmann::json::parse(json, nullptr, false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgument(fmt::format("{}: not a JSON object", source));
  TaTokConfig c;
  if (!root.contains("discrete_vision_config")) return c;
  const nlohmann::json& j = root["discrete_vision_config"];
  if (!j.is_object()) return InvalidArgument(fmt::format("{}: discrete_vision_config must be an object", source));
  auto get = [&](const char* key, int64_t* out, bool positive = true) -> Status {
    if (!j.contains(key)) return Status::Ok();
    if (!j[key].is_number_integer() || (positive && j[key].get<int64_t>() <= 0)) {
      return InvalidArgument(fmt::format("{}: discrete_vision_config.{} must be a positive integer", source, key));
    }
    *out = j[key].get<int64_t>();
    return Status::Ok();
  };
  OMNI_RETURN_IF_ERROR(get("hidden_size", &c.hidden_size));
  OMNI_RETURN_IF_ERROR(get("intermediate_size", &c.intermediate_size));
  OMNI_RETURN_IF_ERROR(get("num_hidden_layers", &c.num_hidden_layers));
  OMNI_RETURN_IF_ERROR(get("num_attention_heads", &c.num_attention_heads));
  OMNI_RETURN_IF_ERROR(get("image_size", &c.image_size));
  OMNI_RETURN_IF_ERROR(get("patch_size", &c.patch_size));
  OMNI_RETURN_IF_ERROR(get("select_layer", &c.select_layer, /*positive=*/false));
  OMNI_RETURN_IF_ERROR(get("bottleneck_dim", &c.bottleneck_dim));
  OMNI_RETURN_IF_ERROR(get("codebook_size", &c.codebook_size));
  if (j.contains("layer_norm_eps")) {
    if (!j["layer_norm_eps"].is_number()) return InvalidArgument(fmt::format("{}: layer_norm_eps must be a number", source));
    c.layer_norm_eps = j["layer_norm_eps"].get<double>();
  }
  const int64_t used = c.select_layer < 0 ? c.num_hidden_layers + 1 + c.select_layer : c.select_layer;
  if (used < 0 || used > c.num_hidden_layers) {
    return InvalidArgument(fmt::format("{}: select_layer {} outside the {} layers", source, c.select_layer,
                                       c.num_hidden_layers));
  }
  if (c.hidden_size % c.num_attention_heads != 0) {
    return InvalidArgument(fmt::format("{}: hidden_size must be a multiple of num_attention_heads", source));
  }
  return c;
}

StatusOr<std::unique_ptr<TaTok>> TaTok::Load(const Checkpoint& ckpt, const TaTokConfig& c, std::string_view prefix) {
  using layers::WeightName;
  auto w = std::make_unique<Weights>();
  const std::string root(prefix);
  const std::string emb = WeightName(root, "encoder.embeddings");
  const int64_t hidden = c.hidden_size, side = c.image_size / c.patch_size;
  const float eps = static_cast<float>(c.layer_norm_eps);
  OMNI_ASSIGN_OR_RETURN(w->patch_embed, layers::PatchEmbedding::Load(ckpt, emb,
                                                                     {.in_channels = 3, .patch_size = c.patch_size,
                                                                      .temporal_patch = 1, .hidden = hidden,
                                                                      .bias = true, .name = "patch_embedding"}));
  OMNI_ASSIGN_OR_RETURN(Tensor positions, layers::LoadFloatWeight(ckpt, WeightName(emb, "position_embedding.weight"),
                                                                  {side * side, hidden}));
  w->positions = positions.To(DType::kF32);
  const int64_t used = c.select_layer < 0 ? c.num_hidden_layers + 1 + c.select_layer : c.select_layer;
  for (int64_t i = 0; i < used; ++i) {
    const std::string p = WeightName(root, "encoder.encoder.layers." + std::to_string(i));
    Weights::Layer l;
    OMNI_ASSIGN_OR_RETURN(l.norm1, layers::LayerNorm::Load(ckpt, WeightName(p, "layer_norm1"), hidden, eps));
    OMNI_ASSIGN_OR_RETURN(l.norm2, layers::LayerNorm::Load(ckpt, WeightName(p, "layer_norm2"), hidden, eps));
    OMNI_ASSIGN_OR_RETURN(l.attn, layers::DenseAttention::Load(ckpt, WeightName(p, "self_attn"),
                                                               {.hidden = hidden, .num_heads = c.num_attention_heads,
                                                                .head_dim = hidden / c.num_attention_heads,
                                                                .bias = true}));
    OMNI_ASSIGN_OR_RETURN(l.mlp, layers::Mlp::Load(ckpt, WeightName(p, "mlp"),
                                                   {.hidden = hidden, .intermediate = c.intermediate_size,
                                                    .bias = true, .activation = layers::Activation::kGeluTanh}));
    w->layers.push_back(std::move(l));
  }
  OMNI_ASSIGN_OR_RETURN(w->task, layers::LoadLinear(ckpt, WeightName(root, "encode_task_layer.0"), hidden, hidden,
                                                    /*bias=*/true));
  OMNI_ASSIGN_OR_RETURN(w->bottleneck, layers::LoadLinear(ckpt, WeightName(root, "bottleneck.in_linear"),
                                                          c.bottleneck_dim, hidden, /*bias=*/true));
  // The projected, normalised codebook, computed once (the reference redoes
  // it on every call).
  const std::string vq = WeightName(root, "bottleneck.regularizer");
  OMNI_ASSIGN_OR_RETURN(Tensor codebook, layers::LoadFloatWeight(ckpt, WeightName(vq, "embedding.weight"),
                                                                 {c.codebook_size, c.bottleneck_dim}));
  OMNI_ASSIGN_OR_RETURN(ops::Linear projection, layers::LoadLinear(ckpt, WeightName(vq, "embedding_proj"),
                                                                   c.bottleneck_dim, c.bottleneck_dim, /*bias=*/true));
  Tensor codes = projection.Forward(codebook.To(DType::kF32), DType::kF32);  // [codebook_size, bottleneck_dim]
  NormalizeRows(&codes);
  w->codes = ops::Linear(layers::ToBf16(codes));
  return std::unique_ptr<TaTok>(new TaTok(c, std::move(w)));
}

StatusOr<std::vector<int32_t>> TaTok::Encode(const Tensor& image, const ActivationCallback* on_activation) const {
  OMNI_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> ids, EncodeBatch({&image, 1}, on_activation));
  return std::move(ids.front());
}

StatusOr<std::vector<std::vector<int32_t>>> TaTok::EncodeBatch(std::span<const Tensor> images,
                                                               const ActivationCallback* on_activation) const {
  const TaTokConfig& c = config_;
  if (images.empty()) return InvalidArgument("TA-Tok: no images");
  for (const Tensor& image : images) {
    if (image.rank() != 3 || image.dim(0) != 3 || image.dim(1) != c.image_size || image.dim(2) != c.image_size ||
        image.dtype() != DType::kF32) {
      return InvalidArgument(fmt::format("TA-Tok takes a [3, {0}, {0}] f32 image, got {1}", c.image_size,
                                         image.DebugString()));
    }
  }
  auto emit = [&](const std::string& name, const Tensor& t) {
    if (on_activation != nullptr) (*on_activation)(name, t);
  };
  const int64_t side = c.image_size / c.patch_size, covered = side * c.patch_size;
  const int64_t per_image = side * side, count = std::ssize(images);
  std::vector<Tensor> embedded;
  for (const Tensor& image : images) {
    Tensor patches = layers::PatchEmbedding::Patchify(image.Slice(1, 0, covered).Slice(2, 0, covered), c.patch_size);
    embedded.push_back(ops::Add(w_->patch_embed.Forward(patches), w_->positions));  // [tokens, hidden] f32
  }
  Tensor h = count == 1 ? embedded.front() : ops::Concat(embedded, 0);
  emit("embeddings", h);
  layers::DenseAttentionCall call;
  std::vector<int32_t> segments;  // the mask's view of it
  if (count > 1) {
    std::vector<int32_t> cu(count + 1);
    for (int64_t i = 0; i <= count; ++i) cu[i] = static_cast<int32_t>(i * per_image);
    segments = ops::SegmentIdsFromCuSeqlens(cu);
    call.mask.q_segments = segments;
  }
  for (size_t i = 0; i < w_->layers.size(); ++i) {
    const Weights::Layer& l = w_->layers[i];
    Tensor attn = l.attn.Forward(l.norm1.Forward(h), call);
    Tensor mlp = l.mlp.Forward(l.norm2.AddResidualAndNorm(&h, attn));
    h = layers::ResidualAdd(h, mlp);
    emit("layers." + std::to_string(i), h);
  }
  Tensor task = ops::Tanh(w_->task.Forward(h, DType::kF32));
  emit("task", task);
  Tensor z = w_->bottleneck.Forward(task, DType::kF32);  // [tokens, bottleneck_dim]
  emit("bottleneck", z);
  NormalizeRows(&z);
  // Nearest code by cosine, 64 rows at a time ([64, codebook_size] scores).
  const int64_t tokens = z.dim(0), chunk = 64;
  std::vector<int32_t> ids(tokens);
  for (int64_t r0 = 0; r0 < tokens; r0 += chunk) {
    const int64_t n = std::min(chunk, tokens - r0);
    Tensor scores = w_->codes.Forward(z.Slice(0, r0, r0 + n), DType::kF32);
    const float* s = scores.data<float>();
    for (int64_t r = 0; r < n; ++r) {
      const float* row = s + r * c.codebook_size;
      ids[r0 + r] = static_cast<int32_t>(std::max_element(row, row + c.codebook_size) - row);
    }
  }
  std::vector<std::vector<int32_t>> out;
  for (int64_t i = 0; i < count; ++i) out.emplace_back(ids.begin() + i * per_image, ids.begin() + (i + 1) * per_image);
  return out;
}

}  // namespace omni::models
