// SpeechAnswerWriter against a fake decoder whose audio is a function of the
// units (unit u -> the four samples u, u+1, u+2, u+3), so what reaches the
// client can be checked sample for sample: whole answers and streams, chunk
// decodes finishing out of order, answers without speech.
#include "services/orchestrator/speech_answer.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "core/base64.h"
#include "net/sse.h"
#include "services/orchestrator/image_answer_test_util.h"

namespace omni::orchestrator {
namespace {

using image_test::FakeClient;
using Json = nlohmann::json;

std::string PcmOf(const std::vector<int32_t>& units, size_t first, size_t last) {
  std::string pcm;
  for (size_t i = first; i < last; ++i) {
    for (int k = 0; k < 4; ++k) {
      const int16_t v = static_cast<int16_t>(units[i] + k);
      pcm.append(reinterpret_cast<const char*>(&v), 2);
    }
  }
  return pcm;
}

class FakeSpeech {
 public:
  SpeechAnswerWriter::DecodeFn Decode() {
    return [this](SpeechJob job, std::function<void(StatusOr<SpokenAudio>)> done) {
      std::lock_guard lock(mu_);
      jobs_.push_back({std::move(job), std::move(done)});
    };
  }
  SpeechAnswerWriter::StoreFn Store() {
    return [this](std::string_view pcm) -> StatusOr<SpokenAudio> {
      std::lock_guard lock(mu_);
      stored_ = std::string(pcm);
      return SpokenAudio{.bytes = std::string(pcm), .format = "pcm16", .key = "gen/ad/x.pcm",
                         .url = "http://x/a.pcm", .expires_at = 99, .duration = 1.5};
    };
  }
  size_t count() {
    std::lock_guard lock(mu_);
    return jobs_.size();
  }
  const SpeechJob& job(size_t i) {
    std::lock_guard lock(mu_);
    return jobs_[i].first;
  }
  // Answers job i (its units' pcm, or `failure`).
  void Complete(size_t i, std::optional<Status> failure = std::nullopt) {
    std::function<void(StatusOr<SpokenAudio>)> done;
    SpeechJob job;
    {
      std::lock_guard lock(mu_);
      done = std::move(jobs_[i].second);
      job = jobs_[i].first;
    }
    if (failure) return done(*failure);
    const auto [first, last] = job.range.value_or(std::make_pair<int64_t, int64_t>(0, std::ssize(job.units)));
    done(SpokenAudio{.bytes = PcmOf(job.units, first, last), .format = job.range ? "pcm16" : job.format,
                     .key = "gen/ad/whole.wav", .url = "http://x/whole.wav", .expires_at = 42, .duration = 0.5});
  }
  std::string stored() {
    std::lock_guard lock(mu_);
    return stored_;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<SpeechJob, std::function<void(StatusOr<SpokenAudio>)>>> jobs_;
  std::string stored_;
};

std::string Units(const std::vector<int32_t>& units) {
  std::string s;
  for (int32_t u : units) s += "<|audio" + std::to_string(u) + "|>";
  return s;
}

std::string SpokenText(const std::vector<int32_t>& units) {
  return "<assistant_transcript>Hi there</assistant_transcript>\n<audio_decoder_call><speaker_info>{}</speaker_info>"
         "<discrete_audio>" + Units(units) + "</discrete_audio></audio_decoder_call>";
}

std::string WholeAnswer(const std::string& content) {
  return Json{{"id", "chatcmpl-1"},
              {"object", "chat.completion"},
              {"choices", Json::array({Json{{"index", 0},
                                            {"message", {{"role", "assistant"}, {"content", content}}},
                                            {"finish_reason", "stop"}}})}}
      .dump();
}

TEST(SpeechAnswerTest, AWholeAnswerGetsItsAudioAndLosesItsUnits) {
  auto client = std::make_shared<FakeClient>();
  FakeSpeech speech;
  auto writer = std::make_shared<SpeechAnswerWriter>(client, speech.Decode(), speech.Store(),
                                                     SpeechAnswerOptions{.speaker = {.id = "fkms"}, .format = "wav"});
  const std::vector<int32_t> units = {5, 6560, 0, 17};
  ASSERT_TRUE(writer->Send(JsonResponse(200, WholeAnswer(SpokenText(units)))));
  ASSERT_EQ(speech.count(), 1u);
  EXPECT_EQ(speech.job(0).units, units);
  EXPECT_EQ(speech.job(0).speaker.id, "fkms");
  EXPECT_EQ(speech.job(0).format, "wav");
  EXPECT_FALSE(speech.job(0).range.has_value());
  EXPECT_FALSE(client->whole().has_value());  // held until the audio is there
  speech.Complete(0);
  ASSERT_TRUE(client->whole().has_value());
  const std::string body = client->whole()->body;
  EXPECT_EQ(body.find("<|audio"), std::string::npos) << body;
  EXPECT_EQ(body.find("discrete_audio"), std::string::npos) << body;
  const Json j = Json::parse(body);
  const Json& message = j["choices"][0]["message"];
  EXPECT_TRUE(message["content"].is_null());
  EXPECT_EQ(message["audio"]["transcript"], "Hi there\n");
  EXPECT_EQ(*Base64Decode(message["audio"]["data"].get<std::string>()), PcmOf(units, 0, units.size()));
  EXPECT_EQ(message["audio"]["url"], "http://x/whole.wav");
  EXPECT_EQ(message["audio"]["expires_at"], 42);
  EXPECT_EQ(message["audio"]["id"].get<std::string>().rfind("audio_", 0), 0u);
}

TEST(SpeechAnswerTest, AnAnswerWithoutSpeechIsAnError) {
  auto client = std::make_shared<FakeClient>();
  FakeSpeech speech;
  auto writer = std::make_shared<SpeechAnswerWriter>(client, speech.Decode(), speech.Store(), SpeechAnswerOptions{});
  writer->Send(JsonResponse(200, WholeAnswer("<assistant_transcript>Hi</assistant_transcript><|audio1|><|audio2|>")));
  ASSERT_TRUE(client->whole().has_value());
  EXPECT_EQ(client->whole()->status, 500);
  EXPECT_NE(client->whole()->body.find("audio_missing"), std::string::npos);
  EXPECT_EQ(speech.count(), 0u);
}

TEST(SpeechAnswerTest, AFailedDecodeIsTheAnswersError) {
  auto client = std::make_shared<FakeClient>();
  FakeSpeech speech;
  auto writer = std::make_shared<SpeechAnswerWriter>(client, speech.Decode(), speech.Store(), SpeechAnswerOptions{});
  writer->Send(JsonResponse(200, WholeAnswer(SpokenText({1, 2, 3}))));
  speech.Complete(0, Unavailable("down").WithErrorCode("audio_decoder_unavailable"));
  ASSERT_TRUE(client->whole().has_value());
  EXPECT_EQ(client->whole()->status, 503);
  EXPECT_NE(client->whole()->body.find("audio_decoder_unavailable"), std::string::npos);
}

std::string Chunk(const Json& delta, const Json& finish = nullptr) {
  return EncodeSseEvent(Json{{"id", "chatcmpl-1"},
                             {"object", "chat.completion.chunk"},
                             {"created", 1},
                             {"model", "omni"},
                             {"choices", Json::array({Json{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}}
                            .dump());
}

// A decoder whose right context is longer than lookahead_units: once its
// answers said so, a chunk waits for that many units past it (a chunk cut
// short of its right context would end unlike the one-shot waveform).
TEST(SpeechAnswerTest, AChunkWaitsForTheDecodersRightContext) {
  auto client = std::make_shared<FakeClient>();
  FakeSpeech speech;
  int64_t right = -1;  // what the decoder's answers have said so far
  auto writer = std::make_shared<SpeechAnswerWriter>(
      client, speech.Decode(), speech.Store(),
      SpeechAnswerOptions{.format = "wav", .chunk_units = 10, .lookahead_units = 3, .right_context = [&] {
                            return right;
                          }});
  HttpHeaders headers;
  headers.Set("content-type", "text/event-stream");
  ASSERT_TRUE(writer->StartStream(200, headers));
  writer->Write(Chunk({{"role", "assistant"}, {"content", "<audio_decoder_call><discrete_audio>"}}));
  std::vector<size_t> launched;  // decoder calls after each unit
  for (int i = 0; i < 60; ++i) {
    if (i == 14) right = 8;  // the first chunk's answer came while unit 14 was generated
    writer->Write(Chunk({{"content", "<|audio" + std::to_string(i) + "|>"}}));
    launched.push_back(speech.count());
  }
  EXPECT_EQ(launched[13], 1u);  // 14 units: [0, 10) with its 3 of lookahead, before anything was learnt
  EXPECT_EQ(launched[27], 1u);  // 28 units: [10, 20) lacks 8 past it
  EXPECT_EQ(launched[28], 2u);  // 29: now it has them
  EXPECT_EQ(launched[38], 3u);  // [20, 30) at 39 units
  writer->Write(Chunk({{"content", "</discrete_audio></audio_decoder_call>"}}));
  writer->Write(Chunk(Json::object(), "stop"));
  writer->Write(EncodeSseEvent("[DONE]"));
  EXPECT_TRUE(writer->Finish());
  ASSERT_EQ(speech.count(), 6u);  // [30, 40) at 49 units, [40, 50) at 59, [50, 60) at the end
  EXPECT_EQ(speech.job(5).range, std::make_pair(int64_t{50}, int64_t{60}));
  for (size_t i = 0; i < speech.count(); ++i) speech.Complete(i);
}

// 40 units streamed one token at a time, chunks of 10 with 3 of lookahead,
// decodes answered in reverse order: the client gets the transcript as it
// comes, every chunk's pcm in unit order, the stored whole last, then the
// finish, the usage and [DONE]; never a unit or a tag.
TEST(SpeechAnswerTest, AStreamIsVocodedChunkByChunkInOrder) {
  auto client = std::make_shared<FakeClient>();
  FakeSpeech speech;
  auto writer = std::make_shared<SpeechAnswerWriter>(
      client, speech.Decode(), speech.Store(),
      SpeechAnswerOptions{.format = "mp3", .chunk_units = 10, .lookahead_units = 3});
  HttpHeaders headers;
  headers.Set("content-type", "text/event-stream");
  ASSERT_TRUE(writer->StartStream(200, headers));
  std::vector<int32_t> units;
  for (int i = 0; i < 40; ++i) units.push_back((i * 97) % 6561);
  writer->Write(Chunk({{"role", "assistant"}, {"content", ""}}));
  for (const char* piece : {"<assistant_", "transcript>Hi", " there</assistant_transcript>\n<audio_decoder_call>",
                            "<speaker_info>{}</speaker_info><discrete_audio>"}) {
    writer->Write(Chunk({{"content", piece}}));
  }
  size_t launched_at_20 = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    writer->Write(Chunk({{"content", "<|audio" + std::to_string(units[i]) + "|>"}}));
    if (i == 19) launched_at_20 = speech.count();
  }
  EXPECT_EQ(launched_at_20, 1u);  // 20 units: one chunk of 10 has its 3 of lookahead (and more)
  writer->Write(Chunk({{"content", "</discrete_audio></audio_decoder_call>"}}));
  writer->Write(Chunk(Json::object(), "stop"));
  writer->Write(EncodeSseEvent(R"({"id":"chatcmpl-1","choices":[],"usage":{"completion_tokens":50}})"));
  writer->Write(EncodeSseEvent("[DONE]"));
  EXPECT_TRUE(writer->Finish());
  EXPECT_EQ(client->finishes(), 0);  // the audio is still coming
  ASSERT_EQ(speech.count(), 4u);     // [0,10) [10,20) [20,30) while generating; [30,40) at the end
  for (size_t i = 0; i < speech.count(); ++i) {
    EXPECT_EQ(speech.job(i).format, "pcm16");
    ASSERT_TRUE(speech.job(i).range.has_value());
    EXPECT_EQ(speech.job(i).range->first, static_cast<int64_t>(10 * i));
  }
  for (size_t i = speech.count(); i-- > 0;) speech.Complete(i);
  EXPECT_EQ(client->finishes(), 1);

  const std::string all = client->streamed();
  EXPECT_EQ(all.find("<|audio"), std::string::npos);
  EXPECT_EQ(all.find("transcript>"), std::string::npos);
  EXPECT_EQ(all.find("discrete_audio"), std::string::npos);
  SseParser parser;
  std::string transcript, pcm;
  bool saw_final = false, saw_finish = false, saw_done = false;
  for (SseEvent& e : parser.Feed(all)) {
    if (e.data == "[DONE]") {
      EXPECT_TRUE(saw_finish);
      saw_done = true;
      continue;
    }
    EXPECT_FALSE(saw_done);
    const Json j = Json::parse(e.data);
    if (j["choices"].empty()) continue;  // usage
    const Json& ch = j["choices"][0];
    EXPECT_FALSE(ch["delta"].contains("content")) << e.data;
    if (!ch["finish_reason"].is_null()) {
      EXPECT_TRUE(saw_final) << "the finish came before the audio";
      saw_finish = true;
    }
    if (!ch["delta"].contains("audio")) continue;
    const Json& a = ch["delta"]["audio"];
    EXPECT_FALSE(saw_final);
    if (a.contains("transcript")) transcript += a["transcript"].get<std::string>();
    if (a.contains("data")) pcm += *Base64Decode(a["data"].get<std::string>());
    if (a.contains("url")) {
      EXPECT_EQ(a["url"], "http://x/a.pcm");
      saw_final = true;
    }
  }
  EXPECT_EQ(transcript, "Hi there\n");
  EXPECT_EQ(pcm, PcmOf(units, 0, units.size()));
  EXPECT_EQ(speech.stored(), pcm);  // the stored whole is the chunks joined
  EXPECT_TRUE(saw_final && saw_finish && saw_done);
}

TEST(SpeechAnswerTest, AStreamWhoseChunkFailsEndsWithTheError) {
  auto client = std::make_shared<FakeClient>();
  FakeSpeech speech;
  auto writer = std::make_shared<SpeechAnswerWriter>(client, speech.Decode(), speech.Store(),
                                                     SpeechAnswerOptions{.chunk_units = 3, .lookahead_units = 0});
  HttpHeaders headers;
  headers.Set("content-type", "text/event-stream");
  writer->StartStream(200, headers);
  writer->Write(Chunk({{"content", SpokenText({1, 2, 3, 4, 5, 6, 7})}}));
  ASSERT_GE(speech.count(), 1u);
  speech.Complete(0, Internal("boom").WithErrorCode("audio_decode_failed"));
  EXPECT_EQ(client->finishes(), 1);
  const std::string all = client->streamed();
  EXPECT_NE(all.find("audio_decode_failed"), std::string::npos);
  EXPECT_NE(all.find("[DONE]"), std::string::npos);
  EXPECT_FALSE(writer->Write(Chunk({{"content", "x"}})));
}

}  // namespace
}  // namespace omni::orchestrator
