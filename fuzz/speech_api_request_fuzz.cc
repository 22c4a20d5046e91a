// libFuzzer target for the orchestrator's speech requests: the Speech API
// body (services/orchestrator/speech_api.h, POST /v1/audio/speech) and a
// chat body's audio output options (speech_options.h: "modalities",
// "audio"), with ForceAudioBody, on the input as a request body. Seeds:
// fuzz/corpus/speech_api_request.
//
// For any input: no crash, uncaught exception or out-of-bounds read; a
// refusal is InvalidArgument with a message and names a field it knows in its
// param. An accepted Speech API request has an input of 1 to 4096 UTF-8
// characters (valid UTF-8), a non-empty voice and a response_format among
// mp3, opus, aac, flac, wav, pcm16 (one the audio encoder knows); its chat
// body is a JSON object that speaks that text in that voice (streamed,
// pcm16, max_tokens in [160, 2400]) and whose audio options our own chat-side
// parser accepts with the same voice. Accepted audio options have a known
// format and a speaker that names something (is_ref_audio: true always a
// reference clip); ForceAudioBody's result is a JSON object with force_audio
// and without modalities, audio and is_ref_audio (so it asks for no audio
// options again).
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/utf8.h"
#include "media/audio_encode.h"
#include "services/orchestrator/speech_api.h"
#include "services/orchestrator/speech_options.h"

namespace {

using Json = nlohmann::json;
using omni::StatusOr;

bool OneOf(std::string_view s, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), s) != options.end();
}

size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (size_t pos = 0; pos < s.size(); ++n) omni::NextCodePoint(s, &pos);
  return n;
}

void CheckSpeechApi(std::string_view body) {
  using namespace omni;
  using namespace omni::orchestrator;
  StatusOr<SpeechApiRequest> r = ParseSpeechApiRequest(body);
  if (!r.ok()) {
    OMNI_CHECK(r.status().code() == StatusCode::kInvalidArgument) << r.status().ToString();
    OMNI_CHECK(!r.status().message().empty());
    // A field-level refusal names the field: a known one, or the unknown one
    // (which may be "").
    const Json j = Json::parse(body, nullptr, false);
    const std::string param = r.status().param();
    if (j.is_object()) {
      OMNI_CHECK(OneOf(param, {"model", "input", "voice", "response_format", "speed", "stream_format",
                               "instructions"}) ||
                 j.contains(param))
          << r.status().ToString();
    }
    return;
  }
  OMNI_CHECK(!r->input.empty());
  OMNI_CHECK(IsValidUtf8(r->input));
  OMNI_CHECK(CodePoints(r->input) <= 4096) << CodePoints(r->input);
  OMNI_CHECK(!r->voice.empty());
  OMNI_CHECK(OneOf(r->response_format, {"mp3", "opus", "aac", "flac", "wav", "pcm16"})) << r->response_format;
  OMNI_CHECK(media::ParseAudioFormat(r->response_format).ok()) << r->response_format;

  const std::string chat_text = SpeechApiChatBody(*r, r->model);
  Json chat = Json::parse(chat_text, nullptr, false);
  OMNI_CHECK(chat.is_object()) << chat_text;
  OMNI_CHECK(chat["stream"] == true);
  OMNI_CHECK(chat["audio"]["voice"] == r->voice && chat["audio"]["format"] == "pcm16");
  OMNI_CHECK(chat["max_tokens"].is_number_integer() && chat["max_tokens"] >= 160 && chat["max_tokens"] <= 2400);
  const Json& messages = chat["messages"];
  OMNI_CHECK(messages.is_array() && messages.size() == (r->instructions.empty() ? 1u : 2u));
  OMNI_CHECK(messages.back()["role"] == "user" && messages.back()["content"] == SpeechInstruction(r->input));
  if (!r->instructions.empty()) OMNI_CHECK(messages[0]["role"] == "system" && messages[0]["content"] == r->instructions);
  OMNI_CHECK(r->model.empty() ? !chat.contains("model") : chat["model"] == r->model);

  // The chat path takes its own speech request back.
  StatusOr<std::optional<SpeechRequestOptions>> o = ParseSpeechOptions(chat_text);
  OMNI_CHECK(o.ok()) << o.status().ToString();
  OMNI_CHECK(o->has_value());
  OMNI_CHECK((*o)->voice == r->voice && (*o)->format == "pcm16" && !(*o)->speaker.has_value());
}

void CheckSpeechOptions(std::string_view body) {
  using namespace omni;
  using namespace omni::orchestrator;
  StatusOr<std::optional<SpeechRequestOptions>> o = ParseSpeechOptions(body);
  if (!o.ok()) {
    OMNI_CHECK(o.status().code() == StatusCode::kInvalidArgument) << o.status().ToString();
    OMNI_CHECK(!o.status().message().empty());
    OMNI_CHECK(OneOf(o.status().param(),
                     {"modalities", "audio", "audio.voice", "audio.format", "audio.speaker", "is_ref_audio"}))
        << o.status().param();
    return;
  }
  if (o->has_value()) {
    const SpeechRequestOptions& opts = **o;
    // Audio output is asked for only by a JSON object listing "audio".
    Json j = Json::parse(body, nullptr, false);
    OMNI_CHECK(j.is_object() && j["modalities"].is_array());
    OMNI_CHECK(std::find(j["modalities"].begin(), j["modalities"].end(), Json("audio")) != j["modalities"].end());
    OMNI_CHECK(OneOf(opts.format, {"wav", "mp3", "flac", "opus", "aac", "pcm16"})) << opts.format;
    OMNI_CHECK(media::ParseAudioFormat(opts.format).ok()) << opts.format;
    if (opts.speaker) {
      OMNI_CHECK(!opts.speaker->id.empty() || !opts.speaker->gender.empty() || !opts.speaker->age.empty() ||
                 !opts.speaker->ref_audio.empty());
    }
    // is_ref_audio: true always names a clip (or was refused above).
    if (j.contains("is_ref_audio") && j["is_ref_audio"] == true) {
      OMNI_CHECK(opts.speaker && !opts.speaker->ref_audio.empty());
    }
  }

  StatusOr<std::string> forced = ForceAudioBody(body);
  const bool object = Json::parse(body, nullptr, false).is_object();
  OMNI_CHECK(forced.ok() == object) << forced.status().ToString();
  if (!forced.ok()) {
    OMNI_CHECK(forced.status().code() == StatusCode::kInvalidArgument);
    return;
  }
  Json f = Json::parse(*forced, nullptr, false);
  OMNI_CHECK(f.is_object()) << *forced;
  OMNI_CHECK(f["force_audio"] == true);
  OMNI_CHECK(!f.contains("modalities") && !f.contains("audio") && !f.contains("is_ref_audio"));
  StatusOr<std::optional<SpeechRequestOptions>> again = ParseSpeechOptions(*forced);
  OMNI_CHECK(again.ok() && !again->has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  CheckSpeechApi(body);
  CheckSpeechOptions(body);
  return 0;
}
