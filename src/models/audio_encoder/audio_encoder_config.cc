#include "models/audio_encoder/audio_encoder_config.h"

#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace omni::models {
namespace {

StatusOr<nlohmann::json> ParseRoot(std::string_view json, std::string_view source) {
  nlohmann::json root = nlohmann::json::parse(json, nullptr, false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgument(fmt::format("{}: not a JSON object", source));
  return root;
}

// Reads the positive integer `section.key` into *out when present.
Status ReadPositive(const nlohmann::json& section, std::string_view section_name, const char* key,
                    std::string_view source, int64_t* out) {
  if (!section.contains(key)) return Status::Ok();
  const nlohmann::json& v = section[key];
  if (!v.is_number_integer() || v.get<int64_t>() <= 0) {
    return InvalidArgument(fmt::format("{}: {}.{} must be a positive integer", source, section_name, key));
  }
  *out = v.get<int64_t>();
  return Status::Ok();
}

StatusOr<const nlohmann::json*> Section(const nlohmann::json& root, const char* name, std::string_view source) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (!root.contains(name)) return &kEmpty;
  if (!root[name].is_object()) return InvalidArgument(fmt::format("{}: {} must be an object", source, name));
  return &root[name];
}

}  // namespace

StatusOr<Qwen2AudioConfig> ParseQwen2AudioConfig(std::string_view json, std::string_view source) {
  OMNI_ASSIGN_OR_RETURN(nlohmann::json root, ParseRoot(json, source));
  OMNI_ASSIGN_OR_RETURN(const nlohmann::json* a, Section(root, "audio_config", source));
  OMNI_ASSIGN_OR_RETURN(const nlohmann::json* text, Section(root, "text_config", source));
  Qwen2AudioConfig c;
  const std::string_view s = "audio_config";
  OMNI_RETURN_IF_ERROR(ReadPositive(*a, s, "d_model", source, &c.d_model));
  OMNI_RETURN_IF_ERROR(ReadPositive(*a, s, "encoder_layers", source, &c.encoder_layers));
  OMNI_RETURN_IF_ERROR(ReadPositive(*a, s, "encoder_attention_heads", source, &c.encoder_attention_heads));
  OMNI_RETURN_IF_ERROR(ReadPositive(*a, s, "encoder_ffn_dim", source, &c.encoder_ffn_dim));
  OMNI_RETURN_IF_ERROR(ReadPositive(*a, s, "num_mel_bins", source, &c.num_mel_bins));
  OMNI_RETURN_IF_ERROR(ReadPositive(*a, s, "max_source_positions", source, &c.max_source_positions));
  OMNI_RETURN_IF_ERROR(ReadPositive(*text, "text_config", "hidden_size", source, &c.llm_hidden_size));
  if (c.d_model % c.encoder_attention_heads != 0) {
    return InvalidArgument(fmt::format("{}: audio_config.d_model must be a multiple of encoder_attention_heads", source));
  }
  if (a->contains("activation_function") && (*a)["activation_function"] != "gelu") {
    return InvalidArgument(fmt::format("{}: audio_config.activation_function must be \"gelu\"", source));
  }
  if (c.num_mel_bins != 128) return InvalidArgument(fmt::format("{}: audio_config.num_mel_bins must be 128", source));
  // A 30 s chunk is 1500 positions after the stride-2 conv.
  if (c.max_source_positions < 1500) {
    return InvalidArgument(fmt::format("{}: audio_config.max_source_positions must be at least 1500", source));
  }
  return c;
}

StatusOr<S3TokenizerConfig> ParseS3TokenizerConfig(std::string_view json, std::string_view source) {
  OMNI_ASSIGN_OR_RETURN(nlohmann::json root, ParseRoot(json, source));
  OMNI_ASSIGN_OR_RETURN(const nlohmann::json* d, Section(root, "discrete_audio_config", source));
  S3TokenizerConfig c;
  const std::string_view s = "discrete_audio_config";
  if (d->contains("model_type") && (*d)["model_type"] != "cosyvoice2") {
    return InvalidArgument(fmt::format("{}: discrete_audio_config.model_type must be \"cosyvoice2\"", source));
  }
  OMNI_RETURN_IF_ERROR(ReadPositive(*d, s, "n_mels", source, &c.n_mels));
  OMNI_RETURN_IF_ERROR(ReadPositive(*d, s, "n_audio_state", source, &c.n_audio_state));
  OMNI_RETURN_IF_ERROR(ReadPositive(*d, s, "n_audio_head", source, &c.n_audio_head));
  OMNI_RETURN_IF_ERROR(ReadPositive(*d, s, "n_audio_layer", source, &c.n_audio_layer));
  OMNI_RETURN_IF_ERROR(ReadPositive(*d, s, "n_codebook_size", source, &c.n_codebook_size));
  if (c.n_audio_state != 64 * c.n_audio_head) {
    return InvalidArgument(fmt::format("{}: discrete_audio_config.n_audio_state must be 64 * n_audio_head", source));
  }
  if (c.n_codebook_size != 6561) {
    return InvalidArgument(fmt::format("{}: discrete_audio_config.n_codebook_size must be 6561 (3^8)", source));
  }
  if (c.n_mels != 128) return InvalidArgument(fmt::format("{}: discrete_audio_config.n_mels must be 128", source));
  return c;
}

}  // namespace omni::models
