#include "services/orchestrator/speech_api.h"

#include <gtest/gtest.h>

#include "core/base64.h"
#include "media/audio.h"
#include "net/sse.h"
#include "services/orchestrator/image_answer_test_util.h"

namespace omni::orchestrator {
namespace {

using image_test::FakeClient;
using Json = nlohmann::json;

TEST(SpeechApiTest, ParsesOpenAisFieldsAndRefusesTheRest) {
  auto r = ParseSpeechApiRequest(R"({"model": "m", "input": "Hello", "voice": "alloy", "response_format": "pcm",
                                    "speed": 1, "stream_format": "sse", "instructions": "Warmly."})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->response_format, "pcm16");
  EXPECT_TRUE(r->sse);
  EXPECT_EQ(r->instructions, "Warmly.");
  auto defaults = ParseSpeechApiRequest(R"({"input": "Hi", "voice": "echo"})");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->response_format, "mp3");
  EXPECT_FALSE(defaults->sse);
  const std::pair<const char*, const char*> bad[] = {
      {R"({"voice": "alloy"})", "input"},
      {R"({"input": "", "voice": "alloy"})", "input"},
      {R"({"input": "x"})", "voice"},
      {R"({"input": "x", "voice": "alloy", "response_format": "ogg"})", "response_format"},
      {R"({"input": "x", "voice": "alloy", "speed": 9})", "speed"},
      {R"({"input": "x", "voice": "alloy", "speed": 1.5})", "speed"},
      {R"({"input": "x", "voice": "alloy", "stream_format": "chunks"})", "stream_format"},
      {R"({"input": "x", "voice": "alloy", "pitch": 2})", "pitch"},
  };
  for (const auto& [body, param] : bad) {
    auto e = ParseSpeechApiRequest(body);
    ASSERT_FALSE(e.ok()) << body;
    EXPECT_EQ(e.status().param(), param) << body;
  }
  EXPECT_FALSE(ParseSpeechApiRequest("{not json").ok());
  EXPECT_FALSE(ParseSpeechApiRequest(R"({"input": ")" + std::string(4097, 'a') + R"(", "voice": "a"})").ok());
}

TEST(SpeechApiTest, TheChatBodyAsksForStreamedPcm16Speech) {
  SpeechApiRequest r{.model = "", .input = "Good morning.", .voice = "nova"};
  const Json j = Json::parse(SpeechApiChatBody(r, "omni"));
  EXPECT_EQ(j["model"], "omni");
  EXPECT_EQ(j["modalities"], Json::array({"text", "audio"}));
  EXPECT_EQ(j["audio"]["format"], "pcm16");
  EXPECT_EQ(j["audio"]["voice"], "nova");
  EXPECT_TRUE(j["stream"].get<bool>());
  EXPECT_EQ(j["messages"].back()["content"], SpeechInstruction("Good morning."));
  EXPECT_GE(j["max_tokens"].get<int>(), 64);
}

std::string AudioChunk(const std::string& pcm) {
  return EncodeSseEvent(
      Json{{"choices", Json::array({Json{{"index", 0}, {"delta", {{"audio", {{"id", "a"}, {"data", Base64Encode(pcm)}}}}}}})}}
          .dump());
}

std::string Pcm(int n, int start) {
  std::string pcm;
  for (int i = 0; i < n; ++i) {
    const int16_t v = static_cast<int16_t>((start + i) * 7);
    pcm.append(reinterpret_cast<const char*>(&v), 2);
  }
  return pcm;
}

void FeedChat(ResponseWriter& w, const std::vector<std::string>& pcm_chunks) {
  HttpHeaders h;
  h.Set("content-type", "text/event-stream");
  w.StartStream(200, h);
  w.Write(EncodeSseEvent(R"({"choices":[{"index":0,"delta":{"audio":{"id":"a","transcript":"Hi"}}}]})"));
  for (const std::string& c : pcm_chunks) w.Write(AudioChunk(c));
  w.Write(EncodeSseEvent(R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":30}})"));
  w.Write(EncodeSseEvent("[DONE]"));
  w.Finish();
}

TEST(SpeechApiTest, TheAudioStreamIsTheChunksEncodedAsTheyCome) {
  auto client = std::make_shared<FakeClient>();
  auto w = MakeSpeechApiWriter(client, SpeechApiRequest{.input = "x", .voice = "a", .response_format = "wav"});
  const std::vector<std::string> chunks = {Pcm(2400, 0), Pcm(4800, 2400), Pcm(960, 7200)};
  FeedChat(*w, chunks);
  EXPECT_EQ(client->stream_status(), 200);
  EXPECT_EQ(client->stream_headers().GetOr("content-type", ""), "audio/wav");
  EXPECT_EQ(client->finishes(), 1);
  EXPECT_GE(client->writes().size(), 3u);  // streamed, not one body
  auto audio = media::DecodeAudio(client->streamed(), {.sample_rate = 24000});
  ASSERT_TRUE(audio.ok()) << audio.status().ToString();
  ASSERT_EQ(audio->samples.size(), 8160u);
  for (size_t i = 0; i < audio->samples.size(); ++i) {
    ASSERT_NEAR(audio->samples[i], static_cast<int16_t>(i * 7) / 32768.f, 1e-6) << i;
  }
}

TEST(SpeechApiTest, SseEventsCarryTheEncodedBytesThenUsage) {
  auto client = std::make_shared<FakeClient>();
  auto w = MakeSpeechApiWriter(client, SpeechApiRequest{.input = "x", .voice = "a", .response_format = "pcm16", .sse = true});
  FeedChat(*w, {Pcm(100, 0), Pcm(50, 100)});
  SseParser parser;
  std::string pcm;
  Json done;
  for (SseEvent& e : parser.Feed(client->streamed())) {
    const Json j = Json::parse(e.data);
    if (j["type"] == "speech.audio.delta") pcm += *Base64Decode(j["audio"].get<std::string>());
    if (j["type"] == "speech.audio.done") done = j;
  }
  EXPECT_EQ(pcm, Pcm(150, 0));
  EXPECT_EQ(done["usage"]["input_tokens"], 12);
  EXPECT_EQ(done["usage"]["output_tokens"], 30);
  EXPECT_EQ(done["usage"]["total_tokens"], 42);
}

TEST(SpeechApiTest, AFailureBeforeAnyAudioIsAnOpenAiError) {
  auto client = std::make_shared<FakeClient>();
  auto w = MakeSpeechApiWriter(client, SpeechApiRequest{.input = "x", .voice = "a"});
  HttpHeaders h;
  h.Set("content-type", "text/event-stream");
  w->StartStream(200, h);
  w->Write(EncodeSseEvent(Internal("no speech").WithErrorCode("audio_missing").ToOpenAiJson()));
  w->Write(EncodeSseEvent("[DONE]"));
  w->Finish();
  ASSERT_TRUE(client->whole().has_value());
  EXPECT_EQ(client->whole()->status, 500);
  EXPECT_NE(client->whole()->body.find("audio_missing"), std::string::npos);
}

}  // namespace
}  // namespace omni::orchestrator
