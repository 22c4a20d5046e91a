// Normalisation blocks and the residual stream they sit on.
//
//   layers::RmsNorm norm = ...Load(ckpt, "model.layers.0.post_attention_layernorm", hidden, eps);
//   Tensor x = norm.AddResidualAndNorm(&h, attn_out, residual_multiplier);
//   // h += residual_multiplier * attn_out; x = norm(h)
//
// The ops layer has no fused add+norm kernel, so AddResidualAndNorm is two
// passes today; it is the one place to fuse them when a kernel exists.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "tensor/tensor.h"

namespace omni::models::layers {

// h + multiplier * delta (one pass without the scale when multiplier is 1);
// h and delta of one shape. muP's residual_multiplier; 1 elsewhere.
Tensor ResidualAdd(const Tensor& h, const Tensor& delta, double multiplier = 1.0);

// x / sqrt(mean(x^2) + eps) * (weight + weight_offset), over the last dim.
// Loaded from "<prefix>.weight". Thread-safe: immutable after Load.
struct RmsNorm {
  Tensor weight;  // [dim] f32
  float eps = 1e-6f;
  float weight_offset = 0.f;  // 1: Gemma-style (1 + w)

  static StatusOr<RmsNorm> Load(const Checkpoint& ckpt, std::string_view prefix, int64_t dim, float eps,
                                float weight_offset = 0.f);
  // x [..., dim] f32/bf16 -> same shape and dtype.
  Tensor Forward(const Tensor& x) const;
  // *h = ResidualAdd(*h, delta, multiplier); returns Forward(*h).
  Tensor AddResidualAndNorm(Tensor* h, const Tensor& delta, double multiplier = 1.0) const;
};

// (x - mean) / sqrt(var + eps) * weight + bias, over the last dim. Loaded
// from "<prefix>.weight" and "<prefix>.bias"; `affine` false (DiT's
// elementwise_affine=False before adaLN) loads nothing.
struct LayerNorm {
  Tensor weight;  // [dim] f32, or undefined without affine
  Tensor bias;    // [dim] f32, or undefined
  float eps = 1e-5f;

  struct Options {
    bool affine = true;
    bool bias = true;  // read "<prefix>.bias" (affine only)
  };
  static StatusOr<LayerNorm> Load(const Checkpoint& ckpt, std::string_view prefix, int64_t dim, float eps,
                                  const Options& options);
  static StatusOr<LayerNorm> Load(const Checkpoint& ckpt, std::string_view prefix, int64_t dim, float eps) {
    return Load(ckpt, prefix, dim, eps, Options{});
  }
  Tensor Forward(const Tensor& x) const;
  Tensor AddResidualAndNorm(Tensor* h, const Tensor& delta, double multiplier = 1.0) const;
};

}  // namespace omni::models::layers
