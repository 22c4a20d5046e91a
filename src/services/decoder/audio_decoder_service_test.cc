// The audio decoder service over the real demo vocoder and a file:// store,
// no sockets: 50 units are 2.0 s in every format (read back by the media
// layer's decoders), the token string is the array, a range is the slice of
// the one-shot waveform, speakers resolve by OmniServe's precedence, bad
// requests get 400s naming their field before the vocoder runs, and
// OmniServe's /predictions keeps its answer's shape.
#include "services/decoder/audio_decoder_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "media/audio.h"
#include "services/decoder/audio_decoder_test_util.h"
#include "storage/content_hash.h"
#include "storage/url_fetch.h"

namespace omni::decoder {
namespace {

using testing::DemoVocoder;
using testing::TestUnits;

// How much longer than its input a lossy clip may decode (audio_encode_test.cc's
// bounds for whole files at 24 kHz, read by DecodeAudio).
double MaxExcessSeconds(media::AudioFormat format) {
  switch (format) {
    case media::AudioFormat::kOpus: return 0.02;
    case media::AudioFormat::kMp3: return 0.02;
    case media::AudioFormat::kAac: return 2047.0 / 24000;
    default: return 0;
  }
}

std::vector<int16_t> Pcm16(const std::string& bytes) {
  std::vector<int16_t> pcm(bytes.size() / 2);
  std::memcpy(pcm.data(), bytes.data(), pcm.size() * 2);  // little-endian host
  return pcm;
}

class AudioDecoderServiceTest : public ::testing::Test {
 protected:
  AudioDecoderServiceTest()
      : demo_(DemoVocoder::Get()),
        store_("audio_decoder_service_test"),
        batcher_(VocodeBatchFn(*demo_.model), 8, &metrics_, "omni_audio_decoder"),
        service_({.model_id = "omni-ad", .store = &store_.store(), .store_uri = store_.uri(),
                  .url_ttl = std::chrono::seconds(600), .clock = &clock_, .metrics = &metrics_},
                 *demo_.model, *demo_.speakers, [this](const VocodeInput& in) {
                   ++vocodes_;
                   return batcher_.Forward(in);
                 }) {}

  StatusOr<AudioDecodeResult> Decode(const nlohmann::json& body) {
    auto request = ParseAudioDecodeRequest(body.dump(), service_.num_units());
    if (!request.ok()) return request.status();
    return service_.Decode(*request);
  }
  // The samples as int16, answered inline.
  std::vector<int16_t> InlinePcm(nlohmann::json body) {
    body["format"] = "pcm16";
    body["inline"] = true;
    auto r = Decode(body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? Pcm16(r->audio_bytes) : std::vector<int16_t>{};
  }

  const DemoVocoder& demo_;
  testing::TempStore store_;
  FakeClock clock_;
  MetricsRegistry metrics_;
  VocodeBatcher batcher_;
  std::atomic<int> vocodes_{0};
  AudioDecoderService service_;
};

TEST_F(AudioDecoderServiceTest, FiftyUnitsAreTwoSecondsInEveryFormat) {
  const std::vector<int32_t> units = TestUnits(50);
  std::vector<float> reference;  // the WAV's samples
  for (const char* name : {"wav", "flac", "mp3", "opus", "aac", "pcm16"}) {
    SCOPED_TRACE(name);
    auto r = Decode({{"units", units}, {"format", name}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const media::AudioFormat format = *media::ParseAudioFormat(name);
    EXPECT_EQ(r->samples, 50 * 960);
    EXPECT_DOUBLE_EQ(r->duration, 2.0);
    EXPECT_EQ(r->sample_rate, 24000);
    EXPECT_EQ(r->units, 50);
    EXPECT_EQ(r->speaker, "fkms");
    EXPECT_EQ(r->mime, media::AudioMimeType(format));
    EXPECT_EQ(r->key, "gen/omni-ad/" + r->sha256 + "." + std::string(media::AudioFormatName(format)));
    EXPECT_EQ(r->expires_at, 1'700'000'000 + 600);  // the FakeClock's start + the TTL
    auto bytes = store_.store().Get(r->key);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    EXPECT_EQ(Sha256Hex(*bytes), r->sha256);
    EXPECT_EQ(bytes->size(), r->bytes);
    auto head = store_.store().Head(r->key);
    ASSERT_TRUE(head.ok());
    EXPECT_EQ(head->content_type, r->mime);
    const ObjectMetadata want_meta_part = {{"seconds", "2"}, {"sample_rate", "24000"}};
    for (const auto& kv : want_meta_part) {
      EXPECT_NE(std::find(head->metadata.begin(), head->metadata.end(), kv), head->metadata.end()) << kv.first;
    }
    auto fetched = FetchUrl(r->url, {}, nullptr);
    ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
    EXPECT_EQ(*fetched, *bytes);
    if (format == media::AudioFormat::kPcm16) {
      ASSERT_EQ(bytes->size(), 2u * 50 * 960);
      const std::vector<int16_t> pcm = Pcm16(*bytes);
      for (size_t i = 0; i < pcm.size(); ++i) ASSERT_EQ(pcm[i] / 32768.0f, reference[i]) << i;
      continue;
    }
    auto audio = media::DecodeAudio(*bytes, {.sample_rate = 24000});
    ASSERT_TRUE(audio.ok()) << audio.status().ToString();
    std::printf("  %-5s %6zu bytes, decodes to %.4f s\n", name, bytes->size(), audio->seconds());
    if (format == media::AudioFormat::kWav || format == media::AudioFormat::kFlac) {
      ASSERT_EQ(audio->samples.size(), 50u * 960);
      if (reference.empty()) reference = audio->samples;
      EXPECT_EQ(audio->samples, reference);  // lossless: FLAC is the WAV's samples
    } else {
      EXPECT_GE(audio->seconds(), 2.0 - 1e-3);
      EXPECT_LE(audio->seconds(), 2.0 + MaxExcessSeconds(format));
    }
  }
  // Not silence.
  double energy = 0;
  for (float v : reference) energy += v * v;
  EXPECT_GT(energy, 0);
}

TEST_F(AudioDecoderServiceTest, TokenStringIsTheArray) {
  const std::vector<int32_t> units = TestUnits(12, 3);
  std::string text = "<|audio_start|>";
  for (size_t i = 0; i < units.size(); ++i) {
    text += "<|audio" + std::to_string(units[i]) + "|>" + (i == 4 ? " ok " : "");
  }
  text += "<|audio_end|>";
  auto parsed = ParseAudioDecodeRequest(nlohmann::json{{"units", text}}.dump(), 6561);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->units, units);
  EXPECT_EQ(InlinePcm({{"units", text}}), InlinePcm({{"units", units}}));
}

// A window with the vocoder's context around [first, last) gives the
// one-shot waveform's samples of those units (UnitBigVgan::VocodeRange).
TEST_F(AudioDecoderServiceTest, RangeIsTheSliceOfTheOneShotWaveform) {
  const auto context = demo_.model->context();
  const int n = 90;
  const std::vector<int32_t> units = TestUnits(n, 7);
  const std::vector<int16_t> whole = InlinePcm({{"units", units}});
  ASSERT_EQ(whole.size(), static_cast<size_t>(n) * 960);
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{60, 72}, {0, 12}, {80, 90}};
  for (const auto& [first, last] : ranges) {
    SCOPED_TRACE(first);
    const int64_t start = std::max<int64_t>(0, first - context.left), end = std::min<int64_t>(n, last + context.right);
    const std::vector<int32_t> window(units.begin() + start, units.begin() + end);
    const nlohmann::json body = {{"units", window},
                                 {"range", {{"window_start", start}, {"first", first}, {"last", last}}}};
    const std::vector<int16_t> part = InlinePcm(body);
    ASSERT_EQ(std::ssize(part), (last - first) * 960);
    int differ = 0;
    for (size_t i = 0; i < part.size(); ++i) {
      const int want = whole[static_cast<size_t>(first * 960) + i];
      ASSERT_LE(std::abs(part[i] - want), 1) << i;  // within 1e-6 before the int16 truncation
      differ += part[i] != want;
    }
    EXPECT_LE(differ, std::ssize(part) / 100);
  }
  // A window later in the sequence, with the vocoder's left context before `first`.
  const int64_t left = demo_.model->context().left;
  auto r = Decode({{"units", TestUnits(static_cast<int>(left) + 20)},
                   {"range", {{"window_start", 100}, {"first", 100 + left + 5}, {"last", 100 + left + 10}}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->units, 5);
  EXPECT_EQ(r->samples, 5 * 960);
  EXPECT_DOUBLE_EQ(r->duration, 0.2);
}

TEST_F(AudioDecoderServiceTest, SpeakersResolveByOmniServesPrecedence) {
  const std::vector<int32_t> units = TestUnits(6);
  struct Case {
    nlohmann::json speaker;
    std::string want;
  };
  // The demo's speaker_config.json: band i maps f and m to the i-th f / m name (cycling).
  const std::vector<Case> cases = {
      {nullptr, "fkms"},                                   // the default
      {{{"id", "mhwj"}}, "mhwj"},
      {{{"id", "fphj"}, {"ref_audio", "https://x/a.wav"}}, "fphj"},  // an id wins over a clip
      {{{"gender", "m"}, {"age", "20-30"}}, "mhwj"},
      {{{"gender", "m"}, {"age", "10"}}, "mphw"},
      {{{"gender", "f"}, {"age", "10"}}, "fphj"},
      {{{"gender", "m"}}, "mhwj"},                         // the "default" band
      {{{"id", ""}, {"gender", "f"}, {"age", "0-10"}}, "fkms"},
  };
  for (const Case& c : cases) {
    auto r = Decode({{"units", units}, {"speaker", c.speaker}, {"inline", true}});
    ASSERT_TRUE(r.ok()) << c.speaker.dump() << ": " << r.status().ToString();
    EXPECT_EQ(r->speaker, c.want) << c.speaker.dump();
  }
  // Different rows, different voices.
  std::vector<std::vector<int16_t>> voices;
  for (const char* id : {"fkms", "mhwj", "fphj", "mphw"}) {
    voices.push_back(InlinePcm({{"units", units}, {"speaker", {{"id", id}}}}));
  }
  for (size_t a = 0; a < voices.size(); ++a) {
    for (size_t b = a + 1; b < voices.size(); ++b) EXPECT_NE(voices[a], voices[b]) << a << " " << b;
  }
  const int before = vocodes_.load();
  auto unknown = Decode({{"units", units}, {"speaker", {{"id", "nobody"}}}});
  ASSERT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.status().param(), "speaker.id");
  EXPECT_NE(unknown.status().message().find("fkms, mhwj, fphj, mphw"), std::string::npos) << unknown.status().message();
  auto clip = Decode({{"units", units}, {"speaker", {{"ref_audio", "https://x/a.wav"}}}});
  ASSERT_EQ(clip.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(clip.status().error_code(), "unsupported_speaker");
  EXPECT_EQ(clip.status().param(), "speaker.ref_audio");
  EXPECT_NE(clip.status().message().find("zero-shot"), std::string::npos);
  EXPECT_EQ(vocodes_.load(), before);
}

TEST_F(AudioDecoderServiceTest, BadRequestsGetPreciseErrorsBeforeTheVocoder) {
  const std::vector<int32_t> ok = TestUnits(5);
  std::vector<int32_t> big = ok;
  big[2] = 6561;  // OmniServe lets the last FSQ code + 1 through; we do not
  struct Case {
    std::string body, param, in_message;
  };
  auto body = [&](nlohmann::json extra) {
    nlohmann::json b = {{"units", ok}};
    b.update(extra);
    return b.dump();
  };
  const std::vector<Case> cases = {
      {"{not json", "", "JSON"},
      {"[1,2,3]", "", "object"},
      {R"({"model":"omni-ad"})", "units", ""},
      {body({{"units", 12}}), "units", ""},
      {body({{"units", {1, 2, 3.5}}}), "units", "units[2]"},
      {body({{"units", {1, "2", 3}}}), "units", "units[1]"},
      {body({{"units", big}}), "units", "audio unit 6561 at position 2"},
      {body({{"units", {4, -1, 3}}}), "units", "audio unit -1 at position 1"},
      {body({{"units", {1, 2}}}), "units", "3 to 2000"},
      {body({{"units", std::vector<int32_t>(2001, 7)}}), "units", "got 2001"},
      {body({{"units", "hello <|audio_start|>"}}), "units", "no <|audioN|>"},
      {body({{"units", "<|audio1|><|audio2|><|audio99999999999999999999|>"}}), "units", "position 2"},
      {body({{"units", "<|audio1|><|audio2|>"}}), "units", "got 2"},
      {body({{"model", 7}}), "model", ""},
      {body({{"speaker", "fkms"}}), "speaker", ""},
      {body({{"speaker", {{"gender", "x"}}}}), "speaker.gender", ""},
      {body({{"speaker", {{"age", "25"}}}}), "speaker.age", "20-30"},
      {body({{"speaker", {{"id", 3}}}}), "speaker.id", ""},
      {body({{"format", "ogg"}}), "format", "ogg"},
      {body({{"format", 1}}), "format", ""},
      {body({{"inline", "yes"}}), "inline", ""},
      {body({{"range", {{"window_start", 0}, {"first", 2}, {"last", 6}}}}), "range", "window [0, 5)"},
      {body({{"range", {{"window_start", 0}, {"first", 3}, {"last", 3}}}}), "range", ""},
      {body({{"range", {{"window_start", 4}, {"first", 3}, {"last", 5}}}}), "range", ""},
      {body({{"range", {{"window_start", -1}, {"first", 0}, {"last", 1}}}}), "range", ""},
      {body({{"range", {{"first", 0}, {"last", 1}}}}), "range.window_start", ""},
      {body({{"range", 5}}), "range", ""},
      {body({{"user", 5}}), "user", ""},
  };
  for (const Case& c : cases) {
    auto r = ParseAudioDecodeRequest(c.body, 6561);
    ASSERT_FALSE(r.ok()) << c.body.substr(0, 80);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.body.substr(0, 80);
    EXPECT_EQ(r.status().param(), c.param) << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.in_message), std::string::npos) << r.status().ToString();
  }
  auto other_model = Decode({{"model", "nope"}, {"units", ok}});
  EXPECT_EQ(other_model.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(other_model.status().error_code(), "model_not_found");
  EXPECT_EQ(vocodes_.load(), 0);
}

TEST_F(AudioDecoderServiceTest, InlineAnswersTheBytesAndStoresNothing) {
  auto request = ParseAudioDecodeRequest(nlohmann::json{{"units", TestUnits(8)}, {"inline", true}}.dump(), 6561);
  ASSERT_TRUE(request.ok());
  auto r = service_.Decode(*request);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(store_.store().List("gen/")->empty());
  const nlohmann::json j = nlohmann::json::parse(AudioDecodeResultJson(*r, *request, "omni-ad"));
  for (const char* absent : {"key", "uri", "url", "expires_at"}) EXPECT_FALSE(j.contains(absent)) << absent;
  EXPECT_EQ(j["object"], "audio");
  EXPECT_EQ(j["model"], "omni-ad");
  EXPECT_EQ(j["format"], "wav");
  EXPECT_EQ(j["mime"], "audio/wav");
  EXPECT_EQ(j["samples"], 8 * 960);
  EXPECT_EQ(j["units"], 8);
  EXPECT_EQ(j["speaker"], "fkms");
  const auto bytes = Base64Decode(j["audio"].get<std::string>());
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(bytes->size(), j["bytes"].get<size_t>());
  auto audio = media::DecodeAudio(*bytes, {.sample_rate = 24000});
  ASSERT_TRUE(audio.ok());
  EXPECT_EQ(audio->samples.size(), 8u * 960);
}

TEST_F(AudioDecoderServiceTest, OmniServePredictionsKeepTheirShape) {
  auto request = ParseOmniServeAudioDecodeRequest(
      nlohmann::json{{"units", TestUnits(25)}, {"format", "ogg"}, {"speaker", {{"gender", "m"}, {"age", "10"}}}}.dump(),
      6561);
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_EQ(request->format, media::AudioFormat::kOpus);
  auto r = service_.Decode(*request);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const nlohmann::json j = nlohmann::json::parse(AudioDecodeResultJson(*r, *request, "omni-ad"));
  EXPECT_EQ(j["s3_key"], r->key);
  EXPECT_EQ(j["requested_format"], "ogg");
  EXPECT_EQ(j["content_type"], "audio/ogg");
  EXPECT_EQ(j["size_bytes"], store_.store().Get(r->key)->size());
  EXPECT_EQ(j["url"], r->url);
  EXPECT_DOUBLE_EQ(j["duration"].get<double>(), 1.0);
  EXPECT_EQ(r->speaker, "mphw");
  auto pcm = ParseOmniServeAudioDecodeRequest(R"({"units": [1, 2, 3], "format": "pcm"})", 6561);
  ASSERT_TRUE(pcm.ok());
  EXPECT_EQ(pcm->format, media::AudioFormat::kPcm16);
  EXPECT_EQ(pcm->requested_format, "pcm");
  // A reference clip by either of OmniServe's fields: refused by the service.
  for (const char* field : {"ref_audio_url", "ref_audio_base64"}) {
    auto clip = ParseOmniServeAudioDecodeRequest(
        nlohmann::json{{"units", {1, 2, 3}}, {"speaker", {{field, "aGVsbG8="}}}}.dump(), 6561);
    ASSERT_TRUE(clip.ok());
    auto refused = service_.Decode(*clip);
    EXPECT_EQ(refused.status().error_code(), "unsupported_speaker");
    EXPECT_EQ(refused.status().param(), std::string("speaker.") + field);
  }
  EXPECT_EQ(ParseOmniServeAudioDecodeRequest("{}", 6561).status().param(), "units");
  EXPECT_EQ(ParseOmniServeAudioDecodeRequest(R"({"units": "<|audio1|>"})", 6561).status().param(), "units");
  EXPECT_EQ(ParseOmniServeAudioDecodeRequest(R"({"units": [1, 2, 3], "format": "wma"})", 6561).status().param(),
            "format");
}

}  // namespace
}  // namespace omni::decoder
