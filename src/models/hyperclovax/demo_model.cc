#include "models/hyperclovax/demo_model.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "modelfile/safetensors.h"
#include "models/demo_weights.h"
#include "tensor/tensor.h"

namespace omni::models {
namespace {

std::vector<NamedTensor> DemoTensors(const DemoLlmSpec& s) {
  std::vector<NamedTensor> out;
  auto add = [&](const std::string& name, const Shape& shape, double std, double offset = 0.0) {
    out.push_back({name, RandomBf16(s.seed, name, shape, std, offset)});
  };
  auto add_linear = [&](const std::string& name, int64_t out_features, int64_t in_features) {
    add(name, {out_features, in_features}, 1.0 / std::sqrt(static_cast<double>(in_features)));
  };
  const int64_t h = s.hidden_size, d = s.head_dim;
  // Embedding rows of RMS 0.5 keep tied logits around unit scale * sqrt(hidden) / 2.
  add("model.embed_tokens.weight", {s.vocab_size, h}, 0.5);
  for (int64_t i = 0; i < s.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    // Norm weights near 1 but not 1, so a missing norm shows in the logits.
    add(p + "input_layernorm.weight", {h}, 0.1, 1.0);
    add(p + "post_attention_layernorm.weight", {h}, 0.1, 1.0);
    if (s.use_post_norm) {
      add(p + "post_norm1.weight", {h}, 0.1, 1.0);
      add(p + "post_norm2.weight", {h}, 0.1, 1.0);
    }
    add_linear(p + "self_attn.q_proj.weight", s.num_attention_heads * d, h);
    add_linear(p + "self_attn.k_proj.weight", s.num_key_value_heads * d, h);
    add_linear(p + "self_attn.v_proj.weight", s.num_key_value_heads * d, h);
    add_linear(p + "self_attn.o_proj.weight", h, s.num_attention_heads * d);
    add_linear(p + "mlp.gate_proj.weight", s.intermediate_size, h);
    add_linear(p + "mlp.up_proj.weight", s.intermediate_size, h);
    add_linear(p + "mlp.down_proj.weight", h, s.intermediate_size);
  }
  add("model.norm.weight", {h}, 0.1, 1.0);
  if (!s.tie_word_embeddings) add_linear("lm_head.weight", s.vocab_size, h);
  return out;
}

nlohmann::ordered_json RopeScalingJson(const RopeScaling& r) {
  nlohmann::ordered_json j;
  switch (r.type) {
    case RopeScalingType::kNone:
      return nullptr;
    case RopeScalingType::kLinear:
      j["rope_type"] = "linear";
      break;
    case RopeScalingType::kDynamic:
      j["rope_type"] = "dynamic";
      break;
    case RopeScalingType::kLlama3:
      j["rope_type"] = "llama3";
      j["low_freq_factor"] = r.low_freq_factor;
      j["high_freq_factor"] = r.high_freq_factor;
      j["original_max_position_embeddings"] = r.original_max_position_embeddings;
      break;
    case RopeScalingType::kYarn:
      j["rope_type"] = "yarn";
      j["beta_fast"] = r.beta_fast;
      j["beta_slow"] = r.beta_slow;
      if (r.original_max_position_embeddings > 0) {
        j["original_max_position_embeddings"] = r.original_max_position_embeddings;
      }
      if (r.attention_factor) j["attention_factor"] = *r.attention_factor;
      break;
  }
  j["factor"] = r.factor;
  return j;
}


}  // namespace

DemoLlmSpec LlamaLikeDemoSpec() {
  DemoLlmSpec s;
  s.seed = 1234;
  return s;
}

DemoLlmSpec MupDemoSpec() {
  DemoLlmSpec s;
  // Seed picked so that no greedy step of the golden prompts is a near tie
  // (top-1 minus top-2 >= 2% of max |logit|; see the goldens' greedy_margins).
  s.seed = 5;
  s.tie_word_embeddings = false;
  s.embedding_multiplier = 2.5;
  s.attention_multiplier = 0.11;
  s.residual_multiplier = 0.7;
  s.logits_scaling = 0.3;
  s.use_post_norm = true;
  s.rope_theta = 10000.0;
  // With head_dim 16 the wavelengths span 2*pi .. ~2e4, so an original
  // context of 64 puts frequencies in all three llama3 bands.
  s.rope_scaling.type = RopeScalingType::kLlama3;
  s.rope_scaling.factor = 8.0;
  s.rope_scaling.low_freq_factor = 1.0;
  s.rope_scaling.high_freq_factor = 4.0;
  s.rope_scaling.original_max_position_embeddings = 64;
  return s;
}

std::string DemoLlmConfigJson(const DemoLlmSpec& s) {
  nlohmann::ordered_json j;
  j["architectures"] = {"HyperCLOVAXForCausalLM"};
  j["model_type"] = "hyperclovax";
  j["vocab_size"] = s.vocab_size;
  j["hidden_size"] = s.hidden_size;
  j["intermediate_size"] = s.intermediate_size;
  j["num_hidden_layers"] = s.num_hidden_layers;
  j["num_attention_heads"] = s.num_attention_heads;
  j["num_key_value_heads"] = s.num_key_value_heads;
  j["head_dim"] = s.head_dim;
  j["hidden_act"] = "silu";
  j["max_position_embeddings"] = s.max_position_embeddings;
  j["rms_norm_eps"] = s.rms_norm_eps;
  j["rope_theta"] = s.rope_theta;
  j["rope_scaling"] = RopeScalingJson(s.rope_scaling);
  j["attention_bias"] = false;
  j["mlp_bias"] = false;
  j["tie_word_embeddings"] = s.tie_word_embeddings;
  j["torch_dtype"] = "bfloat16";
  j["embedding_multiplier"] = s.embedding_multiplier;
  j["attention_multiplier"] =
      s.attention_multiplier != 0.0 ? s.attention_multiplier : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  j["residual_multiplier"] = s.residual_multiplier;
  j["logits_scaling"] = s.logits_scaling;
  j["use_post_norm"] = s.use_post_norm;
  j["bos_token_id"] = s.bos_token_id;
  j["eos_token_id"] = s.eos_token_id;
  j["pad_token_id"] = s.pad_token_id;
  j["use_cache"] = true;
  return j.dump(2) + "\n";
}

Status WriteDemoLlm(const DemoLlmSpec& spec, const std::string& out_dir) {
  if (spec.vocab_size <= 0 || spec.hidden_size <= 0 || spec.num_hidden_layers <= 0 || spec.head_dim <= 0 ||
      spec.num_attention_heads <= 0 || spec.num_key_value_heads <= 0 ||
      spec.num_attention_heads % spec.num_key_value_heads != 0) {
    return InvalidArgument("demo llm spec: sizes must be positive and heads a multiple of kv heads");
  }
  const std::filesystem::path dir(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + out_dir + ": " + ec.message());
  OMNI_RETURN_IF_ERROR(WriteDemoTextFile((dir / "config.json").string(), DemoLlmConfigJson(spec)));
  OMNI_RETURN_IF_ERROR(WriteSafetensors((dir / "model.safetensors").string(), DemoTensors(spec),
                                        {{"format", "pt"}}));
  if (spec.tokenizer_json) OMNI_RETURN_IF_ERROR(WriteDemoTextFile((dir / "tokenizer.json").string(), *spec.tokenizer_json));
  if (spec.tokenizer_config_json) {
    OMNI_RETURN_IF_ERROR(WriteDemoTextFile((dir / "tokenizer_config.json").string(), *spec.tokenizer_config_json));
  }
  return Status::Ok();
}

}  // namespace omni::models
