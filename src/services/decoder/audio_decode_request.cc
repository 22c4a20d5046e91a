#include "services/decoder/audio_decode_request.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "api/json_body.h"
#include "models/audio_decoder/speakers.h"

namespace omni::decoder {
namespace {

bool Present(const nlohmann::json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

Status UnitOutOfRange(std::string_view shown_unit, size_t position, int64_t num_units, std::string_view param) {
  return InvalidArgument(
             fmt::format("audio unit {} at position {} is outside [0, {})", shown_unit, position, num_units))
      .WithParam(std::string(param));
}

Status CheckUnitCount(size_t count, std::string_view param) {
  if (count < kMinDecodeUnits || count > kMaxDecodeUnits) {
    return InvalidArgument(fmt::format("'{}' must hold {} to {} audio units (got {})", param, kMinDecodeUnits,
                                       kMaxDecodeUnits, count))
        .WithParam(std::string(param));
  }
  return Status::Ok();
}

StatusOr<std::vector<int32_t>> ParseUnitArray(const nlohmann::json& a, int64_t num_units, std::string_view param) {
  OMNI_RETURN_IF_ERROR(CheckUnitCount(a.size(), param));
  std::vector<int32_t> units;
  units.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const nlohmann::json& u = a[i];
    if (!u.is_number_integer()) {
      return InvalidArgument(fmt::format("'{}[{}]' must be an integer audio unit in [0, {})", param, i, num_units))
          .WithParam(std::string(param));
    }
    if (u.is_number_unsigned() ? u.get<uint64_t>() >= static_cast<uint64_t>(num_units)
                               : (u.get<int64_t>() < 0 || u.get<int64_t>() >= num_units)) {
      return UnitOutOfRange(u.dump(), i, num_units, param);
    }
    units.push_back(static_cast<int32_t>(u.get<int64_t>()));
  }
  return units;
}

// A string field (or absent / null / ""): `*out` stays empty.
Status ReadString(const nlohmann::json& j, const char* key, std::string_view param, std::string* out) {
  if (!Present(j, key)) return Status::Ok();
  if (!j[key].is_string()) return JsonFieldError(param, "a string");
  *out = j[key].get<std::string>();
  return Status::Ok();
}

// The speaker object of either route; `ref_audio_keys` are the fields that
// carry a reference clip on this route.
StatusOr<SpeakerChoice> ParseSpeaker(const nlohmann::json& j, std::initializer_list<const char*> ref_audio_keys) {
  SpeakerChoice s;
  if (!Present(j, "speaker")) return s;
  const nlohmann::json& sp = j["speaker"];
  if (!sp.is_object()) return JsonFieldError("speaker", "an object: {\"id\"}, {\"gender\", \"age\"}");
  OMNI_RETURN_IF_ERROR(ReadString(sp, "id", "speaker.id", &s.id));
  OMNI_RETURN_IF_ERROR(ReadString(sp, "gender", "speaker.gender", &s.gender));
  if (Present(sp, "age") && sp["age"].is_number_integer()) {
    s.age = std::to_string(sp["age"].get<int64_t>());  // 10, as OmniServe's clients sometimes send it
  } else {
    OMNI_RETURN_IF_ERROR(ReadString(sp, "age", "speaker.age", &s.age));
  }
  for (const char* key : ref_audio_keys) {
    std::string clip;
    const std::string param = std::string("speaker.") + key;
    OMNI_RETURN_IF_ERROR(ReadString(sp, key, param, &clip));
    if (clip.empty() || !s.ref_audio_param.empty()) continue;
    s.ref_audio_param = param;
    // OmniServe's ref_audio_base64 is bare base64: a data URL to the fetcher.
    s.ref_audio = std::string_view(key) == "ref_audio_base64" ? "data:application/octet-stream;base64," + clip
                                                              : std::move(clip);
  }
  if (!s.gender.empty() && s.gender != "f" && s.gender != "m") {
    return InvalidArgument(fmt::format("speaker gender must be \"f\" or \"m\", not \"{}\"", ShownValue(s.gender)))
        .WithParam("speaker.gender");
  }
  if (!s.age.empty() &&
      std::find(models::kSpeakerAges.begin(), models::kSpeakerAges.end(), s.age) == models::kSpeakerAges.end()) {
    return InvalidArgument(fmt::format("speaker age must be one of 0-10, 10, 20-30, 40-50, 60-70, not \"{}\"",
                                       ShownValue(s.age)))
        .WithParam("speaker.age");
  }
  return s;
}

Status ReadFormat(const nlohmann::json& j, bool omniserve, AudioDecodeRequest* r) {
  if (!Present(j, "format")) return Status::Ok();
  const char* want = omniserve ? "\"wav\", \"mp3\", \"flac\", \"ogg\", \"aac\" or \"pcm\""
                               : "\"wav\", \"flac\", \"mp3\", \"opus\", \"aac\" or \"pcm16\"";
  if (!j["format"].is_string()) return JsonFieldError("format", want);
  r->requested_format = j["format"].get<std::string>();
  if (omniserve && r->requested_format == "ogg") {
    r->format = media::AudioFormat::kOpus;
    return Status::Ok();
  }
  StatusOr<media::AudioFormat> format = media::ParseAudioFormat(r->requested_format);
  if (!format.ok()) {
    return InvalidArgument(fmt::format("unsupported audio format '{}': expected {}", ShownValue(r->requested_format),
                                       want))
        .WithParam("format");
  }
  r->format = *format;
  return Status::Ok();
}

StatusOr<UnitRange> ParseRange(const nlohmann::json& j, size_t window_size) {
  const nlohmann::json& r = j["range"];
  if (!r.is_object()) return JsonFieldError("range", "an object {\"window_start\", \"first\", \"last\"}");
  UnitRange out;
  for (auto [key, field] : {std::pair{"window_start", &out.window_start}, std::pair{"first", &out.first},
                            std::pair{"last", &out.last}}) {
    if (!r.contains(key) || !r[key].is_number_integer() ||
        (r[key].is_number_unsigned() && r[key].get<uint64_t>() > (uint64_t{1} << 62))) {
      return JsonFieldError(fmt::format("range.{}", key), "an integer");
    }
    *field = r[key].get<int64_t>();
  }
  const int64_t window_end = out.window_start + static_cast<int64_t>(window_size);
  if (out.window_start < 0 || out.first < out.window_start || out.last > window_end || out.first >= out.last) {
    return InvalidArgument(fmt::format("range: units [{}, {}) must be a non-empty part of the window [{}, {})",
                                       out.first, out.last, out.window_start, window_end))
        .WithParam("range");
  }
  return out;
}

}  // namespace

StatusOr<std::vector<int32_t>> ParseAudioUnitTokens(std::string_view text, int64_t num_units, std::string_view param) {
  constexpr std::string_view kOpen = "<|audio";
  std::vector<int32_t> units;
  for (size_t p = text.find(kOpen); p != std::string_view::npos; p = text.find(kOpen, p + 1)) {
    const size_t digits = p + kOpen.size();
    size_t end = digits;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end == digits || text.substr(end, 2) != "|>") continue;  // <|audio_start|> and the like
    const std::string_view number = text.substr(digits, end - digits);
    int64_t unit = -1;
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), unit);
    if (ec != std::errc() || unit >= num_units) {
      return UnitOutOfRange(ShownValue(number), units.size(), num_units, param);
    }
    units.push_back(static_cast<int32_t>(unit));
  }
  if (units.empty()) {
    return InvalidArgument(fmt::format("'{}' holds no <|audioN|> unit token", param)).WithParam(std::string(param));
  }
  return units;
}

StatusOr<AudioDecodeRequest> ParseAudioDecodeRequest(std::string_view body, int64_t num_units) {
  OMNI_ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonObjectBody(body));
  AudioDecodeRequest r;
  r.api = AudioDecodeApi::kOmni;
  OMNI_RETURN_IF_ERROR(ReadString(j, "model", "model", &r.model));
  if (!Present(j, "units")) return InvalidArgument("'units' is required").WithParam("units");
  if (j["units"].is_array()) {
    OMNI_ASSIGN_OR_RETURN(r.units, ParseUnitArray(j["units"], num_units, "units"));
  } else if (j["units"].is_string()) {
    OMNI_ASSIGN_OR_RETURN(r.units, ParseAudioUnitTokens(j["units"].get_ref<const std::string&>(), num_units, "units"));
    OMNI_RETURN_IF_ERROR(CheckUnitCount(r.units.size(), "units"));
  } else {
    return JsonFieldError("units", "an array of audio units or the model's <|audioN|> token string");
  }
  OMNI_ASSIGN_OR_RETURN(r.speaker, ParseSpeaker(j, {"ref_audio"}));
  OMNI_RETURN_IF_ERROR(ReadFormat(j, /*omniserve=*/false, &r));
  if (Present(j, "inline")) {
    if (!j["inline"].is_boolean()) return JsonFieldError("inline", "a boolean");
    r.inline_audio = j["inline"].get<bool>();
  }
  if (Present(j, "range")) {
    OMNI_ASSIGN_OR_RETURN(r.range, ParseRange(j, r.units.size()));
  }
  OMNI_RETURN_IF_ERROR(ReadString(j, "user", "user", &r.user));
  if (r.user.size() > 256) r.user.resize(256);
  return r;
}

StatusOr<AudioDecodeRequest> ParseOmniServeAudioDecodeRequest(std::string_view body, int64_t num_units) {
  OMNI_ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonObjectBody(body));
  AudioDecodeRequest r;
  r.api = AudioDecodeApi::kOmniServe;
  if (!Present(j, "units") || !j["units"].is_array()) return JsonFieldError("units", "an array of audio units");
  OMNI_ASSIGN_OR_RETURN(r.units, ParseUnitArray(j["units"], num_units, "units"));
  OMNI_ASSIGN_OR_RETURN(r.speaker, ParseSpeaker(j, {"ref_audio_base64", "ref_audio_url"}));
  OMNI_RETURN_IF_ERROR(ReadFormat(j, /*omniserve=*/true, &r));
  return r;
}

}  // namespace omni::decoder
