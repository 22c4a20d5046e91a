// The unit BigVGAN vocoder against tools/reference/audio_decoder_ref.py, an
// independent PyTorch implementation written from the architecture, on the
// demo weights (make-demo-model --component ad), causal and not: the
// waveform for a unit sequence and two speakers, the stage checkpoints, and
// one anti-aliased SnakeBeta block on its own. Plus the lengths the spec
// fixes (960 samples per unit) and the loader's errors.
#include "models/audio_decoder/unit_bigvgan.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <nlohmann/json.hpp>

#include "modelfile/checkpoint.h"
#include "models/audio_decoder/demo_audio_decoder.h"
#include "models/layers/weights.h"
#include "ops/anti_alias.h"

namespace omni::models {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string TempDir(const std::string& name) {
  return (fs::temp_directory_path() / (name + "." + std::to_string(::getpid()))).string();
}

// The demo folder, causal (the default) or not.
std::string DemoDir(bool causal) {
  const std::string dir = TempDir(causal ? "omni_ad_causal" : "omni_ad_centred");
  if (!fs::exists(dir + "/model.safetensors")) {
    DemoAudioDecoderSpec spec;
    spec.causal = causal;
    EXPECT_TRUE(WriteDemoAudioDecoder(spec, dir).ok());
  }
  return dir;
}

class UnitBigVganTest : public ::testing::TestWithParam<bool> {
 protected:
  static void TearDownTestSuite() {
    fs::remove_all(TempDir("omni_ad_causal"));
    fs::remove_all(TempDir("omni_ad_centred"));
  }
};

TEST_P(UnitBigVganTest, FiftyUnitsAreExactly960SamplesEachInRange) {
  auto vocoder = UnitBigVgan::Load(DemoDir(GetParam()));
  ASSERT_TRUE(vocoder.ok()) << vocoder.status().ToString();
  EXPECT_EQ((*vocoder)->samples_per_unit(), 960);
  std::vector<int32_t> units(50);
  for (int i = 0; i < 50; ++i) units[i] = (i * 977 + 5) % 6561;
  auto speaker = (*vocoder)->SpeakerRow(1);
  ASSERT_TRUE(speaker.ok());
  auto wav = (*vocoder)->Vocode(units, *speaker);
  ASSERT_TRUE(wav.ok()) << wav.status().ToString();
  ASSERT_EQ(wav->size(), 50u * 960u);  // 2.0 s at 24 kHz
  double energy = 0;
  for (float v : *wav) {
    ASSERT_TRUE(std::isfinite(v));
    ASSERT_LE(std::abs(v), 1.f);
    energy += v * v;
  }
  EXPECT_GT(energy, 0);
}

TEST_P(UnitBigVganTest, RefusesBadUnitsAndSpeakers) {
  auto vocoder = UnitBigVgan::Load(DemoDir(GetParam()));
  ASSERT_TRUE(vocoder.ok());
  auto speaker = (*vocoder)->SpeakerRow(0);
  ASSERT_TRUE(speaker.ok());
  const std::vector<int32_t> bad = {1, 2, 6561};
  auto wav = (*vocoder)->Vocode(bad, *speaker);
  ASSERT_FALSE(wav.ok());
  EXPECT_NE(wav.status().message().find("audio unit 6561 at position 2"), std::string::npos) << wav.status().ToString();
  EXPECT_FALSE((*vocoder)->Vocode(std::vector<int32_t>{}, *speaker).ok());
  EXPECT_FALSE((*vocoder)->SpeakerRow(4).ok());
  EXPECT_FALSE((*vocoder)->SpeakerRow(-1).ok());
}

// Root-mean-square of a tensor (f32), accumulated in double as the reference does.
double Rms(const Tensor& t) {
  const Tensor f = t.To(DType::kF32);
  double sum = 0;
  for (int64_t i = 0; i < f.numel(); ++i) sum += static_cast<double>(f.data<float>()[i]) * f.data<float>()[i];
  return std::sqrt(sum / static_cast<double>(f.numel()));
}

nlohmann::json Golden(bool causal) {
  return nlohmann::json::parse(
      ReadFile(std::string(OMNI_AUDIO_DECODER_TESTDATA) + (causal ? "/causal_golden.json" : "/centred_golden.json")));
}

// Both sides compute in f32 (oneDNN's convolutions against PyTorch's): what
// differs is the order of summation over about 120 convolutions.
constexpr double kSampleTolerance = 5e-6;  // measured 3.4e-7 on AVX-512

TEST_P(UnitBigVganTest, WaveformMatchesThePyTorchReference) {
  const nlohmann::json golden = Golden(GetParam());
  ASSERT_EQ(golden["model"]["causal"].get<bool>(), GetParam());
  auto vocoder = UnitBigVgan::Load(DemoDir(GetParam()));
  ASSERT_TRUE(vocoder.ok()) << vocoder.status().ToString();
  // The units from the formula the reference documents.
  ASSERT_EQ(golden["unit_formula"], "u[t] = (t * 2731 + 17) % num_units");
  std::vector<int32_t> units;
  for (size_t t = 0; t < golden["units"].size(); ++t) units.push_back(static_cast<int32_t>((t * 2731 + 17) % 6561));
  ASSERT_EQ(nlohmann::json(units), golden["units"]);
  ASSERT_GE(golden["cases"].size(), 2u);
  for (const nlohmann::json& c : golden["cases"]) {
    SCOPED_TRACE(c["speaker"].get<std::string>());
    auto speaker = (*vocoder)->SpeakerRow(c["speaker_index"].get<int64_t>());
    ASSERT_TRUE(speaker.ok());
    std::map<std::string, double, std::less<>> rms;
    const ActivationCallback callback = [&](std::string_view name, const Tensor& v) { rms[std::string(name)] = Rms(v); };
    auto wav = (*vocoder)->Vocode(units, *speaker, &callback);
    ASSERT_TRUE(wav.ok()) << wav.status().ToString();
    const std::vector<float> want = c["samples"].get<std::vector<float>>();
    ASSERT_EQ(wav->size(), want.size());
    ASSERT_EQ(want.size(), units.size() * 960);
    double worst = 0, peak = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs((*wav)[i] - want[i])));
      peak = std::max(peak, static_cast<double>(std::abs(want[i])));
    }
    EXPECT_LE(worst, kSampleTolerance) << "peak " << peak;
    std::printf("%s: worst sample difference %.3g (peak %.3g)\n", c["speaker"].get<std::string>().c_str(), worst, peak);
    EXPECT_GT(peak, 0.05);  // a real signal, not silence
    // int16 by truncation: equal but where a sample sits within the tolerance of a step.
    const std::vector<int16_t> pcm = ToPcm16(*wav);
    const std::vector<int> want_pcm = c["int16"].get<std::vector<int>>();
    int off_by_one = 0;
    for (size_t i = 0; i < pcm.size(); ++i) {
      ASSERT_LE(std::abs(pcm[i] - want_pcm[i]), 1) << i;
      off_by_one += pcm[i] != want_pcm[i];
    }
    EXPECT_LE(off_by_one, static_cast<int>(pcm.size() / 100));
    for (const auto& [name, value] : c["rms"].items()) {
      ASSERT_TRUE(rms.contains(name)) << name;
      EXPECT_NEAR(rms[name], value.get<double>(), 1e-5 * value.get<double>() + 1e-7) << name;
    }
  }
}

TEST_P(UnitBigVganTest, AntiAliasedSnakeBlockMatchesThePyTorchReference) {
  const nlohmann::json golden = Golden(GetParam())["activation"];
  ASSERT_EQ(golden["block"], "resblocks.0.activations.0");
  ASSERT_EQ(golden["input_formula"], "x[c][t] = float32(sin(0.37 * t + 0.5 * c) * (1 + 0.1 * c)) (float64 math)");
  const int64_t channels = golden["C"].get<int64_t>(), t = golden["T"].get<int64_t>();
  Tensor x = Tensor::Empty({channels, t}, DType::kF32);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < t; ++i) {
      x.data<float>()[c * t + i] = static_cast<float>(std::sin(0.37 * i + 0.5 * c) * (1 + 0.1 * c));
    }
  }
  auto ckpt = Checkpoint::Open(DemoDir(GetParam()));
  ASSERT_TRUE(ckpt.ok());
  auto alpha = layers::LoadVector(*ckpt, "resblocks.0.activations.0.act.alpha", channels);
  auto beta = layers::LoadVector(*ckpt, "resblocks.0.activations.0.act.beta", channels);
  ASSERT_TRUE(alpha.ok() && beta.ok());
  const std::vector<float> filter = ops::KaiserSincFilter(12, 0.25, 0.3);
  const std::vector<float> want_filter = golden["filter"].get<std::vector<float>>();
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(filter[i], want_filter[i], 1e-7) << i;
  const Tensor y = ops::AntiAliasedSnake(x, {.alpha = *alpha, .beta = *beta, .log_scale = true}, filter);
  double worst = 0;
  for (int64_t c = 0; c < channels; ++c) {
    const std::vector<float> want = golden["output"][c].get<std::vector<float>>();
    for (int64_t i = 0; i < t; ++i) {
      // f32 rounding of values up to 7: relative to the value's size.
      const double err = std::abs(y.data<float>()[c * t + i] - want[i]) / (1.0 + std::abs(want[i]));
      worst = std::max(worst, err);
    }
  }
  EXPECT_LE(worst, 1e-6);
}

TEST_P(UnitBigVganTest, BatchOfDifferentLengthsEqualsOneClipAtATime) {
  auto vocoder = UnitBigVgan::Load(DemoDir(GetParam()));
  ASSERT_TRUE(vocoder.ok());
  std::vector<std::vector<int32_t>> clips;
  std::vector<Tensor> speakers;
  for (int n : {7, 13, 10, 7}) {
    std::vector<int32_t> clip(n);
    for (int i = 0; i < n; ++i) clip[i] = (i * 389 + n * 31) % 6561;
    clips.push_back(clip);
    speakers.push_back(*(*vocoder)->SpeakerRow(n % 4));
  }
  auto batch = (*vocoder)->VocodeBatch(clips, speakers);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  for (size_t i = 0; i < clips.size(); ++i) {
    // One clip at its own length (Forward: no padding to a length bucket).
    Tensor ids = Tensor::Empty({1, std::ssize(clips[i])}, DType::kI64);
    std::copy(clips[i].begin(), clips[i].end(), ids.data<int64_t>());
    const Tensor wav = (*vocoder)->Forward(ids, speakers[i].Reshape({1, speakers[i].numel()}));
    const std::vector<float> one_shot(wav.data<float>(), wav.data<float>() + wav.numel());
    const std::vector<float>* one = &one_shot;
    ASSERT_EQ((*batch)[i].size(), one->size());
    double worst = 0;
    for (size_t k = 0; k < one->size(); ++k) worst = std::max(worst, static_cast<double>(std::abs((*batch)[i][k] - (*one)[k])));
    EXPECT_LE(worst, 1e-6) << "clip " << i;
  }
  const std::vector<std::vector<int32_t>> bad = {{1, 2, 3}, {6561}};
  EXPECT_FALSE((*vocoder)->VocodeBatch(bad, speakers).ok());  // and one speaker per clip
}

// Chunks of 12 units, each vocoded from a window with the receptive field's
// context (cut at the sequence's ends), joined: the one-shot waveform.
TEST_P(UnitBigVganTest, ChunksWithTheirContextJoinToTheOneShotWaveform) {
  auto vocoder = UnitBigVgan::Load(DemoDir(GetParam()));
  ASSERT_TRUE(vocoder.ok());
  const UnitBigVgan::Context context = (*vocoder)->context();
  std::printf("context: %lld units left, %lld right\n", static_cast<long long>(context.left),
              static_cast<long long>(context.right));
  EXPECT_GT(context.left, 0);
  std::vector<int32_t> units(60);
  for (int i = 0; i < 60; ++i) units[i] = (i * 1237 + 3) % 6561;
  const Tensor speaker = *(*vocoder)->SpeakerRow(2);
  auto whole = (*vocoder)->Vocode(units, speaker);
  ASSERT_TRUE(whole.ok());
  std::vector<float> joined;
  for (int64_t first = 0; first < 60; first += 12) {
    const int64_t last = std::min<int64_t>(first + 12, 60);
    const int64_t start = std::max<int64_t>(0, first - context.left), end = std::min<int64_t>(60, last + context.right);
    const std::span<const int32_t> window(units.data() + start, static_cast<size_t>(end - start));
    auto chunk = (*vocoder)->VocodeRange(window, start, first, last, speaker);
    ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
    ASSERT_EQ(std::ssize(*chunk), (last - first) * 960);
    joined.insert(joined.end(), chunk->begin(), chunk->end());
  }
  ASSERT_EQ(joined.size(), whole->size());
  double worst = 0;
  for (size_t i = 0; i < joined.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(joined[i] - (*whole)[i])));
  std::printf("chunked vs one-shot: worst sample difference %.3g\n", worst);
  EXPECT_LE(worst, 1e-5);
  EXPECT_FALSE((*vocoder)->VocodeRange(units, 0, 10, 70, speaker).ok());
}

// A clip longer than the largest window is vocoded in windows with their
// context: the same samples as one forward over the whole clip.
TEST(UnitBigVganWindowsTest, AClipLongerThanTheLargestWindowIsTheOneShotWaveform) {
  auto vocoder = UnitBigVgan::Load(DemoDir(true));
  ASSERT_TRUE(vocoder.ok());
  const int64_t n = (*vocoder)->Windows().back() + 10;
  std::vector<int32_t> units(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) units[i] = static_cast<int32_t>((i * 911 + 7) % 6561);
  const Tensor speaker = *(*vocoder)->SpeakerRow(3);
  auto windowed = (*vocoder)->Vocode(units, speaker);
  ASSERT_TRUE(windowed.ok());
  Tensor ids = Tensor::Empty({1, n}, DType::kI64);
  std::copy(units.begin(), units.end(), ids.data<int64_t>());
  const Tensor whole = (*vocoder)->Forward(ids, speaker.Reshape({1, speaker.numel()}));
  ASSERT_EQ(std::ssize(*windowed), whole.numel());
  double worst = 0;
  for (int64_t i = 0; i < whole.numel(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs((*windowed)[i] - whole.data<float>()[i])));
  }
  EXPECT_LE(worst, 1e-6);
  fs::remove_all(TempDir("omni_ad_causal"));
}

INSTANTIATE_TEST_SUITE_P(Padding, UnitBigVganTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Causal" : "Centred"; });

TEST(UnitBigVganConfigTest, RefusesWhatTheVocoderDoesNotImplement) {
  const std::string base = R"({"num_units": 6561, "unit_emb_dim": 8, "spk_emb_dim": 4, "num_spk": 2,
                               "upsample_initial_channel": 64)";
  EXPECT_TRUE(ParseUnitBigVganConfig(base + "}", "c").ok());
  EXPECT_FALSE(ParseUnitBigVganConfig(base + R"(, "resblock": "2"})", "c").ok());
  EXPECT_FALSE(ParseUnitBigVganConfig(base + R"(, "activation": "snake"})", "c").ok());
  EXPECT_FALSE(ParseUnitBigVganConfig(base + R"(, "upsample_rates": [5, 4]})", "c").ok());  // kernels differ
  // Causal transposed convolutions need kernel 2 x rate to keep rate x input.
  EXPECT_FALSE(ParseUnitBigVganConfig(
                   base + R"(, "upsample_rates": [4], "upsample_kernel_sizes": [7], "upsample_initial_channel": 8})",
                   "c")
                   .ok());
  EXPECT_TRUE(ParseUnitBigVganConfig(base + R"(, "causal": false, "upsample_rates": [4],
                                       "upsample_kernel_sizes": [7]})",
                                     "c")
                  .ok());
  auto missing = ParseUnitBigVganConfig(R"({"num_units": 6561})", "dir/config.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("dir/config.json: unit_emb_dim is missing"), std::string::npos)
      << missing.status().ToString();
}

TEST(KaiserSincFilterTest, IsASymmetricUnitSumLowPass) {
  const std::vector<float> f = ops::KaiserSincFilter(12, 0.25, 0.3);
  ASSERT_EQ(f.size(), 12u);
  double sum = 0;
  for (int i = 0; i < 12; ++i) {
    EXPECT_NEAR(f[i], f[11 - i], 1e-7);
    sum += f[i];
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

}  // namespace
}  // namespace omni::models
