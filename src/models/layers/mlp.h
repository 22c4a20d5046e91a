// Feed-forward blocks.
//
//   GatedMlp (LLaMA, Qwen2.5-ViT): down(act(gate(x)) * up(x)), gate and up
//     stacked into one packed Linear [2 * intermediate, hidden].
//   Mlp (ViT, SigLIP, DiT): fc2(act(fc1(x))), GELU by default.
//
// Thread-safety: immutable after Load; Forward is const.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "models/layers/activation.h"
#include "ops/linear.h"
#include "tensor/tensor.h"

namespace omni::models::layers {

struct GatedMlpConfig {
  int64_t hidden = 0;
  int64_t intermediate = 0;
  bool bias = false;
  // Names under the block's prefix (Hugging Face LLaMA's by default).
  std::string gate_name = "gate_proj";
  std::string up_name = "up_proj";
  std::string down_name = "down_proj";
};

// SwiGLU: the gate's activation is SiLU (the only gated form in use here).
struct GatedMlp {
  int64_t intermediate = 0;
  ops::Linear gate_up_proj;  // [2 * intermediate, hidden]: gate rows, then up rows
  ops::Linear down_proj;     // [hidden, intermediate]

  static StatusOr<GatedMlp> Load(const Checkpoint& ckpt, std::string_view prefix, const GatedMlpConfig& config);
  // x [T, hidden] f32/bf16 -> [T, hidden] in x's dtype.
  Tensor Forward(const Tensor& x) const;
};

struct MlpConfig {
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t out = 0;  // 0: hidden
  bool bias = true;
  Activation activation = Activation::kGelu;
  std::string fc1_name = "fc1";
  std::string fc2_name = "fc2";
};

struct Mlp {
  Activation activation = Activation::kGelu;
  ops::Linear fc1;  // [intermediate, hidden]
  ops::Linear fc2;  // [out, intermediate]

  static StatusOr<Mlp> Load(const Checkpoint& ckpt, std::string_view prefix, const MlpConfig& config);
  // x [..., hidden] f32/bf16 -> [..., out] in x's dtype.
  Tensor Forward(const Tensor& x) const;
};

}  // namespace omni::models::layers
