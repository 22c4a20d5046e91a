// Hugging Face config.json for the LLM: LlamaForCausalLM and
// HyperCLOVAXForCausalLM (LLaMA plus muP multipliers and Peri-LN).
//
// Key names and defaults follow transformers' LlamaConfig, except that the
// five size fields (vocab_size, hidden_size, intermediate_size,
// num_hidden_layers, num_attention_heads) are required: transformers would
// silently fall back to a 7B shape, which only hides a broken file. Unknown
// keys are allowed (HF configs carry many). Errors name the field path and
// are InvalidArgument.
//
// Where the LLM config lives: the reader uses `text_config` if the top level
// has one, else `llm_config`, else the top level itself (a plain LLM folder).
// Multimodal wrappers nest the LLM this way; their other sub-configs
// (vision_config, audio_config, ...) are read by the components that use
// them.
//
// RoPE: `rope_scaling` (null or {rope_type|type, factor, ...}); the newer
// `rope_parameters` object (transformers v5: rope_theta and the scaling keys
// in one object) is read when present and takes precedence.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "tensor/dtype.h"

namespace omni {

enum class LlmArchitecture { kLlama, kHyperClovaX };

enum class RopeScalingType { kNone, kLinear, kDynamic, kLlama3, kYarn };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // llama3 (required) and yarn (optional; 0 = max_position_embeddings)
  int64_t original_max_position_embeddings = 0;
  // yarn
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  std::optional<double> attention_factor;  // default 0.1 * ln(factor) + 1
};

struct LlmConfig {
  LlmArchitecture architecture = LlmArchitecture::kLlama;
  std::vector<std::string> architectures;  // as written, e.g. {"LlamaForCausalLM"}
  std::string model_type;                  // "llama" or "hyperclovax"

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // default num_attention_heads
  int64_t head_dim = 0;             // default hidden_size / num_attention_heads
  std::string hidden_act = "silu";
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int64_t max_position_embeddings = 2048;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  bool mlp_bias = false;

  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // eos_token_id may be an int or a list
  std::optional<int64_t> pad_token_id;
  // `torch_dtype` (or `dtype` in newer files): "bfloat16", "float16", "float32".
  std::optional<DType> torch_dtype;

  // muP and Peri-LN (HyperCLOVAX). The defaults make the model plain LLaMA.
  double embedding_multiplier = 1.0;  // h = embed(ids) * m
  double attention_multiplier = 0.0;  // softmax scale; default 1/sqrt(head_dim)
  double residual_multiplier = 1.0;   // h = h + m * sublayer(h)
  double logits_scaling = 1.0;        // logits *= m
  bool use_post_norm = false;         // extra RMSNorm after attention and MLP
};

// Reads the LLM config from a parsed config.json (see the header comment for
// where it is looked up).
StatusOr<LlmConfig> ReadLlmConfig(const ConfigNode& root);
StatusOr<LlmConfig> ParseLlmConfigJson(std::string_view json, std::string_view source = "config.json");
// `path` is a config.json file or a folder that holds one.
StatusOr<LlmConfig> LoadLlmConfig(const std::string& path);

std::string_view RopeScalingTypeName(RopeScalingType type);

}  // namespace omni
