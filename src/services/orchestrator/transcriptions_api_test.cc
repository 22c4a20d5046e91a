// The Transcriptions API's translation (transcriptions_api.h): the form
// parsed and checked (a WAV made here, the audio fixtures of
// tests/data/media/audio), the chat body it becomes (read back by the chat
// parser), the transcript cleaned out of a chat answer and every answer
// format, byte for byte, through the writer in front of a fake client.
#include "services/orchestrator/transcriptions_api.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <numbers>
#include <sstream>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/openai/openai_parse.h"
#include "core/base64.h"
#include "media/audio.h"

namespace omni::orchestrator {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kBoundary = "XyZzY";
const std::string kContentType = "multipart/form-data; boundary=XyZzY";

// Mono 16-bit PCM at 16 kHz: `seconds` of a 440 Hz tone.
std::string ToneWav(double seconds) {
  const uint32_t n = static_cast<uint32_t>(seconds * 16000);
  std::string w = "RIFF";
  auto put = [&w](uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) w.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  put(36 + 2 * n, 4);
  w += "WAVEfmt ";
  put(16, 4), put(1, 2), put(1, 2), put(16000, 4), put(32000, 4), put(2, 2), put(16, 2);
  w += "data";
  put(2 * n, 4);
  for (uint32_t i = 0; i < n; ++i) {
    put(static_cast<uint16_t>(static_cast<int16_t>(8000 * std::sin(2 * std::numbers::pi * 440 * i / 16000.0))), 2);
  }
  return w;
}

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(OMNI_MEDIA_TESTDATA) + "/audio/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

struct Field {
  std::string name;
  std::string value;
  std::string filename;  // non-empty: a file part
};

std::string Form(const std::vector<Field>& fields) {
  std::string body;
  for (const Field& f : fields) {
    body += "--" + std::string(kBoundary) + "\r\nContent-Disposition: form-data; name=\"" + f.name + "\"";
    if (!f.filename.empty()) body += "; filename=\"" + f.filename + "\"\r\nContent-Type: application/octet-stream";
    body += "\r\n\r\n" + f.value + "\r\n";
  }
  return body + "--" + std::string(kBoundary) + "--\r\n";
}

StatusOr<TranscriptionRequest> Parse(std::vector<Field> fields, const TranscriptionLimits& limits = {}) {
  return ParseTranscriptionRequest(kContentType, Form(fields), limits);
}

Field WavFile(double seconds = 1.0) { return {"file", ToneWav(seconds), "clip.wav"}; }

TEST(ParseTranscriptionRequest, TakesTheFileAlone) {
  const std::string wav = ToneWav(1.0);
  auto r = Parse({{"file", wav, "clip.wav"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->audio, wav);
  EXPECT_EQ(r->filename, "clip.wav");
  EXPECT_EQ(r->kind, media::MediaKind::kWav);
  EXPECT_EQ(r->file_kind, media::MediaKind::kWav);
  EXPECT_EQ(r->mime, "audio/wav");
  EXPECT_NEAR(r->seconds, 1.0, 1e-6);
  EXPECT_EQ(r->model, "");
  EXPECT_EQ(r->language, "");
  EXPECT_EQ(r->format, TranscriptionFormat::kJson);
  EXPECT_EQ(r->temperature, 0);
}

TEST(ParseTranscriptionRequest, TakesEveryField) {
  auto r = Parse({{"model", "omni-demo"},
                  {"language", "ko"},
                  {"prompt", "HyperCLOVA, omniserve"},
                  {"response_format", "verbose_json"},
                  {"temperature", "0.25"},
                  {"timestamp_granularities[]", "segment"},
                  {"stream", "false"},
                  {"chunking_strategy[type]", "server_vad"},
                  {"chunking_strategy[threshold]", "0.5"},
                  WavFile()});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model, "omni-demo");
  EXPECT_EQ(r->language, "ko");
  EXPECT_EQ(r->prompt, "HyperCLOVA, omniserve");
  EXPECT_EQ(r->format, TranscriptionFormat::kVerboseJson);
  EXPECT_DOUBLE_EQ(r->temperature, 0.25);
  for (const char* strategy : {"auto", R"({"type":"server_vad","silence_duration_ms":500})"}) {
    EXPECT_TRUE(Parse({{"chunking_strategy", strategy}, WavFile()}).ok()) << strategy;
  }
  for (const char* format : {"json", "text", "srt", "vtt"}) {
    EXPECT_TRUE(Parse({{"response_format", format}, WavFile()}).ok()) << format;
  }
}

TEST(ParseTranscriptionRequest, RefusesBadFieldsNamingThem) {
  struct Case {
    Field field;
    std::string param;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"language", "EN"}, "language", "lowercase"},
      {{"language", "english"}, "language", "ISO-639-1"},
      {{"response_format", "xml"}, "response_format", "verbose_json"},
      {{"temperature", "1.5"}, "temperature", "[0, 1]"},
      {{"temperature", "warm"}, "temperature", "a number"},
      {{"timestamp_granularities[]", "word"}, "timestamp_granularities[]", "word timestamps are not supported"},
      {{"timestamp_granularities[]", "line"}, "timestamp_granularities[]", "\"segment\""},
      {{"stream", "true"}, "stream", "not supported yet"},
      {{"stream", "maybe"}, "stream", "true or false"},
      {{"include[]", "logprobs"}, "include[]", "logprobs is not supported"},
      {{"include[]", "words"}, "include[]", "not a value of include[]"},
      {{"chunking_strategy", "manual"}, "chunking_strategy", "server_vad"},
      {{"chunking_strategy", R"({"type":"semantic"})"}, "chunking_strategy.type", "server_vad"},
      {{"chunking_strategy[size]", "5"}, "chunking_strategy[size]", "not a server_vad setting"},
      {{"chunking_strategy[threshold]", "2"}, "chunking_strategy[threshold]", "[0, 1]"},
      {{"langauge", "en"}, "langauge", "not a field of this request"},
      {{"prompt", std::string(5000, 'a')}, "prompt", "at most 4096 bytes"},
      {{"model", "\xff\xfe"}, "model", "UTF-8"},
      {{"image", "png", "a.png"}, "image", "only 'file' is"},
  };
  for (const Case& c : cases) {
    auto r = Parse({c.field, WavFile()});
    ASSERT_FALSE(r.ok()) << c.field.name << "=" << c.field.value;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.field.name;
    EXPECT_EQ(r.status().param(), c.param) << r.status().message();
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
  }
}

TEST(ParseTranscriptionRequest, RefusesAFieldGivenTwiceButTakesRepeatedArrays) {
  auto twice = Parse({{"model", "a"}, {"model", "b"}, WavFile()});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().param(), "model");
  auto files = Parse({WavFile(), WavFile()});
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().param(), "file");
  EXPECT_TRUE(
      Parse({{"timestamp_granularities[]", "segment"}, {"timestamp_granularities[]", "segment"}, WavFile()}).ok());
}

TEST(ParseTranscriptionRequest, TheFileIsRequiredAndMustBeAudio) {
  struct Case {
    std::vector<Field> fields;
    TranscriptionLimits limits;
    StatusCode code;
  };
  std::string truncated = ToneWav(1.0);
  truncated.resize(40);
  const std::vector<Case> cases = {
      {{{"model", "m"}}, {}, StatusCode::kInvalidArgument},                         // no file
      {{{"file", "", "empty.wav"}}, {}, StatusCode::kInvalidArgument},              // empty
      {{{"file", truncated, "cut.wav"}}, {}, StatusCode::kInvalidArgument},         // truncated
      {{{"file", std::string("RIFF\x14\0\0\0WAVEjunk\x08\0\0\0junkjunk", 28), "bad.wav"}},
       {},
       StatusCode::kInvalidArgument},  // no fmt chunk
      {{{"file", "just some text, not audio", "a.txt"}}, {}, StatusCode::kUnsupportedMedia},
      {{{"file", Fixture("video_silent.mp4"), "v.mp4"}}, {}, StatusCode::kUnsupportedMedia},  // no soundtrack
      {{WavFile(2.0)}, {.max_seconds = 1.5}, StatusCode::kPayloadTooLarge},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    auto r = Parse(cases[i].fields, cases[i].limits);
    ASSERT_FALSE(r.ok()) << i;
    EXPECT_EQ(r.status().code(), cases[i].code) << i << ": " << r.status().ToString();
    EXPECT_EQ(r.status().param(), "file") << i;
    EXPECT_FALSE(r.status().message().empty());
  }
}

TEST(ParseTranscriptionRequest, RefusesABodyThatIsNotAForm) {
  auto r = ParseTranscriptionRequest("application/json", R"({"file":"x"})", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ParseTranscriptionRequest, KeepsAudioFilesAndTakesAVideosSoundtrackAsWav) {
  const std::string mp3 = Fixture("stereo_44k.mp3");
  auto r = Parse({{"file", mp3, "a.mp3"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->audio, mp3);
  EXPECT_EQ(r->kind, media::MediaKind::kMp3);
  EXPECT_EQ(r->mime, "audio/mpeg");
  for (const char* video : {"stereo_48k_opus.webm", "video_aac.mp4"}) {
    auto v = Parse({{"file", Fixture(video), video}});
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_NE(v->file_kind, media::MediaKind::kWav) << video;
    EXPECT_EQ(v->kind, media::MediaKind::kWav) << video;
    EXPECT_EQ(v->mime, "audio/wav");
    ASSERT_TRUE(v->audio.starts_with("RIFF")) << video;
    // The WAV is the soundtrack at 16 kHz: it decodes back to the same length.
    auto back = media::DecodeAudio(v->audio);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_NEAR(back->seconds(), v->seconds, 0.01) << video;
  }
}

TEST(TranscriptionInstruction, IsTheDocumentedText) {
  const std::string base =
      "Transcribe this audio verbatim. Write only the words that are spoken, in the language they are spoken in, "
      "with punctuation. Do not translate, summarize, answer or comment, and add no timestamps or labels. If "
      "nothing is spoken, write nothing.";
  TranscriptionRequest r;
  EXPECT_EQ(TranscriptionInstruction(r), base);
  r.language = "ko";
  EXPECT_EQ(TranscriptionInstruction(r), base + " The speech is in Korean.");
  r.language = "ht";
  EXPECT_EQ(TranscriptionInstruction(r), base + " The speech is in Haitian Creole.");
  r.language = "qq";
  EXPECT_EQ(TranscriptionInstruction(r), base + " The speech is in the language with the ISO 639 code \"qq\".");
  r.language = "";
  r.prompt = "Omni, CLOVA";
  EXPECT_EQ(TranscriptionInstruction(r),
            base + "\n\nThe text that comes just before this audio, for context and spelling (it is not part of the "
                   "audio; do not repeat it):\nOmni, CLOVA");
}

TEST(TranscriptionChatBody, IsAChatRequestThatHearsTheAudio) {
  auto r = Parse({{"language", "en"}, {"temperature", "0.5"}, WavFile()});
  ASSERT_TRUE(r.ok());
  const std::string body = TranscriptionChatBody(*r, "omni-demo");
  const Json chat = Json::parse(body);
  EXPECT_EQ(chat["model"], "omni-demo");
  EXPECT_EQ(chat["stream"], false);
  EXPECT_EQ(chat["temperature"], 0.5);
  EXPECT_EQ(chat["chat_template_kwargs"], Json({{"skip_reasoning", true}}));
  // The WAV's whole seconds, rounded up, bound the transcript: 64 + 16 per second.
  EXPECT_EQ(chat["max_tokens"], TranscriptionMaxTokens(r->seconds));
  EXPECT_EQ(TranscriptionMaxTokens(3.0), 64 + 48);
  EXPECT_EQ(TranscriptionMaxTokens(2.01), 64 + 48);
  ASSERT_EQ(chat["messages"].size(), 1u);
  EXPECT_EQ(chat["messages"][0]["role"], "user");
  const Json& content = chat["messages"][0]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0], Json({{"type", "input_audio"},
                              {"input_audio", {{"data", Base64Encode(r->audio)}, {"format", "wav"}}}}));
  EXPECT_EQ(content[1], Json({{"type", "text"}, {"text", TranscriptionInstruction(*r)}}));

  // The orchestrator's own chat parser takes it: one audio part, as a data: URL.
  auto parsed = openai::ParseChatRequest(body, openai::MediaForm::kRawMedia);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->media.size(), 1u);
  EXPECT_EQ(parsed->media[0].kind, ContentKind::kAudio);
  EXPECT_EQ(parsed->media[0].url, "data:audio/wav;base64," + Base64Encode(r->audio));
  EXPECT_TRUE(parsed->skip_reasoning);
  EXPECT_FALSE(parsed->options.stream);
  EXPECT_FLOAT_EQ(parsed->options.sampling.temperature, 0.5f);

  EXPECT_FALSE(Json::parse(TranscriptionChatBody(*r, "")).contains("model"));
  r->kind = media::MediaKind::kMp3;
  EXPECT_EQ(Json::parse(TranscriptionChatBody(*r, ""))["messages"][0]["content"][0]["input_audio"]["format"], "mp3");
}

TEST(TranscriptFromChatContent, DropsThoughtAndSpecialTokens) {
  EXPECT_EQ(TranscriptFromChatContent("  Hello there.\n"), "Hello there.");
  EXPECT_EQ(TranscriptFromChatContent("<think>\nlet me listen\n</think>\n\nHello."), "Hello.");
  EXPECT_EQ(TranscriptFromChatContent("I heard it.\n</think>\n\nHello."), "Hello.");
  EXPECT_EQ(TranscriptFromChatContent("Hello <think>hm</think>world"), "Hello world");
  EXPECT_EQ(TranscriptFromChatContent("Hello.<think>and then"), "Hello.");
  EXPECT_EQ(TranscriptFromChatContent("Hello.<|im_end|><|endoftext|>"), "Hello.");
  EXPECT_EQ(TranscriptFromChatContent("a<|audio12|>b<|vision_ratio_1:1|>c"), "abc");
  EXPECT_EQ(TranscriptFromChatContent("x <| y |> z <||> w <|"), "x <| y |> z <||> w <|");
  EXPECT_EQ(TranscriptFromChatContent("a<<|x|>|y|>b"), "ab");  // one removal joins another token
  EXPECT_EQ(TranscriptFromChatContent("a<think>b</think>c</think>d"), "acd");
  EXPECT_EQ(TranscriptFromChatContent("<think>only thought</think>"), "");
  EXPECT_EQ(TranscriptFromChatContent(""), "");
}

TEST(SubtitleTimestamp, FormatsHoursMinutesSecondsAndMilliseconds) {
  EXPECT_EQ(SubtitleTimestamp(0, ','), "00:00:00,000");
  EXPECT_EQ(SubtitleTimestamp(3, ','), "00:00:03,000");
  EXPECT_EQ(SubtitleTimestamp(3.2345, '.'), "00:00:03.235");  // rounded to the millisecond
  EXPECT_EQ(SubtitleTimestamp(59.9996, ','), "00:01:00,000");
  EXPECT_EQ(SubtitleTimestamp(3661.5, ','), "01:01:01,500");
  EXPECT_EQ(SubtitleTimestamp(36000 * 10 + 0.001, '.'), "100:00:00.001");
  EXPECT_EQ(SubtitleTimestamp(-1, ','), "00:00:00,000");
  EXPECT_EQ(SubtitleTimestamp(std::nan(""), ','), "00:00:00,000");
}

TEST(WhisperLanguageName, NamesKnownCodes) {
  EXPECT_EQ(WhisperLanguageName("ko"), "korean");
  EXPECT_EQ(WhisperLanguageName("yue"), "cantonese");
  EXPECT_EQ(WhisperLanguageName("qq"), "qq");
  EXPECT_EQ(WhisperLanguageName(""), "unknown");
}

TEST(TranscriptionAnswerBody, EveryFormatExactly) {
  using F = TranscriptionFormat;
  EXPECT_EQ(TranscriptionAnswerBody(F::kJson, "Hello.", 2.2, ""),
            R"({"text":"Hello.","usage":{"seconds":3,"type":"duration"}})");
  EXPECT_EQ(TranscriptionAnswerBody(F::kText, "Hello.", 2.2, ""), "Hello.\n");
  EXPECT_EQ(TranscriptionAnswerBody(F::kSrt, "Hello.", 3, ""), "1\n00:00:00,000 --> 00:00:03,000\nHello.\n\n");
  EXPECT_EQ(TranscriptionAnswerBody(F::kVtt, "Hello.", 3, ""),
            "WEBVTT\n\n00:00:00.000 --> 00:00:03.000\nHello.\n\n");
  EXPECT_EQ(Json::parse(TranscriptionAnswerBody(F::kVerboseJson, "Hello.", 2.2, "en")),
            Json::parse(R"({"task":"transcribe","language":"english","duration":2.2,"text":"Hello.",
              "segments":[{"id":0,"seek":0,"start":0.0,"end":2.2,"text":"Hello.","tokens":[],"temperature":0.0,
                           "avg_logprob":0.0,"compression_ratio":0.0,"no_speech_prob":0.0}],
              "usage":{"type":"duration","seconds":3}})"));
}

TEST(TranscriptionAnswerBody, LongClipsHaveHours) {
  EXPECT_EQ(TranscriptionAnswerBody(TranscriptionFormat::kSrt, "Long.", 3725.25, ""),
            "1\n00:00:00,000 --> 01:02:05,250\nLong.\n\n");
  EXPECT_EQ(TranscriptionAnswerBody(TranscriptionFormat::kVtt, "Long.", 3725.25, ""),
            "WEBVTT\n\n00:00:00.000 --> 01:02:05.250\nLong.\n\n");
  EXPECT_EQ(Json::parse(TranscriptionAnswerBody(TranscriptionFormat::kJson, "x", 3600, ""))["usage"]["seconds"], 3600);
}

TEST(TranscriptionAnswerBody, CueTextIsSafe) {
  const std::string text = "First line.  \r\n\r\n\n  Second --> line & <b>bold</b>\n \t \nEnd.";
  EXPECT_EQ(TranscriptionAnswerBody(TranscriptionFormat::kSrt, text, 1, ""),
            "1\n00:00:00,000 --> 00:00:01,000\nFirst line.\nSecond -> line & <b>bold</b>\nEnd.\n\n");
  EXPECT_EQ(TranscriptionAnswerBody(TranscriptionFormat::kVtt, text, 1, ""),
            "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nFirst line.\nSecond -> line &amp; &lt;b>bold&lt;/b>\nEnd.\n\n");
  // The plain formats keep the text as it is.
  EXPECT_EQ(TranscriptionAnswerBody(TranscriptionFormat::kText, "a\n\nb", 1, ""), "a\n\nb\n");
}

TEST(TranscriptionAnswerBody, AnEmptyTranscriptHasNoCue) {
  using F = TranscriptionFormat;
  EXPECT_EQ(TranscriptionAnswerBody(F::kSrt, "", 3, ""), "");
  EXPECT_EQ(TranscriptionAnswerBody(F::kVtt, "", 3, ""), "WEBVTT\n\n");
  EXPECT_EQ(TranscriptionAnswerBody(F::kText, "", 3, ""), "");
  EXPECT_EQ(Json::parse(TranscriptionAnswerBody(F::kVerboseJson, "", 3, ""))["segments"], Json::array());
  EXPECT_EQ(Json::parse(TranscriptionAnswerBody(F::kJson, "", 3, ""))["text"], "");
}

class FakeClient final : public ResponseWriter {
 public:
  bool Send(HttpResponse response) override {
    sent.push_back(std::move(response));
    return true;
  }
  bool StartStream(int status, HttpHeaders) override {
    stream_status = status;
    return true;
  }
  bool Write(std::string_view chunk) override {
    streamed += chunk;
    return true;
  }
  bool WriteNoWait(std::string_view chunk) override { return Write(chunk); }
  bool Finish() override { return finished = true; }
  bool client_gone() const override { return false; }
  void OnClientGone(std::function<void()>) override {}
  const std::string& request_id() const override { return id; }

  std::vector<HttpResponse> sent;
  int stream_status = 0;
  std::string streamed;
  bool finished = false;
  std::string id = "req-1";
};

std::string ChatAnswer(const Json& content) {
  return Json({{"id", "chatcmpl-1"},
               {"object", "chat.completion"},
               {"choices", Json::array({{{"index", 0},
                                         {"message", {{"role", "assistant"}, {"content", content}}},
                                         {"finish_reason", "stop"}}})},
               {"usage", {{"prompt_tokens", 40}, {"completion_tokens", 3}, {"total_tokens", 43}}}})
      .dump();
}

HttpResponse Through(TranscriptionFormat format, HttpResponse chat, double seconds = 3, std::string language = "") {
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeTranscriptionAnswerWriter(client, format, seconds, std::move(language));
  EXPECT_EQ(writer->request_id(), "req-1");
  EXPECT_TRUE(writer->Send(std::move(chat)));
  EXPECT_EQ(client->sent.size(), 1u);
  return client->sent.empty() ? HttpResponse{} : client->sent[0];
}

TEST(TranscriptionAnswerWriter, RewritesAChatAnswerInEachFormat) {
  const HttpResponse chat = JsonResponse(200, ChatAnswer("<think>\n\n</think>\n\nHello world.<|im_end|>"));
  HttpResponse json = Through(TranscriptionFormat::kJson, chat);
  EXPECT_EQ(json.status, 200);
  EXPECT_EQ(json.headers.GetOr("content-type", ""), "application/json");
  EXPECT_EQ(json.body, R"({"text":"Hello world.","usage":{"seconds":3,"type":"duration"}})");
  HttpResponse text = Through(TranscriptionFormat::kText, chat);
  EXPECT_EQ(text.headers.GetOr("content-type", ""), "text/plain; charset=utf-8");
  EXPECT_EQ(text.body, "Hello world.\n");
  HttpResponse srt = Through(TranscriptionFormat::kSrt, chat, 7261.004);
  EXPECT_EQ(srt.headers.GetOr("content-type", ""), "text/plain; charset=utf-8");
  EXPECT_EQ(srt.body, "1\n00:00:00,000 --> 02:01:01,004\nHello world.\n\n");
  HttpResponse vtt = Through(TranscriptionFormat::kVtt, chat);
  EXPECT_EQ(vtt.headers.GetOr("content-type", ""), "text/vtt; charset=utf-8");
  EXPECT_EQ(vtt.body, "WEBVTT\n\n00:00:00.000 --> 00:00:03.000\nHello world.\n\n");
  HttpResponse verbose = Through(TranscriptionFormat::kVerboseJson, chat, 3, "ko");
  const Json v = Json::parse(verbose.body);
  EXPECT_EQ(v["language"], "korean");
  EXPECT_EQ(v["text"], "Hello world.");
  EXPECT_EQ(v["segments"][0]["end"], 3.0);
}

TEST(TranscriptionAnswerWriter, ANullContentIsAnEmptyTranscript) {
  HttpResponse r = Through(TranscriptionFormat::kJson, JsonResponse(200, ChatAnswer(nullptr)));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Json::parse(r.body)["text"], "");
}

TEST(TranscriptionAnswerWriter, ErrorsPassThroughAndAnAnswerWithoutAChoiceIs500) {
  HttpResponse error = ErrorResponse(Unavailable("no replica").WithErrorCode("gateway_unavailable"));
  const std::string body = error.body;
  HttpResponse passed = Through(TranscriptionFormat::kSrt, std::move(error));
  EXPECT_EQ(passed.status, 503);
  EXPECT_EQ(passed.body, body);
  for (const char* bad : {"not json", R"({"choices":[]})", R"({"choices":[{"message":7}]})", "[1]"}) {
    HttpResponse r = Through(TranscriptionFormat::kJson, JsonResponse(200, bad));
    EXPECT_EQ(r.status, 500) << bad;
    EXPECT_TRUE(Json::parse(r.body).contains("error")) << bad;
  }
}

TEST(TranscriptionAnswerWriter, StreamsPassThrough) {
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeTranscriptionAnswerWriter(client, TranscriptionFormat::kJson, 1, "");
  EXPECT_TRUE(writer->StartStream(502, {}));
  EXPECT_TRUE(writer->Write("a"));
  EXPECT_TRUE(writer->WriteNoWait("b"));
  EXPECT_TRUE(writer->Finish());
  EXPECT_EQ(client->stream_status, 502);
  EXPECT_EQ(client->streamed, "ab");
  EXPECT_TRUE(client->finished);
}

}  // namespace
}  // namespace omni::orchestrator
