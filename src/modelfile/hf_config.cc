#include "modelfile/hf_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace omni {

namespace {

using Kind = ConfigNode::Kind;

constexpr ObjectReader::UnknownKeys kAllow = ObjectReader::UnknownKeys::kAllow;

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

Status ReadPositive(ObjectReader& r, std::string_view key, int64_t* out, bool required) {
  OMNI_RETURN_IF_ERROR(r.GetInt(key, out, required));
  if (r.Has(key) || required) {
    OMNI_RETURN_IF_ERROR(r.Require(*out > 0, key, "must be positive, got " + std::to_string(*out)));
  }
  return Status::Ok();
}

Status ReadPositive(ObjectReader& r, std::string_view key, double* out) {
  OMNI_RETURN_IF_ERROR(r.GetDouble(key, out));
  return r.Require(std::isfinite(*out) && *out > 0, key, "must be a positive finite number");
}

// An optional token id: absent or null -> nullopt.
Status ReadTokenId(ObjectReader& r, std::string_view key, std::optional<int64_t>* out) {
  if (!r.Has(key)) {
    r.GetNode(key);  // mark as read
    return Status::Ok();
  }
  int64_t v = 0;
  OMNI_RETURN_IF_ERROR(r.GetInt(key, &v));
  *out = v;
  return Status::Ok();
}

Status ReadEosTokenIds(ObjectReader& r, std::vector<int64_t>* out) {
  const ConfigNode* n = r.GetNode("eos_token_id");
  if (n == nullptr) return Status::Ok();
  if (n->kind == Kind::kList) return r.GetIntList("eos_token_id", out);
  int64_t v = 0;
  OMNI_RETURN_IF_ERROR(r.GetInt("eos_token_id", &v));
  out->assign(1, v);
  return Status::Ok();
}

Status ReadTorchDtype(ObjectReader& r, std::optional<DType>* out) {
  std::string key = r.Has("torch_dtype") ? "torch_dtype" : "dtype";
  std::string name;
  OMNI_RETURN_IF_ERROR(r.GetString(key, &name));
  r.GetNode("torch_dtype");
  if (name.empty()) return Status::Ok();
  if (name == "bfloat16") {
    *out = DType::kBF16;
  } else if (name == "float16" || name == "half") {
    *out = DType::kF16;
  } else if (name == "float32" || name == "float") {
    *out = DType::kF32;
  } else {
    return r.Error(key, "unsupported dtype '" + name + "' (bfloat16, float16 or float32)");
  }
  return Status::Ok();
}

// `node` is a rope_scaling or rope_parameters object.
Status ReadRopeScaling(const ConfigNode& node, const std::string& path, RopeScaling* out) {
  ObjectReader r(node, path, kAllow);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  // transformers writes both; rope_type is the current name.
  std::string key = r.Has("rope_type") ? "rope_type" : "type";
  std::string type;
  OMNI_RETURN_IF_ERROR(r.GetString(key, &type, /*required=*/true));
  r.GetNode("type");
  if (type == "default") {
    out->type = RopeScalingType::kNone;
    return Status::Ok();
  } else if (type == "linear") {
    out->type = RopeScalingType::kLinear;
  } else if (type == "dynamic") {
    out->type = RopeScalingType::kDynamic;
  } else if (type == "llama3") {
    out->type = RopeScalingType::kLlama3;
  } else if (type == "yarn") {
    out->type = RopeScalingType::kYarn;
  } else {
    return r.Error(key, "unsupported RoPE scaling '" + type +
                            "' (default, linear, dynamic, llama3 or yarn)");
  }
  OMNI_RETURN_IF_ERROR(r.GetDouble("factor", &out->factor, /*required=*/true));
  OMNI_RETURN_IF_ERROR(r.Require(std::isfinite(out->factor) && out->factor > 0, "factor",
                                 "must be a positive finite number"));
  bool llama3 = out->type == RopeScalingType::kLlama3;
  if (llama3 || out->type == RopeScalingType::kYarn) {
    OMNI_RETURN_IF_ERROR(r.GetInt("original_max_position_embeddings",
                                  &out->original_max_position_embeddings, /*required=*/llama3));
    OMNI_RETURN_IF_ERROR(r.Require(out->original_max_position_embeddings >= 0,
                                   "original_max_position_embeddings", "must not be negative"));
  }
  if (llama3) {
    OMNI_RETURN_IF_ERROR(r.GetDouble("low_freq_factor", &out->low_freq_factor, true));
    OMNI_RETURN_IF_ERROR(r.GetDouble("high_freq_factor", &out->high_freq_factor, true));
    OMNI_RETURN_IF_ERROR(r.Require(out->low_freq_factor > 0 &&
                                       out->high_freq_factor > out->low_freq_factor,
                                   "high_freq_factor", "must exceed low_freq_factor (> 0)"));
  }
  if (out->type == RopeScalingType::kYarn) {
    OMNI_RETURN_IF_ERROR(r.GetDouble("beta_fast", &out->beta_fast));
    OMNI_RETURN_IF_ERROR(r.GetDouble("beta_slow", &out->beta_slow));
    OMNI_RETURN_IF_ERROR(r.Require(out->beta_fast > out->beta_slow, "beta_fast",
                                   "must exceed beta_slow"));
    if (r.Has("attention_factor")) {
      double f = 0;
      OMNI_RETURN_IF_ERROR(r.GetDouble("attention_factor", &f));
      OMNI_RETURN_IF_ERROR(r.Require(f > 0, "attention_factor", "must be positive"));
      out->attention_factor = f;
    }
  }
  return Status::Ok();
}

Status ReadRope(ObjectReader& r, LlmConfig* c) {
  if (const ConfigNode* params = r.GetNode("rope_parameters")) {
    std::string path = r.ChildPath("rope_parameters");
    ObjectReader pr(*params, path, kAllow);
    OMNI_RETURN_IF_ERROR(pr.CheckIsMap());
    OMNI_RETURN_IF_ERROR(ReadPositive(pr, "rope_theta", &c->rope_theta));
    if (pr.Has("rope_type") || pr.Has("type")) {
      OMNI_RETURN_IF_ERROR(ReadRopeScaling(*params, path, &c->rope_scaling));
    }
    return Status::Ok();
  }
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "rope_theta", &c->rope_theta));
  if (const ConfigNode* scaling = r.GetNode("rope_scaling")) {  // null -> no scaling
    OMNI_RETURN_IF_ERROR(ReadRopeScaling(*scaling, r.ChildPath("rope_scaling"), &c->rope_scaling));
  }
  return Status::Ok();
}

Status ReadArchitecture(ObjectReader& r, LlmConfig* c) {
  OMNI_RETURN_IF_ERROR(r.GetStringList("architectures", &c->architectures));
  OMNI_RETURN_IF_ERROR(r.GetString("model_type", &c->model_type));
  if (c->model_type == "hyperclovax" || Contains(c->architectures, "HyperCLOVAXForCausalLM")) {
    c->architecture = LlmArchitecture::kHyperClovaX;
  } else if (c->model_type == "llama" || Contains(c->architectures, "LlamaForCausalLM")) {
    c->architecture = LlmArchitecture::kLlama;
  } else if (c->model_type.empty()) {
    return r.Error("model_type",
                   "cannot tell the architecture: no model_type and no known architectures entry");
  } else {
    return r.Error("model_type", "unsupported model_type '" + c->model_type +
                                     "' (llama or hyperclovax)");
  }
  return Status::Ok();
}

Status ReadShape(ObjectReader& r, LlmConfig* c) {
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "vocab_size", &c->vocab_size, true));
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "hidden_size", &c->hidden_size, true));
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "intermediate_size", &c->intermediate_size, true));
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "num_hidden_layers", &c->num_hidden_layers, true));
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "num_attention_heads", &c->num_attention_heads, true));
  c->num_key_value_heads = c->num_attention_heads;
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "num_key_value_heads", &c->num_key_value_heads, false));
  OMNI_RETURN_IF_ERROR(r.Require(c->num_attention_heads % c->num_key_value_heads == 0,
                                 "num_key_value_heads",
                                 "must divide num_attention_heads (" +
                                     std::to_string(c->num_attention_heads) + ")"));
  if (r.Has("head_dim")) {
    OMNI_RETURN_IF_ERROR(ReadPositive(r, "head_dim", &c->head_dim, false));
  } else {
    r.GetNode("head_dim");
    OMNI_RETURN_IF_ERROR(r.Require(c->hidden_size % c->num_attention_heads == 0, "hidden_size",
                                   "must be a multiple of num_attention_heads when head_dim is "
                                   "not given"));
    c->head_dim = c->hidden_size / c->num_attention_heads;
  }
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "max_position_embeddings", &c->max_position_embeddings, false));
  OMNI_RETURN_IF_ERROR(r.GetString("hidden_act", &c->hidden_act));
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "rms_norm_eps", &c->rms_norm_eps));
  OMNI_RETURN_IF_ERROR(r.GetBool("tie_word_embeddings", &c->tie_word_embeddings));
  OMNI_RETURN_IF_ERROR(r.GetBool("attention_bias", &c->attention_bias));
  OMNI_RETURN_IF_ERROR(r.GetBool("mlp_bias", &c->mlp_bias));
  return Status::Ok();
}

Status ReadMup(ObjectReader& r, LlmConfig* c) {
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "embedding_multiplier", &c->embedding_multiplier));
  c->attention_multiplier = 1.0 / std::sqrt(static_cast<double>(c->head_dim));
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "attention_multiplier", &c->attention_multiplier));
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "residual_multiplier", &c->residual_multiplier));
  OMNI_RETURN_IF_ERROR(ReadPositive(r, "logits_scaling", &c->logits_scaling));
  return r.GetBool("use_post_norm", &c->use_post_norm);
}

}  // namespace

std::string_view RopeScalingTypeName(RopeScalingType type) {
  switch (type) {
    case RopeScalingType::kNone: return "default";
    case RopeScalingType::kLinear: return "linear";
    case RopeScalingType::kDynamic: return "dynamic";
    case RopeScalingType::kLlama3: return "llama3";
    case RopeScalingType::kYarn: return "yarn";
  }
  return "?";
}

StatusOr<LlmConfig> ReadLlmConfig(const ConfigNode& root) {
  ObjectReader top(root, "", kAllow);
  OMNI_RETURN_IF_ERROR(top.CheckIsMap());
  const ConfigNode* node = &root;
  std::string path;
  for (std::string_view key : {"text_config", "llm_config"}) {
    if (const ConfigNode* sub = top.GetNode(key)) {
      if (sub->kind != Kind::kMap) {
        return top.Error(key, "expected a map, got " + std::string(sub->KindName()));
      }
      node = sub;
      path = std::string(key);
      break;
    }
  }
  ObjectReader r(*node, path, kAllow);
  LlmConfig c;
  OMNI_RETURN_IF_ERROR(ReadArchitecture(r, &c));
  OMNI_RETURN_IF_ERROR(ReadShape(r, &c));
  OMNI_RETURN_IF_ERROR(ReadRope(r, &c));
  OMNI_RETURN_IF_ERROR(ReadTokenId(r, "bos_token_id", &c.bos_token_id));
  OMNI_RETURN_IF_ERROR(ReadEosTokenIds(r, &c.eos_token_ids));
  OMNI_RETURN_IF_ERROR(ReadTokenId(r, "pad_token_id", &c.pad_token_id));
  OMNI_RETURN_IF_ERROR(ReadTorchDtype(r, &c.torch_dtype));
  OMNI_RETURN_IF_ERROR(ReadMup(r, &c));
  return c;
}

StatusOr<LlmConfig> ParseLlmConfigJson(std::string_view json, std::string_view source) {
  OMNI_ASSIGN_OR_RETURN(ConfigNode root, ParseJson(json, source));
  return ReadLlmConfig(root);
}

StatusOr<LlmConfig> LoadLlmConfig(const std::string& path) {
  std::string file = path;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    file = path + (path.empty() || path.back() == '/' ? "" : "/") + "config.json";
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return NotFound("cannot open " + file);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseLlmConfigJson(ss.str(), file);
}

}  // namespace omni
