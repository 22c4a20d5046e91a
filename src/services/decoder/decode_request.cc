#include "services/decoder/decode_request.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "api/json_body.h"

namespace omni::decoder {
namespace {

bool Present(const nlohmann::json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

Status ReadInt(const nlohmann::json& j, const char* key, int lo, int hi, std::optional<int>* out) {
  if (!Present(j, key)) return Status::Ok();
  if (!j[key].is_number_integer() || j[key].get<int64_t>() < lo || j[key].get<int64_t>() > hi) {
    return JsonFieldError(key, fmt::format("an integer in [{}, {}]", lo, hi));
  }
  *out = static_cast<int>(j[key].get<int64_t>());
  return Status::Ok();
}

Status ReadSide(const nlohmann::json& j, const char* key, std::optional<int>* out) {
  OMNI_RETURN_IF_ERROR(ReadInt(j, key, kMinDecodeSide, kMaxDecodeSide, out));
  if (*out && **out % 16 != 0) {
    return JsonFieldError(key, fmt::format("a multiple of 16 in [{}, {}]", kMinDecodeSide, kMaxDecodeSide));
  }
  return Status::Ok();
}

Status ReadGuidance(const nlohmann::json& j, const char* key, std::optional<float>* out) {
  if (!Present(j, key)) return Status::Ok();
  if (!j[key].is_number() || !(j[key].get<double>() >= 0 && j[key].get<double>() <= kMaxDecodeGuidance)) {
    return JsonFieldError(key, fmt::format("a number in [0, {}]", kMaxDecodeGuidance));
  }
  *out = j[key].get<float>();
  return Status::Ok();
}

Status ReadSeed(const nlohmann::json& j, const char* key, std::optional<uint64_t>* out) {
  if (!Present(j, key)) return Status::Ok();
  if (j[key].is_number_unsigned() || (j[key].is_number_integer() && j[key].get<int64_t>() >= 0)) {
    *out = j[key].get<uint64_t>();
    return Status::Ok();
  }
  return JsonFieldError(key, "a non-negative integer");
}

// {"ratio": "3:4", "ids": [729 ints]}: the parsed form of the token string.
StatusOr<models::VisionTokens> ParseTokenObject(const nlohmann::json& t, int vocab_size) {
  models::VisionTokens out;
  out.ratio = "1:1";
  if (Present(t, "ratio")) {
    if (!t["ratio"].is_string()) return JsonFieldError("tokens.ratio", "a string such as \"3:4\"");
    const std::string ratio = t["ratio"].get<std::string>();
    if (models::VisionRatioSize(ratio)) {
      out.ratio = ratio;
    } else {
      out.warnings.push_back(
          fmt::format("unknown image ratio '{}': drawn at 1:1", ShownValue(ratio)));
    }
  } else {
    out.warnings.push_back("no image ratio given: drawn at 1:1");
  }
  out.size = *models::VisionRatioSize(out.ratio);
  if (!t.contains("ids") || !t["ids"].is_array()) {
    return JsonFieldError("tokens.ids", fmt::format("an array of {} image ids", kDecodeNumIds));
  }
  const nlohmann::json& ids = t["ids"];
  if (ids.size() != kDecodeNumIds) {
    return JsonFieldError("tokens.ids", fmt::format("an array of exactly {} image ids (got {})",
                                                kDecodeNumIds, ids.size()));
  }
  out.ids.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].is_number_integer() || ids[i].get<int64_t>() < 0 || ids[i].get<int64_t>() >= vocab_size) {
      return InvalidArgument(fmt::format("'tokens.ids[{}]' must be an integer in [0, {})", i, vocab_size))
          .WithParam("tokens.ids");
    }
    out.ids.push_back(static_cast<int32_t>(ids[i].get<int64_t>()));
  }
  return out;
}

StatusOr<models::VisionTokens> ParseTokenString(const nlohmann::json& j, const char* key, int vocab_size) {
  if (!Present(j, key) || !j[key].is_string()) {
    return JsonFieldError(key, "the model's image token string (<|vision_ratio_W:H|><|visionN|>...)");
  }
  auto parsed = models::ParseVisionTokens(j[key].get<std::string>(), kDecodeNumIds, vocab_size);
  if (!parsed.ok()) return Status(parsed.status()).WithParam(key);
  return parsed;
}

}  // namespace

StatusOr<DecodeRequest> ParseDecodeRequest(std::string_view body, int vocab_size) {
  OMNI_ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonObjectBody(body));
  DecodeRequest r;
  r.api = DecodeApi::kOmni;
  if (Present(j, "model")) {
    if (!j["model"].is_string()) return JsonFieldError("model", "a string");
    r.model = j["model"].get<std::string>();
  }
  if (!Present(j, "tokens")) return InvalidArgument("'tokens' is required").WithParam("tokens");
  if (j["tokens"].is_object()) {
    OMNI_ASSIGN_OR_RETURN(r.tokens, ParseTokenObject(j["tokens"], vocab_size));
  } else {
    OMNI_ASSIGN_OR_RETURN(r.tokens, ParseTokenString(j, "tokens", vocab_size));
  }
  OMNI_RETURN_IF_ERROR(ReadSide(j, "width", &r.width));
  OMNI_RETURN_IF_ERROR(ReadSide(j, "height", &r.height));
  OMNI_RETURN_IF_ERROR(ReadInt(j, "steps", 1, kMaxDecodeSteps, &r.steps));
  OMNI_RETURN_IF_ERROR(ReadGuidance(j, "guidance", &r.guidance));
  OMNI_RETURN_IF_ERROR(ReadSeed(j, "seed", &r.seed));
  if (Present(j, "format")) {
    if (!j["format"].is_string()) return JsonFieldError("format", "\"png\", \"webp\" or \"jpeg\"");
    OMNI_ASSIGN_OR_RETURN(r.format, media::ParseImageFormat(j["format"].get<std::string>()));
  }
  std::optional<int> quality;
  OMNI_RETURN_IF_ERROR(ReadInt(j, "quality", 1, 100, &quality));
  if (quality) r.quality = *quality;
  if (Present(j, "response_format")) {
    const std::string rf = j["response_format"].is_string() ? j["response_format"].get<std::string>() : "";
    if (rf != "url" && rf != "b64_json") return JsonFieldError("response_format", "\"url\" or \"b64_json\"");
    r.inline_image = rf == "b64_json";
  }
  if (Present(j, "user")) {
    if (!j["user"].is_string()) return JsonFieldError("user", "a string");
    r.user = j["user"].get<std::string>().substr(0, 256);
  }
  return r;
}

StatusOr<DecodeRequest> ParseOmniServeDecodeRequest(std::string_view body, bool base64, int vocab_size) {
  OMNI_ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonObjectBody(body));
  DecodeRequest r;
  r.api = base64 ? DecodeApi::kOmniServeBase64 : DecodeApi::kOmniServe;
  r.inline_image = base64;
  OMNI_ASSIGN_OR_RETURN(r.tokens, ParseTokenString(j, "vlm_output", vocab_size));
  OMNI_RETURN_IF_ERROR(ReadSide(j, "width", &r.width));
  OMNI_RETURN_IF_ERROR(ReadSide(j, "height", &r.height));
  OMNI_RETURN_IF_ERROR(ReadInt(j, "num_inference_steps", 1, kMaxDecodeSteps, &r.steps));
  if (!r.steps) r.steps = 50;  // OmniServe's default
  OMNI_RETURN_IF_ERROR(ReadGuidance(j, "guidance_scale", &r.guidance));
  OMNI_RETURN_IF_ERROR(ReadSeed(j, "seed", &r.seed));
  return r;
}

}  // namespace omni::decoder
