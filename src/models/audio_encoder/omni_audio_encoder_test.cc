// The Omni audio encoder (log-mel, Qwen2-Audio encoder + projector, S3
// tokenizer) against tools/reference/audio_encoder_ref.py, an independent
// PyTorch implementation, on the demo weights: continuous rows within a
// tolerance (both sides round every projection and conv input to bf16 and
// accumulate in f32; what differs is the order of summation and the bf16
// roundings it flips), S3 ids equal wherever every FSQ digit of the
// reference is clearly (kIdMargin) away from a rounding boundary. The input clips are
// regenerated here from the formula the reference documents, and checked
// against the reference's first samples and sample sum first.
#include "models/audio_encoder/omni_audio_encoder.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>

#include <nlohmann/json.hpp>

#include "models/audio_encoder/demo_audio_encoder.h"
#include "storage/content_hash.h"

namespace omni::models {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

nlohmann::json Golden() {
  return nlohmann::json::parse(ReadFile(std::string(OMNI_AUDIO_ENCODER_TESTDATA) + "/encoder_golden.json"));
}

// The reference's test signal (audio_encoder_ref.py): two tones, a chirp and
// LCG noise, silent from 1.0 to 1.5 s, quantised to int16.
std::vector<int16_t> TestSignal(double seconds, uint64_t seed) {
  const int64_t n = std::llround(seconds * 16000);
  std::vector<int16_t> out(n);
  uint64_t state = seed;
  const double pi = std::numbers::pi;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double noise = static_cast<double>(state >> 40) / 16777216.0 * 2 - 1;
    const double t = static_cast<double>(i) / 16000;
    double y = 0;
    if (t < 1.0 || t >= 1.5) {
      y = 0.5 * std::sin(2 * pi * 220 * t) * (0.6 + 0.4 * std::sin(2 * pi * 0.5 * t)) +
          0.25 * std::sin(2 * pi * (300 + 400 * t / seconds) * t) + 0.05 * noise;
    }
    out[i] = static_cast<int16_t>(std::clamp<double>(std::round(32767 * y), -32768, 32767));
  }
  return out;
}

std::vector<float> ToFloat(const std::vector<int16_t>& s) {
  std::vector<float> out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = static_cast<float>(s[i]) / 32768.f;
  return out;
}

class OmniAudioEncoderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string((fs::temp_directory_path() / ("omni_audio_test." + std::to_string(::getpid()))).string());
    ASSERT_TRUE(WriteDemoAudioEncoder(DemoAudioEncoderSpec{}, *dir_).ok());
    auto encoder = OmniAudioEncoder::Load(*dir_);
    ASSERT_TRUE(encoder.ok()) << encoder.status().ToString();
    encoder_ = encoder->release();
  }
  static void TearDownTestSuite() {
    delete encoder_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string* dir_;
  static OmniAudioEncoder* encoder_;
};
std::string* OmniAudioEncoderTest::dir_ = nullptr;
OmniAudioEncoder* OmniAudioEncoderTest::encoder_ = nullptr;

// The case's clip, checked to be the reference's.
std::vector<float> CaseClip(const nlohmann::json& c) {
  const std::vector<int16_t> s = TestSignal(c["seconds"].get<double>(), c["seed"].get<uint64_t>());
  EXPECT_EQ(static_cast<int64_t>(s.size()), c["num_samples"].get<int64_t>());
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(s[i], c["first_samples"][i].get<int>()) << i;
  int64_t sum = 0;
  for (int16_t v : s) sum += v;
  EXPECT_EQ(sum, c["sample_sum"].get<int64_t>());
  return ToFloat(s);
}

// An FSQ digit within this distance of a rounding boundary may round either
// way: the reference measured that a one-ulp change of the mel, carried
// through the bf16 roundings, moves digits by up to 0.019 (audio_encoder_ref.py).
constexpr double kIdMargin = 0.03;

void ExpectMatchesGolden(const AudioEncoding& e, const nlohmann::json& c) {
  const std::string name = c["name"].get<std::string>();
  const auto& cont = c["continuous"];
  ASSERT_EQ(e.rows.dim(0), cont["num_rows"].get<int64_t>());
  ASSERT_EQ(e.rows.dim(1), cont["width"].get<int64_t>());
  const int64_t width = e.rows.dim(1);
  const float* rows = e.rows.data<float>();
  double abs_max = 0, worst = 0;
  for (const auto& row : cont["rows"]) {
    for (const auto& v : row) abs_max = std::max(abs_max, std::fabs(v.get<double>()));
  }
  const auto& checked = cont["checked_rows"];
  for (size_t i = 0; i < checked.size(); ++i) {
    const int64_t r = checked[i].get<int64_t>();
    for (int64_t j = 0; j < width; ++j) {
      worst = std::max(worst, std::fabs(rows[r * width + j] - cont["rows"][i][j].get<double>()));
    }
  }
  // Every row's norm, so no row goes unchecked.
  double worst_norm = 0;
  for (int64_t r = 0; r < e.rows.dim(0); ++r) {
    double ss = 0;
    for (int64_t j = 0; j < width; ++j) ss += static_cast<double>(rows[r * width + j]) * rows[r * width + j];
    const double ref = cont["row_norms"][r].get<double>();
    worst_norm = std::max(worst_norm, std::fabs(std::sqrt(ss) - ref) / ref);
  }
  // 1% of the largest magnitude: a wrong block, order or mask is off by the
  // magnitude itself; measured differences are printed below.
  EXPECT_LE(worst, 1e-2 * abs_max);
  EXPECT_LE(worst_norm, 1e-2);
  std::printf("%s: %ld rows, max |diff| %.3g (%.3g of the largest value), worst row norm %.3g relative\n",
              name.c_str(), static_cast<long>(e.rows.dim(0)), worst, worst / abs_max, worst_norm);

  const auto& disc = c["discrete"];
  ASSERT_EQ(e.ids.size(), disc["ids"].size());
  int64_t compared = 0, equal = 0;
  for (size_t i = 0; i < e.ids.size(); ++i) {
    EXPECT_GE(e.ids[i], 0);
    EXPECT_LT(e.ids[i], 6561);
    if (disc["margins"][i].get<double>() < kIdMargin) continue;
    ++compared;
    equal += e.ids[i] == disc["ids"][i].get<int32_t>();
  }
  EXPECT_EQ(equal, compared);
  EXPECT_GE(compared, static_cast<int64_t>(e.ids.size() * 8 / 10));
  std::printf("%s: %zu ids, equal %ld of %ld compared (every digit 0.03 or more from a rounding boundary)\n",
              name.c_str(), e.ids.size(), static_cast<long>(equal), static_cast<long>(compared));
}

TEST_F(OmniAudioEncoderTest, MatchesThePyTorchReference) {
  const nlohmann::json golden = Golden();
  // The goldens were made from these very weights.
  ASSERT_EQ(Sha256Hex(ReadFile(*dir_ + "/model.safetensors")), golden["weights_sha256"].get<std::string>());
  EXPECT_EQ(encoder_->output_width(), 128);
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const std::vector<float> clip = CaseClip(c);
    auto e = encoder_->Encode(clip);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ExpectMatchesGolden(*e, c);
    EXPECT_EQ(e->rows.dim(0), OmniAudioEncoder::ContinuousRows(std::ssize(clip)));
    EXPECT_EQ(std::ssize(e->ids), OmniAudioEncoder::DiscreteIds(std::ssize(clip)));
  }
}

// The shapes: 25 rows and ids per second; a 45 s clip in two 30 s
// chunks (750 + 375 rows); an 85 s clip in three chunks (750 + 750 + 625 rows) and two 80 s pieces (2000 + 125 ids).
TEST(OmniAudioEncoderShapes, RowsAndIdsPerSecond) {
  EXPECT_EQ(OmniAudioEncoder::ContinuousRows(48000), 75);
  EXPECT_EQ(OmniAudioEncoder::DiscreteIds(48000), 75);
  EXPECT_EQ(OmniAudioEncoder::ContinuousRows(21920), 34);
  EXPECT_EQ(OmniAudioEncoder::DiscreteIds(21920), 35);
  EXPECT_EQ(OmniAudioEncoder::ContinuousRows(45 * 16000), 750 + 375);
  EXPECT_EQ(OmniAudioEncoder::DiscreteIds(45 * 16000), 1125);
  EXPECT_EQ(OmniAudioEncoder::ContinuousRows(85 * 16000), 750 + 750 + 625);
  EXPECT_EQ(OmniAudioEncoder::DiscreteIds(85 * 16000), 2000 + 125);
  EXPECT_EQ(OmniAudioEncoder::ContinuousRows(30 * 16000), 750);
  EXPECT_EQ(OmniAudioEncoder::ContinuousRows(30 * 16000 + 1), 750);  // the 1-sample chunk keeps no row
}

TEST_F(OmniAudioEncoderTest, RefusesClipsTooShort) {
  const std::vector<float> short_clip(800, 0.1f);
  auto e = encoder_->Encode(short_clip);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("0.050 s"), std::string::npos) << e.status().message();
}

// The encoder server's batching: several clips of different lengths in one
// continuous forward give what each gives alone.
TEST_F(OmniAudioEncoderTest, BatchEqualsOneByOne) {
  const std::vector<float> a = ToFloat(TestSignal(3.0, 1)), b = ToFloat(TestSignal(1.37, 2));
  const std::vector<float> c = ToFloat(TestSignal(31.0, 5));
  const std::span<const float> clips[] = {a, b, c};
  auto batch = encoder_->EncodeBatch(clips);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    auto one = encoder_->Encode(clips[i]);
    ASSERT_TRUE(one.ok());
    EXPECT_EQ((*batch)[i].ids, one->ids);
    ASSERT_EQ((*batch)[i].rows.dim(0), one->rows.dim(0));
    double worst = 0, abs_max = 0;
    for (int64_t j = 0; j < one->rows.numel(); ++j) {
      const float alone = one->rows.data<float>()[j];
      worst = std::max(worst, static_cast<double>(std::fabs((*batch)[i].rows.data<float>()[j] - alone)));
      abs_max = std::max(abs_max, static_cast<double>(std::fabs(alone)));
    }
    // A batch's GEMMs have more rows, so the library may block their sums
    // differently and flip an intermediate's bf16 rounding, as in the vision
    // encoder's batch test: within the tolerance against the reference.
    EXPECT_LE(worst, 1e-2 * abs_max) << i;
    std::printf("clip %zu: batched vs alone: rows max |diff| %.3g of the largest value, ids equal\n", i,
                worst / abs_max);
  }
}

}  // namespace
}  // namespace omni::models
