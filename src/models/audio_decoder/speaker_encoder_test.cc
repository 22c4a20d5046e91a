// The zero-shot audio decoder against tools/reference/speaker_encoder_ref.py,
// an independent PyTorch implementation written from the architecture, on
// the demo's zero-shot companion (make-demo-model --component ad, folder
// zeroshot/; with and without the pooling's global context): the reference
// clip's high-pass and loudness, its log-mel, the ECAPA-TDNN's layers and
// speaker vector, and the vocoder's waveform with that vector. Plus the
// errors for clips that cannot give a voice.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <map>
#include <numbers>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "models/audio_decoder/demo_audio_decoder.h"
#include "models/audio_decoder/speaker_reference.h"
#include "models/audio_decoder/unit_bigvgan.h"

namespace omni::models {
namespace {

namespace fs = std::filesystem;

// The demo's zero-shot folder, with or without global context.
std::string ZeroShotDir(bool global_context) {
  const fs::path dir = fs::temp_directory_path() /
                       ((global_context ? "omni_ad_zs_gca." : "omni_ad_zs.") + std::to_string(::getpid()));
  if (!fs::exists(dir / "zeroshot" / "model.safetensors")) {
    DemoAudioDecoderSpec spec;
    spec.global_context_att = global_context;
    EXPECT_TRUE(WriteDemoAudioDecoder(spec, dir.string()).ok());
  }
  return (dir / "zeroshot").string();
}

// The reference's clip formula (its "clip_formula"), in double, stored as float.
std::vector<float> Clip() {
  std::vector<float> x(28800);
  const double pi = std::numbers::pi;
  for (size_t n = 0; n < x.size(); ++n) {
    const double t = static_cast<double>(n) / 24000;
    x[n] = static_cast<float>(0.4 * std::sin(2 * pi * 30 * t) +
                              (0.6 + 0.4 * std::sin(2 * pi * 2.5 * t)) *
                                  (0.25 * std::sin(2 * pi * 220 * t) + 0.15 * std::sin(2 * pi * 660 * t + 0.3)) +
                              0.08 * std::sin(2 * pi * (500 * t + 1500 * t * t)));
  }
  return x;
}

double Rms(const Tensor& t) {
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) sum += static_cast<double>(t.data<float>()[i]) * t.data<float>()[i];
  return std::sqrt(sum / static_cast<double>(t.numel()));
}

class SpeakerEncoderTest : public ::testing::TestWithParam<bool> {};

// The demo folders go at the end of the run.
class ZeroShotDirCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    for (bool g : {false, true}) {
      fs::remove_all(fs::temp_directory_path() /
                     ((g ? "omni_ad_zs_gca." : "omni_ad_zs.") + std::to_string(::getpid())));
    }
  }
};

TEST_P(SpeakerEncoderTest, MatchesThePyTorchReference) {
  const StatusOr<std::string> text = ReadTextFile(
      std::string(OMNI_AUDIO_DECODER_TESTDATA) + (GetParam() ? "/zeroshot_gca_golden.json" : "/zeroshot_golden.json"));
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const nlohmann::json golden = nlohmann::json::parse(*text);
  ASSERT_EQ(golden["model"]["global_context_att"].get<bool>(), GetParam());
  auto vocoder = UnitBigVgan::Load(ZeroShotDir(GetParam()));
  ASSERT_TRUE(vocoder.ok()) << vocoder.status().ToString();
  ASSERT_TRUE((*vocoder)->zero_shot());

  // The clip: our formula gives the reference's samples.
  const std::vector<float> clip = Clip();
  ASSERT_EQ(golden["clip_samples"].get<size_t>(), clip.size());
  for (size_t i = 0; i < 64; ++i) EXPECT_NEAR(clip[i], golden["clip_head"][i].get<double>(), 1e-7) << i;

  // The high-pass: the same biquad as the reference's zero-pole design.
  const Biquad f = ReferenceHighPass(24000);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(f.b[i], golden["biquad"]["b"][i].get<double>(), 1e-12) << i;
    EXPECT_NEAR(f.a[i], golden["biquad"]["a"][i].get<double>(), 1e-12) << i;
  }

  std::map<std::string, Tensor> seen;
  const ActivationCallback callback = [&](std::string_view name, const Tensor& t) {
    seen[std::string(name)] = t.To(DType::kF32).Contiguous().Copy();
  };
  auto speaker = (*vocoder)->SpeakerFromClip(clip, &callback);
  ASSERT_TRUE(speaker.ok()) << speaker.status().ToString();

  // Normalised clip: the float32 high-pass and gain (f32 rounding of the gain only).
  const Tensor& normalized = seen.at("normalized");
  const nlohmann::json& all = golden["normalized"]["all"];
  ASSERT_EQ(normalized.numel(), std::ssize(all));
  double worst = 0;
  for (int64_t i = 0; i < normalized.numel(); ++i) {
    worst = std::max(worst, std::abs(normalized.data<float>()[i] - all[i].get<double>()));
  }
  EXPECT_LT(worst, 1e-6) << "normalized clip";
  RecordProperty("normalized_worst", std::to_string(worst));

  // Log-mel: FFTW against torch.stft, both f32; bins near the 1e-5 floor are
  // the logs of tiny differences, so the bound is relative to the magnitude.
  const Tensor& mel = seen.at("mel");
  const nlohmann::json& values = golden["mel"]["values"];
  ASSERT_EQ(mel.dim(0), std::ssize(values));
  ASSERT_EQ(mel.dim(1), golden["mel"]["frames"].get<int64_t>());
  worst = 0;
  for (int64_t m = 0; m < mel.dim(0); ++m) {
    for (int64_t t = 0; t < mel.dim(1); ++t) {
      const double want = values[m][t].get<double>(), got = mel.data<float>()[m * mel.dim(1) + t];
      // ln(x) moves by d / x for an absolute error d in x: loud bins (ln > -6) tightly.
      const double bound = want > -6 ? 2e-4 : 5e-3;
      EXPECT_NEAR(got, want, bound) << "mel " << m << " " << t;
      worst = std::max(worst, std::abs(got - want));
    }
  }
  RecordProperty("mel_worst", std::to_string(worst));

  // The encoder's layers (RMS) and its output.
  for (const char* name : {"layer1", "layer2", "layer3", "layer4", "conv", "pooled"}) {
    const double want = golden["rms"][name].get<double>();
    EXPECT_NEAR(Rms(seen.at(name)), want, 1e-4 * std::max(1.0, want)) << name;
  }
  const nlohmann::json& embedding = golden["embedding"];
  ASSERT_EQ(speaker->numel(), std::ssize(embedding));
  worst = 0;
  for (int64_t i = 0; i < speaker->numel(); ++i) {
    EXPECT_NEAR(speaker->data<float>()[i], embedding[i].get<double>(), 2e-4) << "embedding " << i;
    worst = std::max(worst, std::abs(speaker->data<float>()[i] - embedding[i].get<double>()));
  }
  RecordProperty("embedding_worst", std::to_string(worst));

  // The vocoder with the reference's own vector: the waveform.
  std::vector<float> vector;
  for (const auto& v : embedding) vector.push_back(v.get<float>());
  std::vector<int32_t> units;
  for (const auto& u : golden["units"]) units.push_back(u.get<int32_t>());
  auto wav = (*vocoder)->Vocode(units, Tensor::FromFloats(vector, {std::ssize(vector)}));
  ASSERT_TRUE(wav.ok()) << wav.status().ToString();
  const nlohmann::json& samples = golden["samples"];
  ASSERT_EQ(std::ssize(*wav), std::ssize(samples));
  worst = 0;
  for (size_t i = 0; i < wav->size(); ++i) worst = std::max(worst, std::abs((*wav)[i] - samples[i].get<double>()));
  EXPECT_LT(worst, 1e-5) << "waveform";
  RecordProperty("waveform_worst", std::to_string(worst));
  const std::vector<int16_t> pcm = ToPcm16(*wav);
  for (size_t i = 0; i < pcm.size(); ++i) EXPECT_NEAR(pcm[i], golden["int16"][i].get<int>(), 1) << i;
}

INSTANTIATE_TEST_SUITE_P(GlobalContext, SpeakerEncoderTest, ::testing::Bool());
const ::testing::Environment* const kCleanup = ::testing::AddGlobalTestEnvironment(new ZeroShotDirCleanup);

TEST(SpeakerReferenceTest, ClipsThatCannotGiveAVoiceAreRefused) {
  auto vocoder = UnitBigVgan::Load(ZeroShotDir(false));
  ASSERT_TRUE(vocoder.ok()) << vocoder.status().ToString();
  const std::vector<float> silent(24000, 0.0f);
  auto quiet = (*vocoder)->SpeakerFromClip(silent);
  EXPECT_EQ(quiet.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(quiet.status().message().find("silent"), std::string::npos) << quiet.status().message();
  std::vector<float> nan = Clip();
  nan[100] = std::nanf("");
  EXPECT_EQ((*vocoder)->SpeakerFromClip(nan).status().code(), StatusCode::kInvalidArgument);
  // Not silent, but far below any voice: the gain would overflow.
  std::vector<float> faint = Clip();
  for (float& v : faint) v *= 1e-33f;
  auto whisper = (*vocoder)->SpeakerFromClip(faint);
  EXPECT_EQ(whisper.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(whisper.status().message().find("silent"), std::string::npos) << whisper.status().message();
  // The encoder needs two frames: 1024 + 256 - 2 * 384 = 512 samples.
  const std::vector<float> clip = Clip();
  for (size_t n : {100, 300, 511}) {
    const std::vector<float> tiny(clip.begin(), clip.begin() + static_cast<int64_t>(n));
    auto short_clip = (*vocoder)->SpeakerFromClip(tiny);
    EXPECT_EQ(short_clip.status().code(), StatusCode::kInvalidArgument) << n;
    EXPECT_NE(short_clip.status().message().find("too short"), std::string::npos) << short_clip.status().message();
  }
  const std::vector<float> enough(clip.begin(), clip.begin() + 512);
  EXPECT_TRUE((*vocoder)->SpeakerFromClip(enough).ok());
  // int16 of a NaN sample is 0, not undefined.
  EXPECT_EQ(ToPcm16(std::vector<float>{std::nanf(""), 0.5f, -2.f}), (std::vector<int16_t>{0, 16383, -32767}));
  // A table vocoder has no speaker encoder.
  auto table = UnitBigVgan::Load(fs::path(ZeroShotDir(false)).parent_path().string());
  ASSERT_TRUE(table.ok());
  EXPECT_EQ((*table)->SpeakerFromClip(Clip()).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE((*vocoder)->SpeakerRow(0).ok());
}

// The high-pass's response: -3 dB at 70 Hz, flat in the voice band, a
// 30 Hz hum mostly gone (a property of the filter, not of the reference).
TEST(SpeakerReferenceTest, TheHighPassCutsBelowSeventyHertz) {
  const Biquad f = ReferenceHighPass(24000);
  auto gain_db = [&](double hz) {
    const double w = 2 * std::numbers::pi * hz / 24000;
    const std::complex<double> z1 = std::polar(1.0, -w), z2 = std::polar(1.0, -2 * w);
    return 20 * std::log10(std::abs((f.b[0] + f.b[1] * z1 + f.b[2] * z2) / (1.0 + f.a[1] * z1 + f.a[2] * z2)));
  };
  EXPECT_NEAR(gain_db(70), -3.0103, 1e-3);
  EXPECT_NEAR(gain_db(1000), 0.0, 1e-3);
  EXPECT_LT(gain_db(30), -14);
  EXPECT_LT(gain_db(10), -33);
}

}  // namespace
}  // namespace omni::models
