// libFuzzer target for the Transcriptions API (transcriptions_api.h): the
// multipart body a client sends to /v1/audio/transcriptions, and the chat
// answer the model writes, which becomes every answer format. The input's
// first line is the Content-Type, the rest the body; the whole input is also
// the chat answer's message content.
//
// For any input: no crash or out-of-bounds read; a refusal says why and (for
// the form's fields) names the field; an accepted request is inside its
// documented limits and becomes a chat body that is JSON with one audio part;
// every answer is well formed: JSON parses, a subtitle cue holds no blank
// line and no "-->", vtt text no raw '<' or '&' outside an escape.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "media/media_kind.h"
#include "net/http.h"
#include "services/orchestrator/transcriptions_api.h"

namespace {

using Json = nlohmann::json;
using omni::orchestrator::TranscriptionFormat;

constexpr omni::orchestrator::TranscriptionLimits kLimits{.max_seconds = 2, .max_prompt_bytes = 256};

void CheckAccepted(const omni::orchestrator::TranscriptionRequest& r) {
  using namespace omni::orchestrator;
  OMNI_CHECK(!r.audio.empty());
  OMNI_CHECK(omni::media::MediaKindInfo(r.kind).cls == omni::media::MediaClass::kAudio);
  OMNI_CHECK(r.mime == omni::media::MediaKindInfo(r.kind).mime);
  OMNI_CHECK(r.seconds >= 0 && r.seconds <= kLimits.max_seconds + 0.01) << r.seconds;
  OMNI_CHECK(r.language.empty() || (r.language.size() >= 2 && r.language.size() <= 3));
  OMNI_CHECK(r.prompt.size() <= kLimits.max_prompt_bytes);
  OMNI_CHECK(r.temperature >= 0 && r.temperature <= 1);
  const Json chat = Json::parse(TranscriptionChatBody(r, r.model), nullptr, false);
  OMNI_CHECK(chat.is_object());
  const Json& content = chat["messages"][0]["content"];
  OMNI_CHECK(content.size() == 2 && content[0]["type"] == "input_audio" && content[1]["type"] == "text");
  OMNI_CHECK(chat["stream"] == false);
}

class CapturingWriter final : public omni::ResponseWriter {
 public:
  bool Send(omni::HttpResponse response) override {
    sent.push_back(std::move(response));
    return true;
  }
  bool StartStream(int, omni::HttpHeaders) override { return true; }
  bool Write(std::string_view) override { return true; }
  bool WriteNoWait(std::string_view) override { return true; }
  bool Finish() override { return true; }
  bool client_gone() const override { return false; }
  void OnClientGone(std::function<void()>) override {}
  const std::string& request_id() const override { return id_; }

  std::vector<omni::HttpResponse> sent;

 private:
  std::string id_;
};

// The cue's text lines of a subtitle body: after the timing line, to the end.
void CheckCue(std::string_view body, std::string_view header, bool vtt) {
  if (body.empty() || body == header) return;  // no cue: an empty transcript
  OMNI_CHECK(body.starts_with(header));
  body.remove_prefix(header.size());
  const size_t timing_end = body.find('\n');
  OMNI_CHECK(timing_end != std::string_view::npos && body.substr(0, timing_end).find("-->") != std::string_view::npos);
  std::string_view text = body.substr(timing_end + 1);
  OMNI_CHECK(text.ends_with("\n\n"));
  text.remove_suffix(2);
  OMNI_CHECK(!text.empty() && text.find("\n\n") == std::string_view::npos);
  OMNI_CHECK(text.find("-->") == std::string_view::npos);
  OMNI_CHECK(text.find('\r') == std::string_view::npos && text.front() != '\n' && text.back() != '\n');
  if (vtt) OMNI_CHECK(text.find('<') == std::string_view::npos);
}

void CheckAnswers(std::string_view content) {
  const std::string chat =
      Json({{"choices", Json::array({{{"message", {{"content", content}}}}})}})
          .dump(-1, ' ', false, Json::error_handler_t::replace);
  for (TranscriptionFormat format : {TranscriptionFormat::kJson, TranscriptionFormat::kText, TranscriptionFormat::kSrt,
                                     TranscriptionFormat::kVerboseJson, TranscriptionFormat::kVtt}) {
    auto client = std::make_shared<CapturingWriter>();
    auto writer = omni::orchestrator::MakeTranscriptionAnswerWriter(client, format, 4000.25, "ko");
    writer->Send(omni::JsonResponse(200, chat));
    OMNI_CHECK(client->sent.size() == 1 && client->sent[0].status == 200);
    const std::string& body = client->sent[0].body;
    switch (format) {
      case TranscriptionFormat::kJson:
      case TranscriptionFormat::kVerboseJson:
        OMNI_CHECK(Json::parse(body, nullptr, false).is_object());
        break;
      case TranscriptionFormat::kText:
        OMNI_CHECK(body.empty() || body.ends_with('\n'));
        break;
      case TranscriptionFormat::kSrt:
        CheckCue(body, "1\n", false);
        break;
      case TranscriptionFormat::kVtt:
        CheckCue(body, "WEBVTT\n\n", true);
        break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const std::string_view content_type = nl == std::string_view::npos ? input : input.substr(0, nl);
  const std::string_view body = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
  StatusOr<orchestrator::TranscriptionRequest> r = orchestrator::ParseTranscriptionRequest(content_type, body, kLimits);
  if (r.ok()) {
    CheckAccepted(*r);
  } else {
    OMNI_CHECK(!r.status().message().empty());
  }
  CheckAnswers(input);
  const std::string transcript = orchestrator::TranscriptFromChatContent(input);
  OMNI_CHECK(transcript.size() <= input.size());
  return 0;
}
