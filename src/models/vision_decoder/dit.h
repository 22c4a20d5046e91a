// The vision decoder's diffusion transformer (OmniServe's VisionTransformer,
// a Flux-style single-stream DiT; spec/omni-model.md, "Vision decoder
// details"):
//
//   h   = img_in([latent | condition])                      [T, hidden]
//   vec = time_in(temb(1000 t)) + vector_in(pooled)          [1, hidden]
//   per single block:  shift, scale, gate = modulation.lin(silu(vec))
//     xm = (1 + scale) LN(h) + shift;  qkv | mlp = linear1(xm)
//     q, k = RoPE(RmsNorm(q)), RoPE(RmsNorm(k))              3 axes (0, row, col), adjacent pairs
//     h += gate * linear2([attention(q, k, v) | gelu_tanh(mlp)])
//   out = final_layer.linear((1 + scale) LN(h) + shift)      [T, in_channels]
//
// Everything but the attention is per token, so a rank of a sequence-parallel
// group runs Forward on its own tokens and passes a SequenceAttention that
// exchanges heads for tokens around ops::Attention (Ulysses); the default is
// ops::Attention over the tokens given.
//
// Numerics: bf16 weights; every projection's input is rounded to bf16 and
// accumulates in f32; norms, RoPE, attention and the residual stream are f32.
//
// Thread-safety: immutable after Load; Forward is const.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "models/layers/adaln.h"
#include "ops/linear.h"
#include "tensor/tensor.h"

namespace omni::models {

// transformer/config.json. Double-stream blocks (`depth` > 0), patchify and
// guidance embedding are refused: the Omni decoder has none.
struct DitConfig {
  int64_t in_channels = 16;
  int64_t vec_in_dim = 1536;
  int64_t context_in_dim = 1536;
  int64_t hidden_size = 1920;
  double mlp_ratio = 4.0;
  int64_t num_heads = 24;
  int64_t depth_single_blocks = 35;
  std::vector<int64_t> axes_dim = {8, 36, 36};
  double theta = 10000;
  bool qkv_bias = true;

  int64_t head_dim() const { return hidden_size / num_heads; }
  int64_t mlp_hidden() const { return static_cast<int64_t>(static_cast<double>(hidden_size) * mlp_ratio); }
};
StatusOr<DitConfig> ParseDitConfig(std::string_view json, std::string_view source);

// Attention of this rank's queries over the whole sequence: q, k, v
// [T_local, heads, head_dim] f32 -> [T_local, heads, head_dim] f32.
using SequenceAttention = std::function<Tensor(const Tensor& q, const Tensor& k, const Tensor& v, float scale)>;

struct DitInput {
  Tensor tokens;     // [T, in_channels + context_in_dim] f32: the latent's channels, then the condition's
  Tensor positions;  // [3, T] i32: (0, row, col) of each token in the latent grid
  Tensor pooled;     // [1, vec_in_dim] f32: the mean of the condition's embeddings
  float timestep = 0.f;  // the DiT's sigma (DitTimestep), in [0, 1]
};

// [3, h * w] i32 positions (0, row, col) of the tokens [begin, end) of an
// h x w grid in row-major order.
Tensor DitPositions(int64_t h, int64_t w, int64_t begin, int64_t end);

class VisionDit {
 public:
  // `dir`: config.json + diffusion_pytorch_model.safetensors.
  static StatusOr<VisionDit> Load(const std::string& dir);

  // -> [T, in_channels] f32, the predicted velocity of each token.
  Tensor Forward(const DitInput& input, const SequenceAttention& attention = {}) const;
  // The conditioning vector [1, hidden] f32 (time_in + vector_in).
  Tensor Conditioning(float timestep, const Tensor& pooled) const;

  const DitConfig& config() const { return config_; }

 private:
  struct Block {
    ops::Linear linear1;  // [3 hidden + mlp, hidden]
    ops::Linear linear2;  // [hidden, hidden + mlp]
    Tensor query_norm, key_norm;  // [head_dim] f32
    layers::AdaLnModulation modulation;  // 3 chunks: shift, scale, gate
  };
  Tensor BlockForward(const Block& block, const Tensor& h, const Tensor& vec, const Tensor& positions,
                      const SequenceAttention& attention) const;

  DitConfig config_;
  ops::Linear img_in_, time_in_, time_out_, vector_in_, vector_out_;
  std::vector<Block> blocks_;
  layers::AdaLnModulation final_modulation_;  // 2 chunks: shift, scale
  ops::Linear final_linear_;
  Tensor rope_inv_freq_;  // [head_dim / 2]: each axis's frequencies, concatenated
};

}  // namespace omni::models
