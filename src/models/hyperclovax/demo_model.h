// A tiny random-weight HyperCLOVAXForCausalLM folder in the real schema:
// config.json (the keys of the released checkpoints), model.safetensors
// (bf16, the real tensor names) and, when given, tokenizer.json beside them.
//
// Weights are deterministic for a seed (SplitMix64 counter stream, see
// demo_model.cc), so the same spec always gives byte-identical files; the
// PyTorch reference (tools/reference/hyperclovax_ref.py) reads the written
// safetensors rather than re-deriving them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "modelfile/hf_config.h"

namespace omni::models {

struct DemoLlmSpec {
  uint64_t seed = 0;
  int64_t vocab_size = 512;
  int64_t hidden_size = 64;
  int64_t intermediate_size = 128;
  int64_t num_hidden_layers = 2;
  int64_t num_attention_heads = 4;
  int64_t num_key_value_heads = 2;
  int64_t head_dim = 16;
  int64_t max_position_embeddings = 4096;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;  // type kNone: "rope_scaling": null
  bool tie_word_embeddings = true;
  // muP / Peri-LN; the defaults are plain LLaMA (attention_multiplier 0:
  // written as 1/sqrt(head_dim)).
  double embedding_multiplier = 1.0;
  double attention_multiplier = 0.0;
  double residual_multiplier = 1.0;
  double logits_scaling = 1.0;
  bool use_post_norm = false;
  int64_t bos_token_id = 1;
  int64_t eos_token_id = 2;
  int64_t pad_token_id = 0;
  // Written verbatim as tokenizer.json / tokenizer_config.json when set
  // (the text layer builds them; see MakeDemoTokenizerJson there).
  std::optional<std::string> tokenizer_json;
  std::optional<std::string> tokenizer_config_json;
};

// The LLaMA-like numerics config (tied embeddings, multipliers 1, GQA).
DemoLlmSpec LlamaLikeDemoSpec();
// muP multipliers != 1, Peri-LN on, GQA, untied embeddings, llama3 rope scaling.
DemoLlmSpec MupDemoSpec();

// The config.json text for `spec`.
std::string DemoLlmConfigJson(const DemoLlmSpec& spec);

// Creates `out_dir` if needed and writes the folder. Existing files of the
// same names are replaced.
Status WriteDemoLlm(const DemoLlmSpec& spec, const std::string& out_dir);

}  // namespace omni::models
