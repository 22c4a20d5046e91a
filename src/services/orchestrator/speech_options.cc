#include "services/orchestrator/speech_options.h"

#include <nlohmann/json.hpp>

namespace omni::orchestrator {
namespace {

using Json = nlohmann::ordered_json;

Status Bad(std::string message, std::string param) {
  return InvalidArgument(std::move(message)).WithParam(std::move(param));
}

}  // namespace

StatusOr<std::optional<SpeechRequestOptions>> ParseSpeechOptions(std::string_view body) {
  const Json j = Json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("modalities") || j["modalities"].is_null()) return std::optional<SpeechRequestOptions>();
  const Json& m = j["modalities"];
  if (!m.is_array()) return Bad("'modalities' must be a list of \"text\" and \"audio\"", "modalities");
  bool audio = false;
  for (const Json& x : m) {
    if (!x.is_string() || (x != "text" && x != "audio")) {
      return Bad("'modalities' may list only \"text\" and \"audio\"", "modalities");
    }
    audio = audio || x == "audio";
  }
  if (!audio) return std::optional<SpeechRequestOptions>();
  SpeechRequestOptions o;
  if (!j.contains("audio") || j["audio"].is_null()) return std::optional<SpeechRequestOptions>(o);
  const Json& a = j["audio"];
  if (!a.is_object()) return Bad("'audio' must be an object: {\"voice\": ..., \"format\": ...}", "audio");
  if (a.contains("voice")) {
    if (!a["voice"].is_string() || a["voice"].get<std::string>().empty()) {
      return Bad("'audio.voice' must be a voice name", "audio.voice");
    }
    o.voice = a["voice"].get<std::string>();
  }
  if (a.contains("format")) {
    const Json& f = a["format"];
    static constexpr std::string_view kFormats[] = {"wav", "mp3", "flac", "opus", "aac", "pcm16"};
    if (!f.is_string() || std::find(std::begin(kFormats), std::end(kFormats), f.get<std::string>()) == std::end(kFormats)) {
      return Bad("'audio.format' must be one of wav, mp3, flac, opus, aac, pcm16", "audio.format");
    }
    o.format = f.get<std::string>();
  }
  if (a.contains("speaker")) {
    const Json& s = a["speaker"];
    SpeakerSpec spec;
    auto field = [&](const char* k, std::string* out) -> Status {
      if (!s.contains(k)) return Status::Ok();
      if (!s[k].is_string()) return Bad(std::string("'audio.speaker.") + k + "' must be a string", "audio.speaker");
      *out = s[k].get<std::string>();
      return Status::Ok();
    };
    if (!s.is_object()) return Bad("'audio.speaker' must be {\"id\"} or {\"gender\", \"age\"}", "audio.speaker");
    if (s.contains("ref_audio")) {
      return Bad("zero-shot voices (audio.speaker.ref_audio) are not supported by this deployment's audio decoder yet",
                 "audio.speaker")
          .WithErrorCode("unsupported_speaker");
    }
    OMNI_RETURN_IF_ERROR(field("id", &spec.id));
    OMNI_RETURN_IF_ERROR(field("gender", &spec.gender));
    OMNI_RETURN_IF_ERROR(field("age", &spec.age));
    if (spec.id.empty() && spec.gender.empty() && spec.age.empty()) {
      return Bad("'audio.speaker' must name an id, a gender or an age", "audio.speaker");
    }
    o.speaker = spec;
  }
  return std::optional<SpeechRequestOptions>(o);
}

StatusOr<std::string> ForceAudioBody(std::string_view body) {
  Json j = Json::parse(body, nullptr, false);
  if (!j.is_object()) return InvalidArgument("the request body is not a JSON object");
  j.erase("modalities");
  j.erase("audio");
  j["force_audio"] = true;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace omni::orchestrator
