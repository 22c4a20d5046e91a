#include "services/orchestrator/speech_options.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace omni::orchestrator {
namespace {

using Json = nlohmann::ordered_json;

Status Bad(std::string message, std::string param) {
  return InvalidArgument(std::move(message)).WithParam(std::move(param));
}

// OmniServe's is_ref_audio: the last audio part of the messages (an
// input_audio part as a data: URL, or an audio_url part's URL).
StatusOr<std::string> LastInputAudio(const Json& j) {
  if (j.contains("messages") && j["messages"].is_array()) {
    const Json& messages = j["messages"];
    for (auto m = messages.rbegin(); m != messages.rend(); ++m) {
      if (!m->is_object() || !m->contains("content") || !(*m)["content"].is_array()) continue;
      const Json& parts = (*m)["content"];
      for (auto p = parts.rbegin(); p != parts.rend(); ++p) {
        if (!p->is_object() || !p->contains("type")) continue;
        const Json& part = *p;
        if (part["type"] == "input_audio" && part.contains("input_audio") && part["input_audio"].is_object()) {
          const Json& a = part["input_audio"];
          if (a.contains("data") && a["data"].is_string() && !a["data"].get_ref<const std::string&>().empty()) {
            // The format names the data: URL's media type only when it is a plain token.
            std::string format = a.contains("format") && a["format"].is_string() ? a["format"].get<std::string>() : "";
            const bool token = !format.empty() && format.size() <= 16 &&
                               std::all_of(format.begin(), format.end(), [](unsigned char ch) { return std::isalnum(ch) != 0; });
            return (token ? "data:audio/" + format : std::string("data:application/octet-stream")) + ";base64," +
                   a["data"].get<std::string>();
          }
        }
        if (part["type"] == "audio_url" && part.contains("audio_url") && part["audio_url"].is_object() &&
            part["audio_url"].contains("url") && part["audio_url"]["url"].is_string() &&
            !part["audio_url"]["url"].get_ref<const std::string&>().empty()) {
          return part["audio_url"]["url"].get<std::string>();
        }
      }
    }
  }
  return Bad("'is_ref_audio' clones the voice of the messages' last audio part, and they have none", "is_ref_audio");
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
  if (j.contains("is_ref_audio")) {
    if (!j["is_ref_audio"].is_boolean()) return Bad("'is_ref_audio' must be true or false", "is_ref_audio");
    if (j["is_ref_audio"].get<bool>()) {
      OMNI_ASSIGN_OR_RETURN(std::string clip, LastInputAudio(j));
      o.speaker = SpeakerSpec{.ref_audio = std::move(clip)};
    }
  }
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
    if (!s.is_object()) {
      return Bad("'audio.speaker' must be {\"id\"}, {\"gender\", \"age\"} or {\"ref_audio\"}", "audio.speaker");
    }
    OMNI_RETURN_IF_ERROR(field("id", &spec.id));
    OMNI_RETURN_IF_ERROR(field("gender", &spec.gender));
    OMNI_RETURN_IF_ERROR(field("age", &spec.age));
    OMNI_RETURN_IF_ERROR(field("ref_audio", &spec.ref_audio));
    if (spec.id.empty() && spec.gender.empty() && spec.age.empty() && spec.ref_audio.empty()) {
      return Bad("'audio.speaker' must name an id, a gender, an age or a ref_audio URL", "audio.speaker");
    }
    // is_ref_audio's clip joins an explicit speaker (whose id, if any, wins at the decoder).
    if (o.speaker && spec.ref_audio.empty()) spec.ref_audio = o.speaker->ref_audio;
    o.speaker = spec;
  }
  return std::optional<SpeechRequestOptions>(o);
}

StatusOr<std::string> ForceAudioBody(std::string_view body) {
  Json j = Json::parse(body, nullptr, false);
  if (!j.is_object()) return InvalidArgument("the request body is not a JSON object");
  j.erase("modalities");
  j.erase("audio");
  j.erase("is_ref_audio");
  j["force_audio"] = true;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace omni::orchestrator
