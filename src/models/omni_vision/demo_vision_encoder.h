// A random-weight vision encoder folder (`make-demo-model --component ve`)
// in the real schema: config.json with Qwen2.5-VL "vision_config" and
// "discrete_vision_config", preprocessor_config.json, and model.safetensors
// with the Hugging Face tensor names (OmniVisionEncoder reads it as it reads
// the released checkpoint). Deterministic for a seed (demo_weights.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace omni::models {

struct DemoVisionEncoderSpec {
  uint64_t seed = 7;
  // Qwen2.5-VL ViT
  int64_t depth = 4;
  int64_t hidden_size = 32;
  int64_t intermediate_size = 64;
  int64_t num_heads = 2;
  int64_t out_hidden_size = 64;
  std::vector<int64_t> fullatt_block_indexes = {1, 3};
  int64_t llm_hidden_size = 128;  // the projector's output: the demo LLM's width
  // TA-Tok
  int64_t tatok_hidden_size = 32;
  int64_t tatok_intermediate_size = 64;
  int64_t tatok_layers = 3;
  int64_t tatok_heads = 2;
  int64_t bottleneck_dim = 24;
  int64_t codebook_size = 512;
  // processor
  int64_t max_pixels = 2073600;
};

// The `bench` preset: the released widths (ViT 1280 x 16 heads, SigLIP 1152,
// codebook 65536 x 1536) with few layers, for performance work.
DemoVisionEncoderSpec BenchVisionEncoderSpec(int64_t llm_hidden_size);

Status WriteDemoVisionEncoder(const DemoVisionEncoderSpec& spec, const std::string& out_dir);

}  // namespace omni::models
