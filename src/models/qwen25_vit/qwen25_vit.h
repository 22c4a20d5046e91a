// The continuous vision encoder: Qwen2.5-VL's ViT and the Omni model's
// mm_projector, from the shared blocks.
//
//   patch_embed   one GEMM over all patch rows (the Conv3d, t 2 x 14 x 14)
//   rotary        2-D: 20 frequencies of the patch row, 20 of the column,
//                 rotate-half over the 80-dim heads (ApplyMultiAxisRope)
//   windows       rows regrouped window by window (vision_windows.h); blocks
//                 attend within a window, the fullatt_block_indexes blocks
//                 within a frame
//   blocks        pre-RMSNorm, attention (fused qkv with bias, proj),
//                 SwiGLU MLP with biases
//   merger        RMSNorm, each 2x2 block's 4 rows concatenated, Linear,
//                 exact GELU, Linear -> out_hidden_size; original order restored
//   mm_projector  Linear out_hidden_size -> the LLM's width
//
// Tensor names are the Hugging Face checkpoint's: model.vision_model.*
// (patch_embed.proj, blocks.{i}.{norm1,norm2,attn.qkv,attn.proj,
// mlp.gate_proj,mlp.up_proj,mlp.down_proj}, merger.{ln_q,mlp.0,mlp.2}) and
// model.mm_projector.
// Named activations: "patch_embed", "blocks.{i}" (in window order),
// "merger", "projector".
// Thread-safety: immutable after Load; Forward is const.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "models/activation_callback.h"
#include "models/qwen25_vit/vision_windows.h"
#include "tensor/tensor.h"

namespace omni::models {

// Qwen2.5-VL's vision_config keys; defaults are the Omni model's.
struct Qwen25VitConfig {
  int64_t depth = 32;
  int64_t hidden_size = 1280;
  int64_t intermediate_size = 3456;
  int64_t num_heads = 16;
  int64_t out_hidden_size = 5120;
  int64_t in_channels = 3;
  int64_t patch_size = 14;
  int64_t temporal_patch_size = 2;
  int64_t spatial_merge_size = 2;
  int64_t window_size = 112;  // pixels
  std::vector<int64_t> fullatt_block_indexes = {7, 15, 23, 31};
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
};

// From a config.json holding these keys at the top level or under
// "vision_config" (a whole Omni checkpoint's config). hidden_act must be
// silu.
StatusOr<Qwen25VitConfig> ParseQwen25VitConfig(std::string_view json, std::string_view source);

class Qwen25Vit {
 public:
  struct Names {
    std::string vision = "model.vision_model";
    std::string projector = "model.mm_projector";
  };

  static StatusOr<std::unique_ptr<Qwen25Vit>> Load(const Checkpoint& ckpt, const Qwen25VitConfig& config,
                                                   const Names& names);
  static StatusOr<std::unique_ptr<Qwen25Vit>> Load(const Checkpoint& ckpt, const Qwen25VitConfig& config) {
    return Load(ckpt, config, Names{});
  }
  ~Qwen25Vit();

  // pixel_values [sum of t*h*w, in_channels * temporal * patch^2] for the
  // images of `grids` one after another, each as PreprocessImage lays it
  // out -> [sum of t*h*w / merge^2, output_width()] f32, each image's rows in
  // its merge-block order.
  StatusOr<Tensor> Forward(const Tensor& pixel_values, std::span<const PatchGrid> grids,
                           const ActivationCallback* on_activation = nullptr) const;

  const Qwen25VitConfig& config() const { return config_; }
  int64_t output_width() const { return output_width_; }

 private:
  struct Weights;
  Qwen25Vit(Qwen25VitConfig config, std::unique_ptr<Weights> weights, int64_t output_width);

  Qwen25VitConfig config_;
  std::unique_ptr<Weights> w_;
  int64_t output_width_ = 0;
};

}  // namespace omni::models
