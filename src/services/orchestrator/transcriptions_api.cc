#include "services/orchestrator/transcriptions_api.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/json_body.h"
#include "core/base64.h"
#include "core/utf8.h"
#include "media/audio.h"
#include "net/http.h"
#include "net/multipart.h"
#include "text/omni_tokens.h"

namespace omni::orchestrator {
namespace {

using Json = nlohmann::json;

constexpr int kAudioRate = 16000;  // the audio encoder's rate: a soundtrack is kept at it

// Durations are shown to the millisecond; negative and non-finite ones as 0,
// absurd ones capped (no clip lasts 30 years).
int64_t Milliseconds(double seconds) {
  return std::isfinite(seconds) && seconds > 0 ? std::llround(std::min(seconds, 1e9) * 1000) : 0;
}

// whisper's LANGUAGES table (whisper/tokenizer.py): the names verbose_json
// reports, and the instruction's "The speech is in <Name>."
constexpr std::array<std::pair<std::string_view, std::string_view>, 100> kLanguages{{
    {"en", "english"},    {"zh", "chinese"},     {"de", "german"},         {"es", "spanish"},
    {"ru", "russian"},    {"ko", "korean"},      {"fr", "french"},         {"ja", "japanese"},
    {"pt", "portuguese"}, {"tr", "turkish"},     {"pl", "polish"},         {"ca", "catalan"},
    {"nl", "dutch"},      {"ar", "arabic"},      {"sv", "swedish"},        {"it", "italian"},
    {"id", "indonesian"}, {"hi", "hindi"},       {"fi", "finnish"},        {"vi", "vietnamese"},
    {"he", "hebrew"},     {"uk", "ukrainian"},   {"el", "greek"},          {"ms", "malay"},
    {"cs", "czech"},      {"ro", "romanian"},    {"da", "danish"},         {"hu", "hungarian"},
    {"ta", "tamil"},      {"no", "norwegian"},   {"th", "thai"},           {"ur", "urdu"},
    {"hr", "croatian"},   {"bg", "bulgarian"},   {"lt", "lithuanian"},     {"la", "latin"},
    {"mi", "maori"},      {"ml", "malayalam"},   {"cy", "welsh"},          {"sk", "slovak"},
    {"te", "telugu"},     {"fa", "persian"},     {"lv", "latvian"},        {"bn", "bengali"},
    {"sr", "serbian"},    {"az", "azerbaijani"}, {"sl", "slovenian"},      {"kn", "kannada"},
    {"et", "estonian"},   {"mk", "macedonian"},  {"br", "breton"},         {"eu", "basque"},
    {"is", "icelandic"},  {"hy", "armenian"},    {"ne", "nepali"},         {"mn", "mongolian"},
    {"bs", "bosnian"},    {"kk", "kazakh"},      {"sq", "albanian"},       {"sw", "swahili"},
    {"gl", "galician"},   {"mr", "marathi"},     {"pa", "punjabi"},        {"si", "sinhala"},
    {"km", "khmer"},      {"sn", "shona"},       {"yo", "yoruba"},         {"so", "somali"},
    {"af", "afrikaans"},  {"oc", "occitan"},     {"ka", "georgian"},       {"be", "belarusian"},
    {"tg", "tajik"},      {"sd", "sindhi"},      {"gu", "gujarati"},       {"am", "amharic"},
    {"yi", "yiddish"},    {"lo", "lao"},         {"uz", "uzbek"},          {"fo", "faroese"},
    {"ht", "haitian creole"}, {"ps", "pashto"},  {"tk", "turkmen"},        {"nn", "nynorsk"},
    {"mt", "maltese"},    {"sa", "sanskrit"},    {"lb", "luxembourgish"},  {"my", "myanmar"},
    {"bo", "tibetan"},    {"tl", "tagalog"},     {"mg", "malagasy"},       {"as", "assamese"},
    {"tt", "tatar"},      {"haw", "hawaiian"},   {"ln", "lingala"},        {"ha", "hausa"},
    {"ba", "bashkir"},    {"jw", "javanese"},    {"su", "sundanese"},      {"yue", "cantonese"},
}};

std::string_view KnownLanguage(std::string_view code) {
  for (const auto& [c, name] : kLanguages) {
    if (c == code) return name;
  }
  return {};
}

constexpr std::string_view kFields =
    "file, model, language, prompt, response_format, temperature, timestamp_granularities[], stream, "
    "chunking_strategy, include[]";

bool IsLanguageCode(std::string_view s) {
  return s.size() >= 2 && s.size() <= 3 && std::all_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

StatusOr<TranscriptionFormat> FormatOf(std::string_view v) {
  if (v == "json") return TranscriptionFormat::kJson;
  if (v == "text") return TranscriptionFormat::kText;
  if (v == "srt") return TranscriptionFormat::kSrt;
  if (v == "verbose_json") return TranscriptionFormat::kVerboseJson;
  if (v == "vtt") return TranscriptionFormat::kVtt;
  return JsonFieldError("response_format", "one of json, text, srt, verbose_json, vtt");
}

// A form value that must be a JSON number in [lo, hi].
StatusOr<double> NumberIn(const std::string& key, std::string_view text, double lo, double hi) {
  const Json v = Json::parse(text, nullptr, false);
  if (v.is_discarded() || !v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi)) {
    return JsonFieldError(key, fmt::format("a number in [{}, {}]", lo, hi));
  }
  return v.get<double>();
}

// A server_vad setting, as a JSON object's member or a chunking_strategy[key] field.
Status CheckVadSetting(const std::string& param, std::string_view key, const Json& v) {
  if (key == "type") {
    if (v != "server_vad") return JsonFieldError(param, "\"server_vad\"");
  } else if (key == "prefix_padding_ms" || key == "silence_duration_ms") {
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1e7)) {
      return JsonFieldError(param, "a number of milliseconds");
    }
  } else if (key == "threshold") {
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1)) return JsonFieldError(param, "in [0, 1]");
  } else {
    return InvalidArgument(fmt::format(
               "'{}' is not a server_vad setting (type, prefix_padding_ms, silence_duration_ms, threshold)",
               ShownValue(param)))
        .WithParam(param);
  }
  return Status::Ok();
}

// "auto" or a server_vad object: checked, no effect (the clip is heard whole).
Status CheckChunkingStrategy(std::string_view text) {
  if (text == "auto") return Status::Ok();
  const Json v = Json::parse(text, nullptr, false);
  if (v.is_discarded() || !v.is_object() || !v.contains("type")) {
    return JsonFieldError("chunking_strategy", "\"auto\" or a server_vad object, like {\"type\":\"server_vad\"}");
  }
  for (const auto& [key, value] : v.items()) {
    OMNI_RETURN_IF_ERROR(CheckVadSetting("chunking_strategy." + key, key, value));
  }
  return Status::Ok();
}

// A form value that is a JSON scalar where one is due ("0.5"), else the text.
Json VadValue(std::string_view key, std::string_view text) {
  if (key == "type") return Json(text);
  const Json v = Json::parse(text, nullptr, false);
  return v.is_discarded() ? Json(text) : v;
}

struct FieldState {
  std::set<std::string, std::less<>> seen;  // scalar fields given so far
};

// One text field of the form into `r`.
Status SetField(const std::string& key, const std::string& v, const TranscriptionLimits& limits, FieldState* state,
                TranscriptionRequest* r) {
  const bool array_field = key.ends_with("[]") || key == "timestamp_granularities" || key == "include";
  if (!array_field && !state->seen.insert(key).second) {
    return InvalidArgument(fmt::format("'{}' is given twice", ShownValue(key))).WithParam(key);
  }
  if (!IsValidUtf8(v)) return JsonFieldError(key, "UTF-8 text");
  if (key == "model") {
    r->model = v;
  } else if (key == "language") {
    if (!v.empty() && !IsLanguageCode(v)) {
      return JsonFieldError(key, "an ISO-639-1 code: 2 or 3 lowercase letters, like \"en\" or \"ko\"");
    }
    r->language = v;
  } else if (key == "prompt") {
    if (v.size() > limits.max_prompt_bytes) {
      return JsonFieldError(key, fmt::format("at most {} bytes", limits.max_prompt_bytes));
    }
    r->prompt = v;
  } else if (key == "response_format") {
    OMNI_ASSIGN_OR_RETURN(r->format, FormatOf(v));
  } else if (key == "temperature") {
    OMNI_ASSIGN_OR_RETURN(r->temperature, NumberIn(key, v, 0, 1));
  } else if (key == "timestamp_granularities[]" || key == "timestamp_granularities") {
    if (v == "word") {
      return InvalidArgument("word timestamps are not supported: the model gives no timings; \"segment\" gives "
                             "one segment spanning the clip")
          .WithParam(key);
    }
    if (v != "segment") return JsonFieldError(key, "\"segment\" or \"word\"");
  } else if (key == "stream") {
    if (v == "true" || v == "True") {
      return InvalidArgument("streamed transcription is not supported yet: send stream=false or leave it out")
          .WithParam(key);
    }
    if (v != "false" && v != "False") return JsonFieldError(key, "true or false");
  } else if (key == "chunking_strategy") {
    OMNI_RETURN_IF_ERROR(CheckChunkingStrategy(v));
  } else if (key.starts_with("chunking_strategy[") && key.ends_with("]") && !array_field) {
    const std::string sub = key.substr(18, key.size() - 19);
    OMNI_RETURN_IF_ERROR(CheckVadSetting(key, sub, VadValue(sub, v)));
  } else if (key == "include[]" || key == "include") {
    if (v == "logprobs") {
      return InvalidArgument("include=logprobs is not supported: the answer has no token log probabilities")
          .WithParam(key);
    }
    return InvalidArgument(
               fmt::format("'{}' is not a value of include[] (OpenAI's one value is logprobs)", ShownValue(v)))
        .WithParam(key);
  } else {
    return InvalidArgument(fmt::format("'{}' is not a field of this request ({})", ShownValue(key), kFields))
        .WithParam(key);
  }
  return Status::Ok();
}

void PutLe(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// 16-bit PCM WAV of `audio` (mono): samples scaled by 32768 and clipped, the
// inverse of how the decoder reads PCM16.
std::string Pcm16Wav(const media::Audio& audio) {
  const uint32_t data_bytes = static_cast<uint32_t>(audio.samples.size() * 2);
  std::string w;
  w.reserve(44 + data_bytes);
  w += "RIFF";
  PutLe(w, 36 + data_bytes, 4);
  w += "WAVEfmt ";
  PutLe(w, 16, 4);
  PutLe(w, 1, 2);  // integer PCM
  PutLe(w, 1, 2);  // mono
  PutLe(w, static_cast<uint32_t>(audio.sample_rate), 4);
  PutLe(w, static_cast<uint32_t>(audio.sample_rate) * 2, 4);
  PutLe(w, 2, 2);
  PutLe(w, 16, 2);
  w += "data";
  PutLe(w, data_bytes, 4);
  for (float s : audio.samples) {
    const long q = std::lrint(std::clamp(s * 32768.0f, -32768.0f, 32767.0f));
    PutLe(w, static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int16_t>(q))), 2);
  }
  return w;
}

// Decodes the upload (its errors keep their codes) and moves what the LLM
// hears into `r`.
Status TakeAudio(MultipartPart&& file, const TranscriptionLimits& limits, TranscriptionRequest* r) {
  media::AudioInfo info;
  StatusOr<media::Audio> audio =
      media::DecodeAudio(file.data, {.sample_rate = kAudioRate, .max_seconds = limits.max_seconds}, &info);
  if (!audio.ok()) return audio.status().WithParam("file");
  r->filename = file.filename;
  r->file_kind = info.kind;
  r->seconds = info.source_seconds > 0 ? info.source_seconds : audio->seconds();
  if (media::MediaKindInfo(info.kind).cls == media::MediaClass::kAudio) {
    r->kind = info.kind;
    r->audio = std::move(file.data);
  } else {
    r->kind = media::MediaKind::kWav;
    r->audio = Pcm16Wav(*audio);
  }
  r->mime = std::string(media::MediaKindInfo(r->kind).mime);
  return Status::Ok();
}

// The content without its thought, in one pass: a prefix that ends in
// </think> (the thought began in the prompt, whose generation prompt opens
// "<think>"), each <think>...</think> block, an unclosed <think> to the end,
// and stray </think> tags.
std::string WithoutThought(std::string_view s) {
  const size_t end = s.find(kThinkEnd);
  if (end != std::string_view::npos && s.substr(0, end).find(kThinkStart) == std::string_view::npos) {
    s.remove_prefix(end + kThinkEnd.size());
  }
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t start = s.find(kThinkStart, i);
    const size_t stray = s.find(kThinkEnd, i);
    if (stray < start) {
      out.append(s.substr(i, stray - i));
      i = stray + kThinkEnd.size();
      continue;
    }
    out.append(s.substr(i, start - i));
    if (start == std::string_view::npos) break;
    const size_t close = s.find(kThinkEnd, start + kThinkStart.size());
    if (close == std::string_view::npos) break;
    i = close + kThinkEnd.size();
  }
  return out;
}

bool IsTokenNameByte(char c) {
  return c != '|' && c != '<' && c != '>' && !std::isspace(static_cast<unsigned char>(c));
}

// Without "<|name|>" tokens (special tokens a detokenizer kept: names are
// short, without spaces or angle brackets). Checked as the text grows, so a
// token that removing another one would join ("<<|a|>|b|>") goes too.
std::string WithoutSpecialTokens(std::string_view s) {
  constexpr size_t kMaxName = 80;
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    out.push_back(c);
    if (c != '>' || out.size() < 5 || out[out.size() - 2] != '|') continue;
    const size_t name_end = out.size() - 2;
    size_t k = name_end;
    while (k > 0 && name_end - k < kMaxName && IsTokenNameByte(out[k - 1])) --k;
    if (k == name_end || k < 2 || out[k - 1] != '|' || out[k - 2] != '<') continue;
    out.resize(k - 2);
  }
  return out;
}

std::string Trimmed(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return std::string(s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1));
}

}  // namespace

StatusOr<TranscriptionRequest> ParseTranscriptionRequest(std::string_view content_type, std::string_view body,
                                                         const TranscriptionLimits& limits) {
  OMNI_ASSIGN_OR_RETURN(std::vector<MultipartPart> parts, ParseMultipartFormData(content_type, body));
  TranscriptionRequest r;
  FieldState state;
  MultipartPart* file = nullptr;
  for (MultipartPart& part : parts) {
    if (part.name == "file") {
      if (file != nullptr) return InvalidArgument("'file' is given twice: one audio per request").WithParam("file");
      file = &part;
      continue;
    }
    if (part.is_file()) {
      return InvalidArgument(fmt::format("'{}' is a file; only 'file' is", ShownValue(part.name))).WithParam(part.name);
    }
    OMNI_RETURN_IF_ERROR(SetField(part.name, part.data, limits, &state, &r));
  }
  if (file == nullptr) return InvalidArgument("'file' is required: the audio, as a file part").WithParam("file");
  if (file->data.empty()) return InvalidArgument("'file' is empty").WithParam("file");
  OMNI_RETURN_IF_ERROR(TakeAudio(std::move(*file), limits, &r));
  return r;
}

std::string TranscriptionInstruction(const TranscriptionRequest& r) {
  std::string text =
      "Transcribe this audio verbatim. Write only the words that are spoken, in the language they are spoken in, "
      "with punctuation. Do not translate, summarize, answer or comment, and add no timestamps or labels. If "
      "nothing is spoken, write nothing.";
  if (!r.language.empty()) {
    std::string name(KnownLanguage(r.language));
    for (size_t i = 0; i < name.size(); ++i) {
      if (i == 0 || name[i - 1] == ' ') name[i] = static_cast<char>(name[i] - 'a' + 'A');
    }
    text += name.empty() ? " The speech is in the language with the ISO 639 code \"" + r.language + "\"."
                         : " The speech is in " + name + ".";
  }
  if (!r.prompt.empty()) {
    text += "\n\nThe text that comes just before this audio, for context and spelling (it is not part of the audio; "
            "do not repeat it):\n" + r.prompt;
  }
  return text;
}

int64_t TranscriptionMaxTokens(double seconds) {
  return 64 + 16 * static_cast<int64_t>(std::ceil(std::max(seconds, 0.0)));
}

std::string TranscriptionChatBody(const TranscriptionRequest& r, std::string_view model) {
  const Json audio = {{"type", "input_audio"},
                      {"input_audio",
                       {{"data", Base64Encode(r.audio)}, {"format", media::MediaKindInfo(r.kind).extension}}}};
  const Json text = {{"type", "text"}, {"text", TranscriptionInstruction(r)}};
  Json chat = {{"messages", Json::array({{{"role", "user"}, {"content", Json::array({audio, text})}}})},
               {"chat_template_kwargs", {{"skip_reasoning", true}}},
               {"temperature", r.temperature},
               {"max_tokens", TranscriptionMaxTokens(r.seconds)},
               {"stream", false}};
  if (!model.empty()) chat["model"] = model;
  return chat.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string TranscriptFromChatContent(std::string_view content) {
  return Trimmed(WithoutSpecialTokens(WithoutThought(content)));
}

std::string WhisperLanguageName(std::string_view code) {
  if (code.empty()) return "unknown";
  const std::string_view name = KnownLanguage(code);
  return std::string(name.empty() ? code : name);
}

std::string SubtitleTimestamp(double seconds, char decimal) {
  const int64_t ms = Milliseconds(seconds);
  return fmt::format("{:02}:{:02}:{:02}{}{:03}", ms / 3'600'000, ms / 60'000 % 60, ms / 1000 % 60, decimal, ms % 1000);
}

namespace {

// The cue text: lines trimmed, empty ones dropped (a blank line ends a cue),
// "-->" as "->" (it marks a timing line); in vtt '&' and '<' escaped.
std::string CueText(std::string_view transcript, bool vtt) {
  std::string out;
  size_t pos = 0;
  while (pos <= transcript.size()) {
    size_t nl = transcript.find_first_of("\r\n", pos);
    if (nl == std::string_view::npos) nl = transcript.size();
    std::string_view line = transcript.substr(pos, nl - pos);
    pos = nl + 1;
    const size_t a = line.find_first_not_of(" \t\f\v");
    if (a == std::string_view::npos) continue;
    line = line.substr(a, line.find_last_not_of(" \t\f\v") - a + 1);
    std::string text(line);
    for (size_t at; (at = text.find("-->")) != std::string::npos;) text.replace(at, 3, "->");
    if (!out.empty()) out += '\n';
    for (char c : text) {
      if (vtt && c == '&') {
        out += "&amp;";
      } else if (vtt && c == '<') {
        out += "&lt;";
      } else {
        out += c;
      }
    }
  }
  return out;
}

Json DurationUsage(double seconds) { return {{"type", "duration"}, {"seconds", (Milliseconds(seconds) + 999) / 1000}}; }

}  // namespace

std::string TranscriptionAnswerBody(TranscriptionFormat format, std::string_view transcript, double seconds,
                                    std::string_view language) {
  const double duration = static_cast<double>(Milliseconds(seconds)) / 1000;
  switch (format) {
    case TranscriptionFormat::kJson:
      return Json{{"text", transcript}, {"usage", DurationUsage(seconds)}}.dump(-1, ' ', false,
                                                                                Json::error_handler_t::replace);
    case TranscriptionFormat::kVerboseJson: {
      // One segment spans the clip: the model gives no timings, tokens or
      // probabilities; those fields are there (typed clients require them)
      // with neutral values.
      const Json segment = {{"id", 0},           {"seek", 0},           {"start", 0.0},
                            {"end", duration},   {"text", transcript},  {"tokens", Json::array()},
                            {"temperature", 0.0}, {"avg_logprob", 0.0}, {"compression_ratio", 0.0},
                            {"no_speech_prob", 0.0}};
      const Json answer = {{"task", "transcribe"},
                           {"language", WhisperLanguageName(language)},
                           {"duration", duration},
                           {"text", transcript},
                           {"segments", transcript.empty() ? Json::array() : Json::array({segment})},
                           {"usage", DurationUsage(seconds)}};
      return answer.dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    case TranscriptionFormat::kText:
      return transcript.empty() ? std::string() : std::string(transcript) + "\n";
    case TranscriptionFormat::kSrt: {
      const std::string text = CueText(transcript, false);
      if (text.empty()) return {};
      return "1\n" + SubtitleTimestamp(0, ',') + " --> " + SubtitleTimestamp(duration, ',') + "\n" + text + "\n\n";
    }
    case TranscriptionFormat::kVtt: {
      const std::string text = CueText(transcript, true);
      if (text.empty()) return "WEBVTT\n\n";
      return "WEBVTT\n\n" + SubtitleTimestamp(0, '.') + " --> " + SubtitleTimestamp(duration, '.') + "\n" + text +
             "\n\n";
    }
  }
  return {};
}

std::string_view TranscriptionContentType(TranscriptionFormat format) {
  switch (format) {
    case TranscriptionFormat::kJson:
    case TranscriptionFormat::kVerboseJson:
      return "application/json";
    case TranscriptionFormat::kVtt:
      return "text/vtt; charset=utf-8";
    default:
      return "text/plain; charset=utf-8";
  }
}

namespace {

class TranscriptionAnswerWriter final : public ResponseWriter {
 public:
  TranscriptionAnswerWriter(std::shared_ptr<ResponseWriter> client, TranscriptionFormat format, double seconds,
                            std::string language)
      : client_(std::move(client)), format_(format), seconds_(seconds), language_(std::move(language)) {}

  bool Send(HttpResponse response) override {
    if (response.status != 200) return client_->Send(std::move(response));
    const Json chat = Json::parse(response.body, nullptr, false);
    const Json* message = nullptr;
    if (chat.is_object() && chat.contains("choices") && chat["choices"].is_array() && !chat["choices"].empty() &&
        chat["choices"][0].is_object() && chat["choices"][0].contains("message") &&
        chat["choices"][0]["message"].is_object()) {
      message = &chat["choices"][0]["message"];
    }
    if (message == nullptr) {
      return client_->Send(ErrorResponse(Internal("the chat answer to a transcription had no message")));
    }
    const auto content = message->find("content");
    const std::string transcript =
        TranscriptFromChatContent(content != message->end() && content->is_string() ? content->get<std::string>() : "");
    HttpResponse answer;
    answer.body = TranscriptionAnswerBody(format_, transcript, seconds_, language_);
    answer.headers.Set("content-type", TranscriptionContentType(format_));
    return client_->Send(std::move(answer));
  }
  // The chat body asks for no stream; anything streamed passes as it is.
  bool StartStream(int status, HttpHeaders headers) override {
    return client_->StartStream(status, std::move(headers));
  }
  bool Write(std::string_view chunk) override { return client_->Write(chunk); }
  bool WriteNoWait(std::string_view chunk) override { return client_->WriteNoWait(chunk); }
  bool Finish() override { return client_->Finish(); }
  bool client_gone() const override { return client_->client_gone(); }
  void OnClientGone(std::function<void()> cb) override { client_->OnClientGone(std::move(cb)); }
  const std::string& request_id() const override { return client_->request_id(); }

 private:
  std::shared_ptr<ResponseWriter> client_;
  const TranscriptionFormat format_;
  const double seconds_;
  const std::string language_;
};

}  // namespace

std::shared_ptr<ResponseWriter> MakeTranscriptionAnswerWriter(std::shared_ptr<ResponseWriter> client,
                                                              TranscriptionFormat format, double seconds,
                                                              std::string language) {
  return std::make_shared<TranscriptionAnswerWriter>(std::move(client), format, seconds, std::move(language));
}

}  // namespace omni::orchestrator
