#include "modelfile/hf_config.h"

#include <gtest/gtest.h>

#include <cmath>

namespace omni {
namespace {

std::string TestData(const std::string& name) { return std::string(OMNI_MODELFILE_TESTDATA) + "/" + name; }

// meta-llama/Llama-3.1-8B-Instruct's config.json (as published).
constexpr std::string_view kLlama31 = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009],
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.42.3",
  "use_cache": true,
  "vocab_size": 128256
})";

// A HyperCLOVAX LLM config with muP multipliers and Peri-LN (values chosen
// to be distinct from every default).
constexpr std::string_view kHyperClovaX = R"({
  "architectures": ["HyperCLOVAXForCausalLM"],
  "model_type": "hyperclovax",
  "vocab_size": 110592,
  "hidden_size": 4096,
  "intermediate_size": 12288,
  "num_hidden_layers": 36,
  "num_attention_heads": 32,
  "num_key_value_heads": 8,
  "head_dim": 128,
  "max_position_embeddings": 32768,
  "rms_norm_eps": 1e-05,
  "rope_theta": 5000000,
  "rope_scaling": null,
  "embedding_multiplier": 10.0,
  "attention_multiplier": 0.0078125,
  "residual_multiplier": 0.5,
  "logits_scaling": 0.125,
  "use_post_norm": true,
  "tie_word_embeddings": true,
  "bos_token_id": 100257,
  "eos_token_id": 100257,
  "pad_token_id": 100257,
  "torch_dtype": "bfloat16",
  "some_future_key": {"anything": [1, 2]}
})";

TEST(HfConfig, Llama31) {
  auto c = ParseLlmConfigJson(kLlama31);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, LlmArchitecture::kLlama);
  EXPECT_EQ(c->architectures, (std::vector<std::string>{"LlamaForCausalLM"}));
  EXPECT_EQ(c->vocab_size, 128256);
  EXPECT_EQ(c->hidden_size, 4096);
  EXPECT_EQ(c->intermediate_size, 14336);
  EXPECT_EQ(c->num_hidden_layers, 32);
  EXPECT_EQ(c->num_attention_heads, 32);
  EXPECT_EQ(c->num_key_value_heads, 8);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c->rope_theta, 500000.0);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 8.0);
  EXPECT_DOUBLE_EQ(c->rope_scaling.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c->rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c->max_position_embeddings, 131072);
  EXPECT_EQ(c->bos_token_id, 128000);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_FALSE(c->pad_token_id.has_value());
  EXPECT_EQ(c->torch_dtype, DType::kBF16);
  EXPECT_FALSE(c->tie_word_embeddings);
  // Plain LLaMA: the muP knobs are neutral.
  EXPECT_DOUBLE_EQ(c->embedding_multiplier, 1.0);
  EXPECT_DOUBLE_EQ(c->attention_multiplier, 1.0 / std::sqrt(128.0));
  EXPECT_DOUBLE_EQ(c->residual_multiplier, 1.0);
  EXPECT_DOUBLE_EQ(c->logits_scaling, 1.0);
  EXPECT_FALSE(c->use_post_norm);
}

TEST(HfConfig, HyperClovaXWithMup) {
  auto c = ParseLlmConfigJson(kHyperClovaX);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, LlmArchitecture::kHyperClovaX);
  EXPECT_EQ(c->model_type, "hyperclovax");
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kNone);
  EXPECT_DOUBLE_EQ(c->rope_theta, 5000000.0);
  EXPECT_DOUBLE_EQ(c->embedding_multiplier, 10.0);
  EXPECT_DOUBLE_EQ(c->attention_multiplier, 0.0078125);
  EXPECT_DOUBLE_EQ(c->residual_multiplier, 0.5);
  EXPECT_DOUBLE_EQ(c->logits_scaling, 0.125);
  EXPECT_TRUE(c->use_post_norm);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{100257}));
  EXPECT_EQ(c->pad_token_id, 100257);
}

TEST(HfConfig, NestedTextConfig) {
  std::string omni = R"({"architectures": ["HCXVisionForCausalLM"], "model_type": "vlm",
      "vision_config": {"hidden_size": 1280}, "text_config": )" + std::string(kHyperClovaX) + "}";
  auto c = ParseLlmConfigJson(omni);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, LlmArchitecture::kHyperClovaX);
  EXPECT_EQ(c->hidden_size, 4096);

  auto llm = ParseLlmConfigJson(R"({"llm_config": {"model_type": "llama", "vocab_size": 10,
      "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2}})");
  ASSERT_TRUE(llm.ok()) << llm.status().ToString();
  EXPECT_EQ(llm->head_dim, 4);
  EXPECT_EQ(llm->num_key_value_heads, 2);

  auto bad = ParseLlmConfigJson(R"({"text_config": {"model_type": "llama", "vocab_size": 10,
      "hidden_size": "8", "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2}})");
  EXPECT_NE(bad.status().message().find("text_config.hidden_size: expected an integer, got a string"),
            std::string::npos)
      << bad.status().message();
  auto not_map = ParseLlmConfigJson(R"({"text_config": 3})");
  EXPECT_NE(not_map.status().message().find("text_config: expected a map"), std::string::npos);
}

TEST(HfConfig, LoadsTheFixtureFolder) {
  auto c = LoadLlmConfig(TestData("llama_sharded"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->hidden_size, 4);
  EXPECT_EQ(c->head_dim, 2);
  EXPECT_EQ(c->num_key_value_heads, 1);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{2}));
  EXPECT_DOUBLE_EQ(c->attention_multiplier, 1.0 / std::sqrt(2.0));
  auto file = LoadLlmConfig(TestData("llama_single/config.json"));
  EXPECT_TRUE(file.ok());
  EXPECT_EQ(LoadLlmConfig("/nonexistent").status().code(), StatusCode::kNotFound);
}

// Returns the error message for kLlama31 with `from` replaced by `to`.
std::string ErrorFor(std::string_view from, std::string_view to) {
  std::string json(kLlama31);
  size_t at = json.find(from);
  OMNI_CHECK(at != std::string::npos) << from;
  json.replace(at, from.size(), to);
  auto c = ParseLlmConfigJson(json);
  return c.ok() ? "OK" : c.status().message();
}

TEST(HfConfig, ErrorsNameTheField) {
  struct Case {
    std::string_view from, to, expected;
  } cases[] = {
      {"\"hidden_size\": 4096,", "", "hidden_size: required field is missing"},
      {"\"vocab_size\": 128256", "\"vocab_size\": null", "vocab_size: required field is missing"},
      {"\"hidden_size\": 4096", "\"hidden_size\": \"4096\"", "hidden_size: expected an integer, got a string"},
      {"\"hidden_size\": 4096", "\"hidden_size\": 4096.5", "hidden_size: expected an integer, got a number"},
      {"\"num_hidden_layers\": 32", "\"num_hidden_layers\": 0", "num_hidden_layers: must be positive, got 0"},
      {"\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5", "num_key_value_heads: must divide num_attention_heads (32)"},
      {"\"hidden_size\": 4096", "\"hidden_size\": 4001", "hidden_size: must be a multiple of num_attention_heads"},
      {"\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": -1", "rms_norm_eps: must be a positive finite number"},
      {"\"tie_word_embeddings\": false", "\"tie_word_embeddings\": 0", "tie_word_embeddings: expected a boolean, got an integer"},
      {"\"eos_token_id\": [128001, 128008, 128009]", "\"eos_token_id\": [1, \"2\"]", "eos_token_id[1]: expected an integer, got a string"},
      {"\"eos_token_id\": [128001, 128008, 128009]", "\"eos_token_id\": \"x\"", "eos_token_id: expected an integer, got a string"},
      {"\"torch_dtype\": \"bfloat16\"", "\"torch_dtype\": \"int4\"", "torch_dtype: unsupported dtype 'int4'"},
      {"[\"LlamaForCausalLM\"]", "[\"MistralForCausalLM\"]", "OK"},  // model_type still says llama
      {"\"rope_type\": \"llama3\"", "\"rope_type\": \"longrope\"", "rope_scaling.rope_type: unsupported RoPE scaling 'longrope'"},
      {"\"factor\": 8.0,", "", "rope_scaling.factor: required field is missing"},
      {"\"low_freq_factor\": 1.0,", "", "rope_scaling.low_freq_factor: required field is missing"},
      {"\"high_freq_factor\": 4.0", "\"high_freq_factor\": 0.5", "rope_scaling.high_freq_factor: must exceed low_freq_factor"},
      {"\"rope_theta\": 500000.0", "\"rope_theta\": \"big\"", "rope_theta: expected a number, got a string"},
      {"\"num_attention_heads\": 32,", "\"num_attention_heads\": 32, \"attention_multiplier\": 0,", "attention_multiplier: must be a positive finite number"},
  };
  for (const Case& c : cases) {
    std::string got = ErrorFor(c.from, c.to);
    EXPECT_NE(got.find(c.expected), std::string::npos) << "expected: " << c.expected << "\n got: " << got;
  }
  auto mistral = ParseLlmConfigJson(R"({"architectures": ["MistralForCausalLM"], "model_type": "mistral"})");
  EXPECT_NE(mistral.status().message().find("model_type: unsupported model_type 'mistral' (llama or hyperclovax)"),
            std::string::npos);
  auto unknown = ParseLlmConfigJson(R"({"hidden_size": 8})");
  EXPECT_NE(unknown.status().message().find("cannot tell the architecture"), std::string::npos);
  auto not_json = ParseLlmConfigJson("{", "cfg.json");
  EXPECT_NE(not_json.status().message().find("cfg.json: invalid JSON"), std::string::npos);
  auto not_object = ParseLlmConfigJson("[1]");
  EXPECT_FALSE(not_object.ok());
}

TEST(HfConfig, RopeVariants) {
  EXPECT_EQ(ErrorFor("\"rope_type\": \"llama3\"", "\"type\": \"llama3\""), "OK");  // legacy key
  auto yarn = ParseLlmConfigJson(R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768,
                       "attention_factor": 1.2, "beta_fast": 16}})");
  ASSERT_TRUE(yarn.ok()) << yarn.status().ToString();
  EXPECT_EQ(yarn->rope_scaling.type, RopeScalingType::kYarn);
  EXPECT_DOUBLE_EQ(yarn->rope_scaling.beta_fast, 16);
  EXPECT_DOUBLE_EQ(yarn->rope_scaling.beta_slow, 1);
  EXPECT_EQ(yarn->rope_scaling.attention_factor, 1.2);
  EXPECT_EQ(yarn->rope_scaling.original_max_position_embeddings, 32768);

  auto linear = ParseLlmConfigJson(R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "rope_scaling": {"type": "linear", "factor": 2}})");
  ASSERT_TRUE(linear.ok());
  EXPECT_EQ(linear->rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_EQ(RopeScalingTypeName(linear->rope_scaling.type), "linear");

  // transformers v5: rope_parameters carries rope_theta and the scaling.
  auto v5 = ParseLlmConfigJson(R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "rope_parameters": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1000000.0}})");
  ASSERT_TRUE(v5.ok()) << v5.status().ToString();
  EXPECT_DOUBLE_EQ(v5->rope_theta, 1e6);
  EXPECT_EQ(v5->rope_scaling.type, RopeScalingType::kDynamic);
  auto v5_default = ParseLlmConfigJson(R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "dtype": "float32",
      "eos_token_id": null, "rope_parameters": {"rope_type": "default", "rope_theta": 500.0}})");
  ASSERT_TRUE(v5_default.ok()) << v5_default.status().ToString();
  EXPECT_EQ(v5_default->rope_scaling.type, RopeScalingType::kNone);
  EXPECT_EQ(v5_default->torch_dtype, DType::kF32);
  EXPECT_TRUE(v5_default->eos_token_ids.empty());
}

}  // namespace
}  // namespace omni
