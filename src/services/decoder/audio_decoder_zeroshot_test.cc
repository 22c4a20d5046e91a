// Zero-shot speakers in the audio decoder service, over the demo's
// zero-shot vocoder (its ECAPA-TDNN speaker encoder; the numerics are
// unit_bigvgan_test's) and data: URLs: a reference clip gives the voice the
// speaker encoder's vector of that clip gives, a second request for the
// same clip reuses the vector, another clip gives another voice, and a clip
// that is not audio, a silent one or a decoder without a zero-shot vocoder
// get precise 4xx errors naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "media/audio.h"
#include "media/audio_encode.h"
#include "services/decoder/audio_decoder_service.h"
#include "services/decoder/audio_decoder_test_util.h"

namespace omni::decoder {
namespace {

using testing::DemoVocoder;
using testing::TestUnits;

// A 24 kHz voice-like WAV: a pitch with harmonics under a syllable envelope.
std::string ClipDataUrl(double pitch_hz, double seconds = 1.0) {
  const int n = static_cast<int>(24000 * seconds);
  std::vector<int16_t> pcm(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const double t = i / 24000.0, env = 0.5 + 0.5 * std::sin(2 * M_PI * 3.0 * t);
    double v = 0;
    for (int h = 1; h <= 5; ++h) v += std::sin(2 * M_PI * pitch_hz * h * t) / h;
    pcm[static_cast<size_t>(i)] = static_cast<int16_t>(std::lround(6000 * env * v));
  }
  auto wav = media::EncodeAudio(pcm, 24000, media::AudioFormat::kWav);
  EXPECT_TRUE(wav.ok()) << wav.status().ToString();
  return "data:audio/wav;base64," + Base64Encode(*wav);
}

class AudioDecoderZeroShotTest : public ::testing::Test {
 protected:
  AudioDecoderZeroShotTest()
      : demo_(DemoVocoder::Get()),
        store_("audio_decoder_zeroshot_test"),
        fetcher_(media::MediaFetchOptions{}, nullptr),
        batcher_(VocodeBatchFn(*demo_.model), 8, &metrics_, "omni_audio_decoder"),
        zs_batcher_(VocodeBatchFn(*demo_.zero_shot), 8, &metrics_, "omni_audio_decoder_zeroshot"),
        service_({.model_id = "omni-ad",
                  .store = &store_.store(),
                  .store_uri = store_.uri(),
                  .metrics = &metrics_,
                  .zero_shot = demo_.zero_shot.get(),
                  .vocode_zero_shot = [this](const VocodeInput& in) { return zs_batcher_.Forward(in); },
                  .fetcher = &fetcher_},
                 *demo_.model, *demo_.speakers, [this](const VocodeInput& in) { return batcher_.Forward(in); }) {}

  StatusOr<AudioDecodeResult> Decode(nlohmann::json body, bool omniserve = false) {
    auto request = omniserve ? ParseOmniServeAudioDecodeRequest(body.dump(), service_.num_units())
                             : ParseAudioDecodeRequest(body.dump(), service_.num_units());
    if (!request.ok()) return request.status();
    if (!omniserve) request->inline_audio = true;
    request->format = media::AudioFormat::kPcm16;
    return service_.Decode(*request);
  }
  static std::vector<int16_t> Pcm(const std::string& bytes) {
    std::vector<int16_t> pcm(bytes.size() / 2);
    std::memcpy(pcm.data(), bytes.data(), pcm.size() * 2);
    return pcm;
  }
  double Clips(const std::string& result) {
    return testing::MetricValue(metrics_.Render(), "omni_audio_decoder_reference_clips_total{result=\"" + result + "\"}");
  }

  const DemoVocoder& demo_;
  testing::TempStore store_;
  media::MediaFetcher fetcher_;
  MetricsRegistry metrics_;
  VocodeBatcher batcher_, zs_batcher_;
  AudioDecoderService service_;
};

// Requests for one new clip at once: the speaker encoder runs once, the
// others wait for its vector (single flight), and all voice alike.
TEST_F(AudioDecoderZeroShotTest, ConcurrentRequestsForOneClipEncodeItOnce) {
  const std::vector<int32_t> units = TestUnits(12);
  const std::string clip = ClipDataUrl(180, 3.0);
  constexpr int kRequests = 4;
  std::vector<StatusOr<AudioDecodeResult>> results(kRequests, Internal("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] { results[i] = Decode({{"units", units}, {"speaker", {{"ref_audio", clip}}}}); });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status().ToString();
    EXPECT_EQ(results[i]->audio_bytes, results[0]->audio_bytes) << i;
  }
  EXPECT_EQ(Clips("encoded"), 1);
  EXPECT_EQ(Clips("cached"), kRequests - 1);
  // A clip that is not audio fails every request waiting on it, each with the field named.
  const std::string bad = "data:audio/wav;base64," + Base64Encode(std::string(4000, 'x'));
  std::vector<StatusOr<AudioDecodeResult>> failed(kRequests, Internal("not run"));
  threads.clear();
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] { failed[i] = Decode({{"units", units}, {"speaker", {{"ref_audio", bad}}}}); });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_FALSE(failed[i].ok()) << i;
    EXPECT_EQ(failed[i].status().param(), "speaker.ref_audio") << failed[i].status().ToString();
  }
  EXPECT_EQ(Clips("encoded"), 1);
}

TEST_F(AudioDecoderZeroShotTest, AReferenceClipGivesItsEncodersVoiceOncePerClip) {
  const std::vector<int32_t> units = TestUnits(20);
  const std::string clip = ClipDataUrl(140);
  auto r = Decode({{"units", units}, {"speaker", {{"ref_audio", clip}}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->speaker.rfind("ref:", 0), 0u) << r->speaker;
  EXPECT_EQ(r->samples, 20 * 960);

  // The voice is the zero-shot vocoder's for the encoder's vector of the clip.
  auto fetched = fetcher_.Fetch(clip);
  ASSERT_TRUE(fetched.ok());
  auto audio = media::DecodeAudio(fetched->bytes, {.sample_rate = 24000});
  ASSERT_TRUE(audio.ok());
  auto vector = demo_.zero_shot->SpeakerFromClip(audio->samples);
  ASSERT_TRUE(vector.ok()) << vector.status().ToString();
  auto wave = demo_.zero_shot->Vocode(units, *vector);
  ASSERT_TRUE(wave.ok());
  EXPECT_EQ(Pcm(r->audio_bytes), models::ToPcm16(*wave));
  EXPECT_EQ(Clips("encoded"), 1);

  // The same clip again: the cached vector, the same samples.
  auto again = Decode({{"units", units}, {"speaker", {{"ref_audio", clip}}}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->audio_bytes, r->audio_bytes);
  EXPECT_EQ(Clips("encoded"), 1);
  EXPECT_EQ(Clips("cached"), 1);

  // Another clip is another voice, and neither is a table speaker's.
  auto other = Decode({{"units", units}, {"speaker", {{"ref_audio", ClipDataUrl(260)}}}});
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->audio_bytes, r->audio_bytes);
  EXPECT_NE(other->speaker, r->speaker);
  auto table = Decode({{"units", units}});
  ASSERT_TRUE(table.ok());
  EXPECT_NE(table->audio_bytes, r->audio_bytes);
  // Each answer says the receptive field of the vocoder that made it.
  EXPECT_EQ(r->context_left, demo_.zero_shot->context().left);
  EXPECT_EQ(r->context_right, demo_.zero_shot->context().right);
  EXPECT_EQ(table->context_left, demo_.model->context().left);
  EXPECT_GT(table->context_left, 0);

  // OmniServe's /predictions: bare base64 in ref_audio_base64.
  const std::string b64 = clip.substr(clip.find(',') + 1);
  auto predictions = Decode({{"units", units}, {"speaker", {{"ref_audio_base64", b64}}}}, /*omniserve=*/true);
  ASSERT_TRUE(predictions.ok()) << predictions.status().ToString();
  EXPECT_EQ(predictions->speaker, r->speaker);
}

TEST_F(AudioDecoderZeroShotTest, BadReferenceClipsGetPreciseErrors) {
  const std::vector<int32_t> units = TestUnits(5);
  auto text = Decode({{"units", units}, {"speaker", {{"ref_audio", "data:text/plain;base64," + Base64Encode("hello")}}}});
  EXPECT_EQ(text.status().code(), StatusCode::kUnsupportedMedia) << text.status().ToString();
  EXPECT_EQ(text.status().param(), "speaker.ref_audio");

  const std::string silent = *media::EncodeAudio(std::vector<int16_t>(24000, 0), 24000, media::AudioFormat::kWav);
  auto quiet = Decode({{"units", units}, {"speaker", {{"ref_audio", "data:audio/wav;base64," + Base64Encode(silent)}}}});
  EXPECT_EQ(quiet.status().code(), StatusCode::kInvalidArgument) << quiet.status().ToString();
  EXPECT_EQ(quiet.status().param(), "speaker.ref_audio");
  EXPECT_NE(quiet.status().message().find("silent"), std::string::npos) << quiet.status().message();

  auto remote = Decode({{"units", units}, {"speaker", {{"ref_audio", "http://127.0.0.1:9/a.wav"}}}});
  EXPECT_EQ(remote.status().code(), StatusCode::kInvalidArgument) << remote.status().ToString();
  EXPECT_EQ(remote.status().param(), "speaker.ref_audio");

  // A range whose window starts after unit 0 but without the vocoder's left context is refused.
  const int64_t left = demo_.model->context().left;
  const std::vector<int32_t> window = TestUnits(static_cast<int>(left) + 10);
  auto cut = Decode({{"units", window}, {"range", {{"window_start", 100}, {"first", 100 + left - 1}, {"last", 100 + left + 2}}}});
  EXPECT_EQ(cut.status().code(), StatusCode::kInvalidArgument) << cut.status().ToString();
  EXPECT_EQ(cut.status().param(), "range");
  auto whole = Decode({{"units", window}, {"range", {{"window_start", 100}, {"first", 100 + left}, {"last", 100 + left + 2}}}});
  EXPECT_TRUE(whole.ok()) << whole.status().ToString();

  // An id still wins over a clip, as OmniServe's precedence has it.
  auto id = Decode({{"units", units}, {"speaker", {{"id", "mhwj"}, {"ref_audio", "data:,x"}}}});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->speaker, "mhwj");
  EXPECT_EQ(Clips("encoded"), -1);  // no clip was ever encoded
}

// OmniServe's AUDIOLLM_DOWN_SAMPLE_RATE: a clip decoded at a lower rate and
// resampled back up keeps only what lies below half that rate, at the
// vocoder's rate and length.
double ToneAmplitude(const std::vector<float>& x, double hz, int rate) {
  const size_t from = x.size() / 4, n = x.size() / 2;  // the middle half: no edge effects
  double re = 0, im = 0;
  for (size_t i = 0; i < n; ++i) {
    const double phase = 2 * M_PI * hz * static_cast<double>(from + i) / rate;
    re += x[from + i] * std::cos(phase);
    im -= x[from + i] * std::sin(phase);
  }
  return 2 * std::hypot(re, im) / static_cast<double>(n);
}

TEST(LoadReferenceClipTest, DownSamplingKeepsOnlyWhatLiesBelowHalfTheRate) {
  std::vector<int16_t> pcm(24000);
  for (size_t i = 0; i < pcm.size(); ++i) {
    const double t = static_cast<double>(i) / 24000;
    pcm[i] = static_cast<int16_t>(std::lround(8192 * (std::sin(2 * M_PI * 1000 * t) + std::sin(2 * M_PI * 10000 * t))));
  }
  auto wav = media::EncodeAudio(pcm, 24000, media::AudioFormat::kWav);
  ASSERT_TRUE(wav.ok()) << wav.status().ToString();

  auto plain = LoadReferenceClip(*wav, 24000, 0, 60);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  ASSERT_EQ(plain->size(), 24000u);
  EXPECT_NEAR(ToneAmplitude(*plain, 1000, 24000), 0.25, 0.25 * 0.01);
  EXPECT_NEAR(ToneAmplitude(*plain, 10000, 24000), 0.25, 0.25 * 0.01);

  auto down = LoadReferenceClip(*wav, 24000, 16000, 60);
  ASSERT_TRUE(down.ok()) << down.status().ToString();
  EXPECT_NEAR(static_cast<double>(down->size()), 24000, 1);
  EXPECT_NEAR(ToneAmplitude(*down, 1000, 24000), 0.25, 0.25 * 0.02);
  EXPECT_LT(ToneAmplitude(*down, 10000, 24000), 0.25 * 1e-3);  // 10 kHz is above 16 kHz's Nyquist

  // Errors are the media layer's, as without down-sampling.
  EXPECT_EQ(LoadReferenceClip("not audio", 24000, 16000, 60).status().code(),
            LoadReferenceClip("not audio", 24000, 0, 60).status().code());
  EXPECT_FALSE(LoadReferenceClip("not audio", 24000, 16000, 60).ok());
}

// The service's ref_down_sample_rate: the voice is the encoder's vector of
// the clip loaded that way.
TEST_F(AudioDecoderZeroShotTest, ADownSampleRateChangesTheClipTheEncoderHears) {
  MetricsRegistry metrics;  // its own: the fixture's service has registered its families
  AudioDecoderService down({.model_id = "omni-ad",
                            .store = &store_.store(),
                            .store_uri = store_.uri(),
                            .metrics = &metrics,
                            .zero_shot = demo_.zero_shot.get(),
                            .vocode_zero_shot = [this](const VocodeInput& in) { return zs_batcher_.Forward(in); },
                            .fetcher = &fetcher_,
                            .ref_down_sample_rate = 8000},
                           *demo_.model, *demo_.speakers, [this](const VocodeInput& in) { return batcher_.Forward(in); });
  const std::vector<int32_t> units = TestUnits(20);
  const std::string clip = ClipDataUrl(900);  // its fifth harmonic, 4.5 kHz, is above 8 kHz's Nyquist
  const nlohmann::json body = {{"units", units}, {"speaker", {{"ref_audio", clip}}}};
  auto request = ParseAudioDecodeRequest(body.dump(), down.num_units());
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  request->inline_audio = true;
  request->format = media::AudioFormat::kPcm16;
  auto r = down.Decode(*request);
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  auto fetched = fetcher_.Fetch(clip);
  ASSERT_TRUE(fetched.ok());
  auto heard = LoadReferenceClip(fetched->bytes, 24000, 8000, 60);
  ASSERT_TRUE(heard.ok()) << heard.status().ToString();
  auto vector = demo_.zero_shot->SpeakerFromClip(*heard);
  ASSERT_TRUE(vector.ok()) << vector.status().ToString();
  auto wave = demo_.zero_shot->Vocode(units, *vector);
  ASSERT_TRUE(wave.ok());
  EXPECT_EQ(Pcm(r->audio_bytes), models::ToPcm16(*wave));

  auto plain = Decode(body);  // the fixture's service: no down-sampling
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_NE(Pcm(plain->audio_bytes), Pcm(r->audio_bytes));
}

}  // namespace
}  // namespace omni::decoder
