#include "services/orchestrator/speech_api.h"

#include <algorithm>
#include <mutex>

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "media/audio_encode.h"
#include "net/sse.h"

namespace omni::orchestrator {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMaxInputChars = 4096;

Status Bad(std::string message, std::string param) {
  return InvalidArgument(std::move(message)).WithParam(std::move(param));
}

size_t Utf8Chars(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// The chat answer (events of delta.audio.data, pcm16) -> the Speech API's.
class SpeechApiWriter final : public ResponseWriter {
 public:
  SpeechApiWriter(std::shared_ptr<ResponseWriter> client, SpeechApiRequest request)
      : client_(std::move(client)), request_(std::move(request)) {}

  bool Send(HttpResponse response) override {
    // Not a stream: an error answer (the chat request was streamed).
    return client_->Send(std::move(response));
  }
  bool StartStream(int status, HttpHeaders headers) override {
    std::lock_guard lock(mu_);
    if (status != 200) {
      passthrough_ = true;
      return client_->StartStream(status, std::move(headers));
    }
    return true;  // started with the first audio, or with an error
  }
  bool Write(std::string_view chunk) override {
    std::lock_guard lock(mu_);
    if (passthrough_) return client_->WriteNoWait(chunk);
    if (ended_) return false;
    for (SseEvent& e : parser_.Feed(chunk)) Event(e.data);
    return !client_->client_gone();
  }
  bool WriteNoWait(std::string_view chunk) override { return Write(chunk); }
  bool Finish() override {
    std::lock_guard lock(mu_);
    if (!passthrough_ && !ended_) End(Internal("the spoken answer ended early").WithErrorCode("audio_missing"));
    return client_->Finish();
  }
  bool client_gone() const override { return client_->client_gone(); }
  void OnClientGone(std::function<void()> cb) override { client_->OnClientGone(std::move(cb)); }
  const std::string& request_id() const override { return client_->request_id(); }

 private:
  // Under mu_.
  bool Start() {
    if (started_) return true;
    started_ = true;
    StatusOr<media::AudioFormat> format = media::ParseAudioFormat(request_.response_format);
    if (format.ok()) {
      StatusOr<std::unique_ptr<media::AudioStreamEncoder>> e = media::AudioStreamEncoder::Create(*format, 24000);
      if (e.ok()) encoder_ = std::move(e).value();
    }
    HttpHeaders headers;
    if (request_.sse) {
      headers.Set("content-type", "text/event-stream");
      headers.Set("cache-control", "no-cache");
    } else {
      headers.Set("content-type", format.ok() ? std::string(media::AudioMimeType(*format)) : "application/octet-stream");
    }
    client_->StartStream(200, std::move(headers));
    return encoder_ != nullptr;
  }
  void Out(const std::string& bytes) {
    if (bytes.empty()) return;
    if (request_.sse) {
      client_->WriteSseEventNoWait(Json{{"type", "speech.audio.delta"}, {"audio", Base64Encode(bytes)}}.dump());
    } else {
      client_->WriteNoWait(bytes);
    }
  }
  // The answer's end: the encoder's tail and (sse) the done event, or an error.
  void End(const Status& error) {
    ended_ = true;
    if (!error.ok()) {
      if (!started_) {
        client_->Send(ErrorResponse(error));
        return;
      }
      // A raw audio body cannot carry an error: it is cut (the client sees a
      // short body); an event stream gets the error event.
      if (request_.sse) client_->WriteSseEventNoWait(error.ToOpenAiJson());
      return;
    }
    if (!Start()) return;
    StatusOr<std::string> tail = encoder_->Finish();
    if (tail.ok()) Out(*tail);
    if (request_.sse) {
      client_->WriteSseEventNoWait(Json{{"type", "speech.audio.done"},
                                        {"usage",
                                         {{"input_tokens", usage_in_},
                                          {"output_tokens", usage_out_},
                                          {"total_tokens", usage_in_ + usage_out_}}}}
                                       .dump());
    }
  }
  void Event(const std::string& data) {
    if (ended_) return;
    if (data == "[DONE]") return End(Status::Ok());
    const Json j = Json::parse(data, nullptr, false);
    if (!j.is_object()) return;
    if (j.contains("error")) {
      const Json& e = j["error"];
      return End(Internal(e.value("message", "the spoken answer failed")).WithErrorCode(e.value("code", "audio_decode_failed")));
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      usage_in_ = j["usage"].value("prompt_tokens", 0);
      usage_out_ = j["usage"].value("completion_tokens", 0);
    }
    if (!j.contains("choices") || !j["choices"].is_array()) return;
    for (const Json& ch : j["choices"]) {
      if (!ch.contains("delta") || !ch["delta"].contains("audio")) continue;
      const Json& a = ch["delta"]["audio"];
      if (!a.contains("data") || !a["data"].is_string()) continue;
      std::optional<std::string> pcm = Base64Decode(a["data"].get<std::string>());
      if (!pcm || !Start()) continue;
      const std::span<const int16_t> samples(reinterpret_cast<const int16_t*>(pcm->data()), pcm->size() / 2);
      StatusOr<std::string> bytes = encoder_->Push(samples);
      if (bytes.ok()) Out(*bytes);
    }
  }

  std::shared_ptr<ResponseWriter> client_;
  const SpeechApiRequest request_;
  std::mutex mu_;
  SseParser parser_;
  std::unique_ptr<media::AudioStreamEncoder> encoder_;
  bool passthrough_ = false, started_ = false, ended_ = false;
  int64_t usage_in_ = 0, usage_out_ = 0;
};

}  // namespace

StatusOr<SpeechApiRequest> ParseSpeechApiRequest(std::string_view body) {
  const Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded()) return InvalidArgument("the request body is not valid JSON");
  if (!j.is_object()) return InvalidArgument("the request body must be a JSON object");
  static constexpr std::string_view kKnown[] = {"model", "input", "voice", "response_format", "speed",
                                                "stream_format", "instructions"};
  for (const auto& [key, value] : j.items()) {
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
      return Bad("unknown field '" + key + "'", key);
    }
  }
  SpeechApiRequest r;
  auto text = [&](const char* key, std::string* out, bool required) -> Status {
    if (!j.contains(key) || j[key].is_null()) {
      return required ? Bad(std::string("'") + key + "' is required", key) : Status::Ok();
    }
    if (!j[key].is_string()) return Bad(std::string("'") + key + "' must be a string", key);
    *out = j[key].get<std::string>();
    return Status::Ok();
  };
  OMNI_RETURN_IF_ERROR(text("model", &r.model, false));
  OMNI_RETURN_IF_ERROR(text("input", &r.input, true));
  if (r.input.empty() || Utf8Chars(r.input) > kMaxInputChars) {
    return Bad("'input' must be 1 to 4096 characters", "input");
  }
  OMNI_RETURN_IF_ERROR(text("voice", &r.voice, true));
  if (r.voice.empty()) return Bad("'voice' must name a voice", "voice");
  std::string format = "mp3";
  OMNI_RETURN_IF_ERROR(text("response_format", &format, false));
  static constexpr std::string_view kFormats[] = {"mp3", "opus", "aac", "flac", "wav", "pcm"};
  if (std::find(std::begin(kFormats), std::end(kFormats), format) == std::end(kFormats)) {
    return Bad("'response_format' must be one of mp3, opus, aac, flac, wav, pcm", "response_format");
  }
  r.response_format = format == "pcm" ? "pcm16" : format;
  if (j.contains("speed") && !j["speed"].is_null()) {
    if (!j["speed"].is_number()) return Bad("'speed' must be a number", "speed");
    const double speed = j["speed"].get<double>();
    if (speed < 0.25 || speed > 4.0) return Bad("'speed' must be in [0.25, 4]", "speed");
    if (speed != 1.0) {
      return Bad("'speed' other than 1 is not supported: the vocoder speaks at the model's own pace", "speed");
    }
  }
  std::string stream_format = "audio";
  OMNI_RETURN_IF_ERROR(text("stream_format", &stream_format, false));
  if (stream_format != "audio" && stream_format != "sse") {
    return Bad("'stream_format' must be audio or sse", "stream_format");
  }
  r.sse = stream_format == "sse";
  OMNI_RETURN_IF_ERROR(text("instructions", &r.instructions, false));
  return r;
}

std::string SpeechInstruction(std::string_view input) {
  return "Say the following text aloud, exactly as written:\n" + std::string(input);
}

std::string SpeechApiChatBody(const SpeechApiRequest& request, std::string_view model) {
  Json messages = Json::array();
  if (!request.instructions.empty()) messages.push_back(Json{{"role", "system"}, {"content", request.instructions}});
  messages.push_back(Json{{"role", "user"}, {"content", SpeechInstruction(request.input)}});
  // Speech runs at about 15 characters and 25 units a second: room for the
  // speech tags (93 tokens with the demo tokenizer), the transcript and about
  // twice the units the text needs.
  const int64_t chars = static_cast<int64_t>(Utf8Chars(request.input));
  Json body = {{"messages", std::move(messages)},
               {"modalities", {"text", "audio"}},
               {"audio", {{"voice", request.voice}, {"format", "pcm16"}}},
               {"chat_template_kwargs", {{"skip_reasoning", true}}},
               {"max_tokens", std::min<int64_t>(2400, 160 + 4 * chars)},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (!model.empty()) body["model"] = std::string(model);
  return body.dump();
}

std::shared_ptr<ResponseWriter> MakeSpeechApiWriter(std::shared_ptr<ResponseWriter> client,
                                                    const SpeechApiRequest& request) {
  return std::make_shared<SpeechApiWriter>(std::move(client), request);
}

}  // namespace omni::orchestrator
