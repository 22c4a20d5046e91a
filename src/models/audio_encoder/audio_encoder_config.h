// The audio encoder's two configs, read from the Omni checkpoint's
// config.json ("audio_config", "discrete_audio_config" and
// "text_config.hidden_size"). Absent keys keep the released model's values.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace omni::models {

// Qwen2-Audio's encoder: transformers' Qwen2AudioEncoderConfig keys.
// llm_hidden_size is text_config.hidden_size (the projector's output).
struct Qwen2AudioConfig {
  int64_t d_model = 1280;
  int64_t encoder_layers = 32;
  int64_t encoder_attention_heads = 20;
  int64_t encoder_ffn_dim = 5120;
  int64_t num_mel_bins = 128;
  int64_t max_source_positions = 1500;
  int64_t llm_hidden_size = 4096;
};

// CosyVoice2's S3 tokenizer v2: its ModelConfig keys. Heads are 64 wide (the
// rotary table is built for 64), so n_audio_state = 64 * n_audio_head.
struct S3TokenizerConfig {
  int64_t n_mels = 128;
  int64_t n_audio_state = 1280;
  int64_t n_audio_head = 20;
  int64_t n_audio_layer = 6;
  int64_t n_codebook_size = 6561;  // 3^8: 8 base-3 digits
};

StatusOr<Qwen2AudioConfig> ParseQwen2AudioConfig(std::string_view json, std::string_view source);
StatusOr<S3TokenizerConfig> ParseS3TokenizerConfig(std::string_view json, std::string_view source);

}  // namespace omni::models
