// A random-weight vision decoder folder (`make-demo-model --component vd`) in
// the released pipeline's schema (spec/omni-model.md, "Vision decoder
// details"): model_index.json, scheduler/scheduler_config.json, and
// transformer/, transformer2/ (the autoguidance DiT), vae/, token_embedder/,
// each a config.json and a diffusion_pytorch_model.safetensors with the
// released tensor names. The VAE holds its decoder only (the released file
// also has the encoder, which image generation never runs). Deterministic for
// a seed (demo_weights.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace omni::models {

struct DemoVisionDecoderSpec {
  uint64_t seed = 11;
  // DiT (both transformers; transformer2 has its own weights)
  int64_t hidden_size = 64;
  int64_t num_heads = 4;  // --sp 2 and 4 divide it, --sp 3 does not
  int64_t depth_single_blocks = 2;
  double mlp_ratio = 4.0;
  std::vector<int64_t> axes_dim = {4, 6, 6};  // sums to the head dim
  int64_t in_channels = 16;                    // the VAE's latent channels
  int64_t embedding_dim = 32;                  // token embedder width = vec_in_dim = context_in_dim
  bool transformer2 = true;
  // token embedder
  int64_t vocab_size = 65536;
  // VAE decoder
  std::vector<int64_t> block_out_channels = {16, 16, 32, 32};  // 4 levels: 8x upsampling
  int64_t layers_per_block = 1;
  int64_t norm_num_groups = 8;
  double scaling_factor = 0.3611, shift_factor = 0.1159;
  // scheduler
  double shift = 3.0;
};

// The `bench` preset: the released widths (DiT 1920 x 24 heads, embedder
// 1536, the 16-channel VAE at 128/256/512/512) with 2 DiT blocks.
DemoVisionDecoderSpec BenchVisionDecoderSpec();

Status WriteDemoVisionDecoder(const DemoVisionDecoderSpec& spec, const std::string& out_dir);

}  // namespace omni::models
