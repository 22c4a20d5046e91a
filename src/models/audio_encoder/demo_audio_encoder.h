// A random-weight audio encoder folder (`make-demo-model --component ae`) in
// the real schema: config.json with Qwen2-Audio's "audio_config", the S3
// tokenizer's "discrete_audio_config" and "text_config.hidden_size", and
// model.safetensors with the Omni checkpoint's tensor names
// (model.audio_model.*, model.audio_projector.*, model.discrete_audio_model.*),
// which OmniAudioEncoder reads as it reads the released checkpoint.
// Deterministic for a seed (demo_weights.h).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace omni::models {

struct DemoAudioEncoderSpec {
  uint64_t seed = 11;
  // Qwen2-Audio encoder (continuous)
  int64_t d_model = 64;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t ffn_dim = 128;
  int64_t llm_hidden_size = 128;  // the projector's output: the demo LLM's width
  // S3 tokenizer v2 (discrete); its heads are 64 wide, as the released one's
  int64_t s3_heads = 2;
  int64_t s3_layers = 2;
};

// The `bench` preset: the released widths (1280 wide, 20 heads, FFN 5120;
// S3 tokenizer 1280 wide) with few layers, for performance work.
DemoAudioEncoderSpec BenchAudioEncoderSpec(int64_t llm_hidden_size);

Status WriteDemoAudioEncoder(const DemoAudioEncoderSpec& spec, const std::string& out_dir);

}  // namespace omni::models
