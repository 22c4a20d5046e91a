#include "models/audio_encoder/qwen2_audio.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "models/layers/attention_dense.h"
#include "models/layers/conv_stem.h"
#include "models/layers/mlp.h"
#include "models/layers/norm.h"
#include "models/layers/weights.h"
#include "ops/attention.h"
#include "ops/shape_ops.h"

namespace omni::models {
namespace {

constexpr float kLayerNormEps = 1e-5f;  // nn.LayerNorm's default, as Whisper's layers use

// Positions of a chunk after conv2: (L - 1) / 2 + 1 for L >= 1 valid frames.
int64_t PositionsForFrames(int64_t valid_frames) { return (valid_frames - 1) / 2 + 1; }

}  // namespace

struct Qwen2AudioEncoder::Weights {
  struct Layer {
    layers::LayerNorm norm1, norm2;  // self_attn_layer_norm, final_layer_norm
    layers::DenseAttention attn;
    layers::Mlp mlp;
  };
  layers::ConvStem convs;
  Tensor positions;  // [max_source_positions, d] f32
  std::vector<Layer> layers;
  layers::LayerNorm final_norm;
  layers::Mlp projector;
};

Qwen2AudioEncoder::Qwen2AudioEncoder(Qwen2AudioConfig config, std::unique_ptr<Weights> weights)
    : config_(config), w_(std::move(weights)) {}
Qwen2AudioEncoder::~Qwen2AudioEncoder() = default;

int64_t Qwen2AudioEncoder::RowsForFrames(int64_t valid_frames) {
  if (valid_frames <= 0) return 0;
  const int64_t positions = PositionsForFrames(valid_frames);
  return positions < 2 ? 0 : (positions - 2) / 2 + 1;
}

StatusOr<std::unique_ptr<Qwen2AudioEncoder>> Qwen2AudioEncoder::Load(const Checkpoint& ckpt,
                                                                     const Qwen2AudioConfig& c) {
  using layers::WeightName;
  const std::string root = "model.audio_model";
  const int64_t d = c.d_model;
  auto w = std::make_unique<Weights>();
  ops::ConvParams conv1, conv2;
  conv1.padding = {1};
  conv2.padding = {1};
  conv2.stride = {2};
  const layers::ConvStageSpec stages[] = {{.name = "conv1", .params = conv1, .activation = layers::Activation::kGelu},
                                          {.name = "conv2", .params = conv2, .activation = layers::Activation::kGelu}};
  OMNI_ASSIGN_OR_RETURN(w->convs, layers::ConvStem::Load(ckpt, root, /*spatial_rank=*/1, stages));
  if (w->convs.stages[0].conv.in_channels() != c.num_mel_bins || w->convs.stages[1].conv.out_channels() != d) {
    return InvalidArgument(fmt::format("{}.conv1/conv2: expected {} mel bins in and {} channels out", root,
                                       c.num_mel_bins, d));
  }
  OMNI_ASSIGN_OR_RETURN(Tensor positions, layers::LoadFloatWeight(ckpt, WeightName(root, "embed_positions.weight"),
                                                                  {c.max_source_positions, d}));
  w->positions = positions.To(DType::kF32);
  for (int64_t i = 0; i < c.encoder_layers; ++i) {
    const std::string p = WeightName(root, "layers." + std::to_string(i));
    Weights::Layer l;
    OMNI_ASSIGN_OR_RETURN(l.norm1, layers::LayerNorm::Load(ckpt, WeightName(p, "self_attn_layer_norm"), d,
                                                           kLayerNormEps));
    OMNI_ASSIGN_OR_RETURN(l.norm2, layers::LayerNorm::Load(ckpt, WeightName(p, "final_layer_norm"), d, kLayerNormEps));
    OMNI_ASSIGN_OR_RETURN(l.attn, layers::DenseAttention::Load(ckpt, WeightName(p, "self_attn"),
                                                               {.hidden = d,
                                                                .num_heads = c.encoder_attention_heads,
                                                                .head_dim = d / c.encoder_attention_heads,
                                                                .bias = true,
                                                                .k_bias = false}));
    OMNI_ASSIGN_OR_RETURN(l.mlp, layers::Mlp::Load(ckpt, p, {.hidden = d, .intermediate = c.encoder_ffn_dim,
                                                              .bias = true, .activation = layers::Activation::kGelu}));
    w->layers.push_back(std::move(l));
  }
  OMNI_ASSIGN_OR_RETURN(w->final_norm, layers::LayerNorm::Load(ckpt, WeightName(root, "layer_norm"), d, kLayerNormEps));
  OMNI_ASSIGN_OR_RETURN(w->projector, layers::Mlp::Load(ckpt, "model.audio_projector",
                                                        {.hidden = d, .intermediate = d, .out = c.llm_hidden_size,
                                                         .bias = true, .activation = layers::Activation::kGelu}));
  return std::unique_ptr<Qwen2AudioEncoder>(new Qwen2AudioEncoder(c, std::move(w)));
}

StatusOr<Tensor> Qwen2AudioEncoder::Forward(std::span<const WhisperMelChunk> chunks,
                                            const ActivationCallback* on_activation) const {
  const int64_t d = config_.d_model, mels = config_.num_mel_bins;
  auto emit = [&](const std::string& name, const Tensor& t) {
    if (on_activation != nullptr) (*on_activation)(name, t);
  };
  // The convs per chunk, over the frames its kept rows depend on.
  std::vector<Tensor> embedded;
  std::vector<int32_t> cu_seqlens = {0};
  std::vector<int64_t> kept;
  for (const WhisperMelChunk& chunk : chunks) {
    if (chunk.mel.rank() != 2 || chunk.mel.dim(0) != mels || chunk.mel.dtype() != DType::kF32 ||
        chunk.valid_frames < 1 || chunk.valid_frames > chunk.mel.dim(1)) {
      return InvalidArgument(fmt::format("Qwen2-Audio encoder: a chunk must be a [{}, frames] f32 mel with 1 to "
                                         "frames valid frames, got {} with {}",
                                         mels, chunk.mel.DebugString(), chunk.valid_frames));
    }
    const int64_t positions = PositionsForFrames(chunk.valid_frames);
    if (positions > config_.max_source_positions) {
      return InvalidArgument(fmt::format("Qwen2-Audio encoder: a chunk of {} positions is over the {} of the "
                                         "position table", positions, config_.max_source_positions));
    }
    const int64_t frames = std::min(chunk.mel.dim(1), 2 * positions + 1);
    Tensor mel = chunk.mel.Slice(1, 0, frames).Copy().Reshape({1, mels, frames});
    Tensor conv = w_->convs.Forward(mel);  // [1, d, >= positions]
    Tensor rows = conv.Reshape({d, conv.dim(2)}).Transpose(0, 1).Slice(0, 0, positions).Copy();
    float* r = rows.data<float>();
    const float* pos = w_->positions.data<float>();
    for (int64_t i = 0; i < positions * d; ++i) r[i] += pos[i];
    embedded.push_back(std::move(rows));
    cu_seqlens.push_back(static_cast<int32_t>(cu_seqlens.back() + positions));
    kept.push_back(RowsForFrames(chunk.valid_frames));
  }
  if (embedded.empty()) return InvalidArgument("Qwen2-Audio encoder: no chunks");
  Tensor h = embedded.size() == 1 ? embedded.front() : ops::Concat(embedded, 0);
  emit("convs", h);
  layers::DenseAttentionCall call;
  std::vector<int32_t> segments;
  if (embedded.size() > 1) {
    segments = ops::SegmentIdsFromCuSeqlens(cu_seqlens);
    call.mask.q_segments = segments;
  }
  for (size_t i = 0; i < w_->layers.size(); ++i) {
    const Weights::Layer& l = w_->layers[i];
    Tensor attn = l.attn.Forward(l.norm1.Forward(h), call);
    Tensor mlp = l.mlp.Forward(l.norm2.AddResidualAndNorm(&h, attn));
    h = layers::ResidualAdd(h, mlp);
    emit("layers." + std::to_string(i), h);
  }
  // AvgPool1d(2, 2) per chunk, keeping the rows whose pair is valid.
  int64_t total = 0;
  for (int64_t k : kept) total += k;
  Tensor pooled = Tensor::Empty({total, d}, DType::kF32);
  const float* src = h.data<float>();
  float* dst = pooled.data<float>();
  int64_t out_row = 0;
  for (size_t c = 0; c < kept.size(); ++c) {
    const float* base = src + static_cast<int64_t>(cu_seqlens[c]) * d;
    for (int64_t r = 0; r < kept[c]; ++r, ++out_row) {
      const float* a = base + 2 * r * d;
      const float* b = a + d;
      for (int64_t j = 0; j < d; ++j) dst[out_row * d + j] = 0.5f * (a[j] + b[j]);
    }
  }
  if (total == 0) return Tensor::Empty({0, config_.llm_hidden_size}, DType::kF32);
  Tensor normed = w_->final_norm.Forward(pooled);
  emit("pooled", normed);
  Tensor rows = w_->projector.Forward(normed);
  emit("rows", rows);
  return rows;
}

}  // namespace omni::models
