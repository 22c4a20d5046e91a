// The chat request's audio output options: OpenAI's modalities and audio
// fields, omniserve's audio.speaker (a reference clip's URL included) and
// OmniServe's is_ref_audio, which takes the messages' last audio part.
#include "services/orchestrator/speech_options.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace omni::orchestrator {
namespace {

using Json = nlohmann::json;

StatusOr<std::optional<SpeechRequestOptions>> Parse(const Json& body) { return ParseSpeechOptions(body.dump()); }

TEST(SpeechOptionsTest, VoicesSpeakersAndReferenceClips) {
  auto none = Parse({{"messages", Json::array()}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  auto voice = Parse({{"modalities", {"text", "audio"}}, {"audio", {{"voice", "alloy"}, {"format", "mp3"}}}});
  ASSERT_TRUE(voice.ok() && voice->has_value());
  EXPECT_EQ((*voice)->voice, "alloy");
  EXPECT_EQ((*voice)->format, "mp3");
  EXPECT_FALSE((*voice)->speaker);

  auto clip = Parse({{"modalities", {"audio"}}, {"audio", {{"speaker", {{"ref_audio", "https://x/ref.wav"}}}}}});
  ASSERT_TRUE(clip.ok() && clip->has_value()) << clip.status().ToString();
  ASSERT_TRUE((*clip)->speaker);
  EXPECT_EQ((*clip)->speaker->ref_audio, "https://x/ref.wav");

  // is_ref_audio: the last audio part of the last message that has one.
  const Json messages = Json::array(
      {{{"role", "user"}, {"content", {{{"type", "input_audio"}, {"input_audio", {{"data", "AAAA"}, {"format", "wav"}}}}}}},
       {{"role", "assistant"}, {"content", "hi"}},
       {{"role", "user"},
        {"content",
         {{{"type", "text"}, {"text", "say it like me"}},
          {{"type", "input_audio"}, {"input_audio", {{"data", "UklG"}, {"format", "mp3"}}}},
          {{"type", "text"}, {"text", "please"}}}}}});
  auto ref = Parse({{"modalities", {"text", "audio"}}, {"is_ref_audio", true}, {"messages", messages}});
  ASSERT_TRUE(ref.ok() && ref->has_value()) << ref.status().ToString();
  ASSERT_TRUE((*ref)->speaker);
  EXPECT_EQ((*ref)->speaker->ref_audio, "data:audio/mp3;base64,UklG");

  auto url = Parse({{"modalities", {"audio"}},
                    {"is_ref_audio", true},
                    {"messages", {{{"role", "user"}, {"content", {{{"type", "audio_url"}, {"audio_url", {{"url", "s3://b/k.wav"}}}}}}}}}});
  ASSERT_TRUE(url.ok() && url->has_value());
  EXPECT_EQ((*url)->speaker->ref_audio, "s3://b/k.wav");

  // A format that is not a plain token does not reach the data: URL's media type.
  auto odd = Parse({{"modalities", {"audio"}},
                    {"is_ref_audio", true},
                    {"messages", {{{"role", "user"}, {"content", {{{"type", "input_audio"}, {"input_audio", {{"data", "UklG"}, {"format", "wav;x=,"}}}}}}}}}});
  ASSERT_TRUE(odd.ok() && odd->has_value());
  EXPECT_EQ((*odd)->speaker->ref_audio, "data:application/octet-stream;base64,UklG");
}

TEST(SpeechOptionsTest, BadOptionsNameTheirField) {
  struct Case {
    Json body;
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"modalities", "audio"}}, "modalities"},
      {{{"modalities", {"audio", "video"}}}, "modalities"},
      {{{"modalities", {"audio"}}, {"audio", {{"format", "ogg"}}}}, "audio.format"},
      {{{"modalities", {"audio"}}, {"audio", {{"voice", 3}}}}, "audio.voice"},
      {{{"modalities", {"audio"}}, {"audio", {{"speaker", Json::object()}}}}, "audio.speaker"},
      {{{"modalities", {"audio"}}, {"audio", {{"speaker", {{"ref_audio", 7}}}}}}, "audio.speaker"},
      {{{"modalities", {"audio"}}, {"is_ref_audio", "yes"}}, "is_ref_audio"},
      {{{"modalities", {"audio"}}, {"is_ref_audio", true}, {"messages", {{{"role", "user"}, {"content", "no audio"}}}}},
       "is_ref_audio"},
      // Empty audio parts are no clip either.
      {{{"modalities", {"audio"}},
        {"is_ref_audio", true},
        {"messages", {{{"role", "user"}, {"content", {{{"type", "audio_url"}, {"audio_url", {{"url", ""}}}}}}}}}},
       "is_ref_audio"},
      {{{"modalities", {"audio"}},
        {"is_ref_audio", true},
        {"messages", {{{"role", "user"}, {"content", {{{"type", "input_audio"}, {"input_audio", {{"data", ""}}}}}}}}}},
       "is_ref_audio"},
  };
  for (const Case& c : cases) {
    auto r = Parse(c.body);
    ASSERT_FALSE(r.ok()) << c.body.dump();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.body.dump();
    EXPECT_EQ(r.status().param(), c.param) << c.body.dump();
  }
}

TEST(SpeechOptionsTest, TheLlmBodyDropsTheSpeechFields) {
  auto body = ForceAudioBody(R"({"model":"m","modalities":["audio"],"audio":{"voice":"alloy"},"is_ref_audio":true})");
  ASSERT_TRUE(body.ok());
  const Json j = Json::parse(*body);
  EXPECT_FALSE(j.contains("modalities"));
  EXPECT_FALSE(j.contains("audio"));
  EXPECT_FALSE(j.contains("is_ref_audio"));
  EXPECT_EQ(j["force_audio"], true);
  EXPECT_EQ(j["model"], "m");
}

}  // namespace
}  // namespace omni::orchestrator
