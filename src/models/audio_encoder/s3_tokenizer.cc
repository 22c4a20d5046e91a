#include "models/audio_encoder/s3_tokenizer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/core.h>

#include "models/layers/attention_dense.h"
#include "models/layers/conv_stem.h"
#include "models/layers/mlp.h"
#include "models/layers/norm.h"
#include "models/layers/weights.h"
#include "ops/conv.h"
#include "ops/rope.h"

namespace omni::models {
namespace {

constexpr int64_t kHeadDim = 64;
constexpr int64_t kFsmnKernel = 31;
constexpr int kDigits = 8;
constexpr float kFsqScale = 0.9990000128746033f;  // the reference's 0.999 as it is stored in f32

}  // namespace

struct S3Tokenizer::Weights {
  struct Block {
    layers::LayerNorm attn_norm, mlp_norm;
    layers::DenseAttention attn;
    ops::Conv fsmn;  // depthwise, f32 weights: the memory is computed in f32
    layers::Mlp mlp;
  };
  layers::ConvStem convs;
  std::vector<Block> blocks;
  ops::Linear project_down;  // [8, S]
  Tensor inv_freq;           // [32] f32
};

S3Tokenizer::S3Tokenizer(S3TokenizerConfig config, std::unique_ptr<Weights> weights)
    : config_(config), w_(std::move(weights)) {}
S3Tokenizer::~S3Tokenizer() = default;

int64_t S3Tokenizer::TokensForFrames(int64_t frames) {
  if (frames <= 0) return 0;
  const int64_t half = (frames - 1) / 2 + 1;
  return (half - 1) / 2 + 1;
}

StatusOr<std::unique_ptr<S3Tokenizer>> S3Tokenizer::Load(const Checkpoint& ckpt, const S3TokenizerConfig& c) {
  using layers::WeightName;
  const std::string root = "model.discrete_audio_model";
  const std::string enc = WeightName(root, "encoder");
  const int64_t s = c.n_audio_state;
  auto w = std::make_unique<Weights>();
  ops::ConvParams stride2;
  stride2.padding = {1};
  stride2.stride = {2};
  const layers::ConvStageSpec stages[] = {
      {.name = "conv1", .params = stride2, .activation = layers::Activation::kGelu},
      {.name = "conv2", .params = stride2, .activation = layers::Activation::kGelu}};
  OMNI_ASSIGN_OR_RETURN(w->convs, layers::ConvStem::Load(ckpt, enc, /*spatial_rank=*/1, stages));
  if (w->convs.stages[0].conv.in_channels() != c.n_mels || w->convs.stages[1].conv.out_channels() != s) {
    return InvalidArgument(fmt::format("{}.conv1/conv2: expected {} mel bins in and {} channels out", enc, c.n_mels, s));
  }
  ops::ConvParams depthwise;
  depthwise.padding = {(kFsmnKernel - 1) / 2};
  depthwise.groups = s;
  for (int64_t i = 0; i < c.n_audio_layer; ++i) {
    const std::string p = WeightName(enc, "blocks." + std::to_string(i));
    Weights::Block b;
    OMNI_ASSIGN_OR_RETURN(b.attn_norm, layers::LayerNorm::Load(ckpt, WeightName(p, "attn_ln"), s, 1e-6f));
    OMNI_ASSIGN_OR_RETURN(b.mlp_norm, layers::LayerNorm::Load(ckpt, WeightName(p, "mlp_ln"), s, 1e-5f));
    OMNI_ASSIGN_OR_RETURN(b.attn, layers::DenseAttention::Load(ckpt, WeightName(p, "attn"),
                                                               {.hidden = s,
                                                                .num_heads = c.n_audio_head,
                                                                .head_dim = kHeadDim,
                                                                .bias = true,
                                                                .k_bias = false,
                                                                .qkv_names = {"query", "key", "value"},
                                                                .o_name = "out"}));
    OMNI_ASSIGN_OR_RETURN(Tensor fsmn, layers::LoadFloatWeight(ckpt, WeightName(p, "attn.fsmn_block.weight"),
                                                              {s, 1, kFsmnKernel}));
    b.fsmn = ops::Conv(fsmn.To(DType::kF32), Tensor(), depthwise);
    OMNI_ASSIGN_OR_RETURN(b.mlp, layers::Mlp::Load(ckpt, WeightName(p, "mlp"),
                                                   {.hidden = s, .intermediate = 4 * s, .bias = true,
                                                    .activation = layers::Activation::kGelu,
                                                    .fc1_name = "0", .fc2_name = "2"}));
    w->blocks.push_back(std::move(b));
  }
  OMNI_ASSIGN_OR_RETURN(w->project_down, layers::LoadLinear(ckpt, WeightName(root, "quantizer._codebook.project_down"),
                                                            kDigits, s, /*bias=*/true));
  w->inv_freq = ops::RopeInvFreq(kHeadDim, 10000.0);
  return std::unique_ptr<S3Tokenizer>(new S3Tokenizer(c, std::move(w)));
}

StatusOr<std::vector<int32_t>> S3Tokenizer::Encode(const Tensor& mel, const ActivationCallback* on_activation) const {
  const int64_t s = config_.n_audio_state;
  if (mel.rank() != 2 || mel.dim(0) != config_.n_mels || mel.dim(1) < 1 || mel.dtype() != DType::kF32) {
    return InvalidArgument(fmt::format("S3 tokenizer takes a [{}, frames] f32 mel, got {}", config_.n_mels,
                                       mel.DebugString()));
  }
  auto emit = [&](const std::string& name, const Tensor& t) {
    if (on_activation != nullptr) (*on_activation)(name, t);
  };
  const int64_t frames = mel.dim(1);
  Tensor conv = w_->convs.Forward(mel.Contiguous().Reshape({1, config_.n_mels, frames}));  // [1, S, T]
  const int64_t tokens = conv.dim(2);
  OMNI_CHECK_EQ(tokens, TokensForFrames(frames));
  Tensor h = conv.Reshape({s, tokens}).Transpose(0, 1).Copy();  // [T, S]
  emit("convs", h);

  Tensor positions = Tensor::Empty({tokens}, DType::kI32);
  for (int64_t i = 0; i < tokens; ++i) positions.data<int32_t>()[i] = static_cast<int32_t>(i);
  const ops::RopeParams rope{.inv_freq = w_->inv_freq, .style = ops::RopeStyle::kNeox};
  for (size_t i = 0; i < w_->blocks.size(); ++i) {
    const Weights::Block& b = w_->blocks[i];
    Tensor memory;  // fsmn(v) [T, S]
    layers::DenseAttentionCall call;
    call.qk_hook = [&](Tensor* q, Tensor* k) {
      *q = ops::ApplyRope(*q, positions, rope);
      *k = ops::ApplyRope(*k, positions, rope);
    };
    call.v_hook = [&](const Tensor& v) {
      Tensor v_rows = v.Contiguous().Reshape({tokens, s});  // [T, S]
      Tensor conv_in = v_rows.Transpose(0, 1).Copy().Reshape({1, s, tokens});
      Tensor memory_t = b.fsmn.Forward(conv_in);  // [1, S, T]
      memory = memory_t.Reshape({s, tokens}).Transpose(0, 1).Copy();
      float* m = memory.data<float>();
      const float* vr = v_rows.data<float>();
      for (int64_t j = 0; j < tokens * s; ++j) m[j] += vr[j];
    };
    Tensor attn = b.attn.Forward(b.attn_norm.Forward(h), call);
    h = layers::ResidualAdd(layers::ResidualAdd(h, attn), memory);
    h = layers::ResidualAdd(h, b.mlp.Forward(b.mlp_norm.Forward(h)));
    emit("blocks." + std::to_string(i), h);
  }
  Tensor projected = w_->project_down.Forward(h, DType::kF32);  // [T, 8]
  const float* p = projected.data<float>();
  std::vector<float> fsq(static_cast<size_t>(tokens) * kDigits);
  std::vector<int32_t> ids(tokens);
  for (int64_t t = 0; t < tokens; ++t) {
    int32_t id = 0, power = 1;
    for (int j = 0; j < kDigits; ++j, power *= 3) {
      const float v = std::tanh(p[t * kDigits + j]) * kFsqScale;
      fsq[t * kDigits + j] = v;
      id += (static_cast<int32_t>(std::nearbyint(v)) + 1) * power;
    }
    ids[t] = id;
  }
  if (on_activation != nullptr) {
    Tensor fsq_tensor = Tensor::Empty({tokens, kDigits}, DType::kF32);
    std::copy(fsq.begin(), fsq.end(), fsq_tensor.data<float>());
    emit("fsq", fsq_tensor);
  }
  return ids;
}

}  // namespace omni::models
