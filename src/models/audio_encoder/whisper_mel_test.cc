#include "models/audio_encoder/whisper_mel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numbers>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base64.h"

namespace omni::models {
namespace {

// Tolerance against tools/reference/whisper_mel_ref.py (float64 throughout),
// on the output scale ((log10 + 4) / 4). We use float32 FFTs: each bin's power
// carries an error of about 1e-7 of the frame's largest power, and a low mel
// filter sums only 1-3 FFT bins, whose power (for noise, or near the clamp
// floor of 1e-8 of the clip's max) can be 1e-3 of the frame's largest or less:
// 1e-4 relative, ~5e-5 in log10, ~1e-5 on the output scale. Measured: 2.4e-5
// at most over the goldens; 1e-4 leaves a margin for other FFTW codelets
// (another CPU's SIMD) and still catches any error in the definition, which
// moves values by 1e-3 or more.
constexpr double kTolerance = 1e-4;

const nlohmann::json& Golden() {
  static const nlohmann::json golden = [] {
    std::ifstream in(std::string(OMNI_AUDIO_ENCODER_TESTDATA) + "/whisper_mel_golden.json");
    EXPECT_TRUE(in.good()) << "missing whisper_mel_golden.json";
    return nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }();
  return golden;
}

const nlohmann::json& Case(const std::string& name) {
  for (const auto& c : Golden()["cases"]) {
    if (c["name"] == name) return c;
  }
  ADD_FAILURE() << "no golden case " << name;
  static const nlohmann::json none;
  return none;
}

std::vector<float> StoredSamples(const nlohmann::json& c) {
  std::optional<std::string> bytes = Base64Decode(c["samples_f32le_b64"].get<std::string>());
  EXPECT_TRUE(bytes.has_value());
  std::vector<float> out(bytes->size() / sizeof(float));
  std::memcpy(out.data(), bytes->data(), out.size() * sizeof(float));  // little-endian hosts
  return out;
}

// The reference's lcg_noise: exact in float32, so regenerated bit for bit.
std::vector<float> LcgNoise(int64_t num_samples, int64_t loud_samples) {
  std::vector<float> out(num_samples);
  uint64_t state = 19;
  for (int64_t i = 0; i < num_samples; ++i) {
    state = (state * 1103515245u + 12345u) % (uint64_t{1} << 31);
    const double v = (static_cast<double>(state >> 7) - (1 << 23)) / (1 << 23);
    out[i] = static_cast<float>(v * (i < loud_samples ? 0.5 : 0.0625));
  }
  return out;
}

std::vector<float> Sine(int64_t num_samples, double hz) {
  std::vector<float> out(num_samples);
  for (int64_t i = 0; i < num_samples; ++i) {
    out[i] = static_cast<float>(0.5 * std::sin(2 * std::numbers::pi * hz * i / WhisperMel::kSampleRate));
  }
  return out;
}

// Compares `mel` with the reference's summary of it; returns the largest
// absolute difference seen.
double ExpectMatchesSummary(const Tensor& mel, const nlohmann::json& s, const std::string& what) {
  const int64_t frames = s["shape"][1].get<int64_t>();
  EXPECT_EQ(mel.shape(), (Shape{s["shape"][0].get<int64_t>(), frames})) << what;
  if (mel.dim(1) != frames) return INFINITY;
  const float* v = mel.data<float>();
  double max_diff = 0.0;
  auto check = [&](float got, double want, const std::string& where) {
    const double d = std::abs(got - want);
    max_diff = std::max(max_diff, d);
    EXPECT_LE(d, kTolerance) << what << " " << where << ": got " << got << ", want " << want;
  };
  const int64_t stride = s["stride"].get<int64_t>();
  const auto& strided = s["strided"];
  for (size_t j = 0; j < strided.size(); ++j) {
    check(v[j * stride], strided[j].get<double>(), "flat " + std::to_string(j * stride));
  }
  for (int m = 0; m < WhisperMel::kNumMels; ++m) {
    float lo = INFINITY, hi = -INFINITY;
    double sum = 0.0;
    for (int64_t t = 0; t < frames; ++t) {
      lo = std::min(lo, v[m * frames + t]);
      hi = std::max(hi, v[m * frames + t]);
      sum += v[m * frames + t];
    }
    check(lo, s["bin_min"][m].get<double>(), "min of bin " + std::to_string(m));
    check(hi, s["bin_max"][m].get<double>(), "max of bin " + std::to_string(m));
    check(static_cast<float>(sum / frames), s["bin_mean"][m].get<double>(), "mean of bin " + std::to_string(m));
    for (int f = 0; f < 2; ++f) {
      check(v[m * frames + f], s["head_frames"][f * WhisperMel::kNumMels + m].get<double>(),
            "frame " + std::to_string(f) + " bin " + std::to_string(m));
      const int64_t t = frames - 2 + f;
      check(v[m * frames + t], s["tail_frames"][f * WhisperMel::kNumMels + m].get<double>(),
            "frame " + std::to_string(t) + " bin " + std::to_string(m));
    }
  }
  return max_diff;
}

TEST(WhisperMelTest, FilterbankMatchesReference) {
  WhisperMel mel;
  std::span<const float> fb = mel.filterbank();
  ASSERT_EQ(fb.size(), size_t{128} * 201);
  for (const auto& w : Golden()["filterbank"]["samples"]) {
    const int k = w[0].get<int>(), m = w[1].get<int>();
    EXPECT_NEAR(fb[m * 201 + k], w[2].get<double>(), 1e-8) << "bin " << k << " filter " << m;
  }
  for (int m = 0; m < 128; ++m) {
    double sum = 0.0;
    for (int k = 0; k < 201; ++k) sum += fb[m * 201 + k];
    EXPECT_NEAR(sum, Golden()["filterbank"]["col_sums"][m].get<double>(), 1e-6) << "filter " << m;
  }
}

TEST(WhisperMelTest, Shapes) {
  WhisperMel mel;
  for (auto [seconds, frames] : {std::pair{1.0, 100}, {3.0, 300}, {30.0, 3000}}) {
    StatusOr<Tensor> m = mel.Compute(Sine(static_cast<int64_t>(seconds * 16000), 440.0));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->shape(), (Shape{128, frames})) << seconds << " s";
    EXPECT_EQ(m->dtype(), DType::kF32);
  }
  // A partial hop adds no frame; the smallest clip gives one.
  EXPECT_EQ(mel.Compute(Sine(16000 + 159, 440.0))->dim(1), 100);
  EXPECT_EQ(mel.Compute(Sine(201, 440.0))->dim(1), 1);
  EXPECT_EQ(WhisperMel::NumFrames(480000), 3000);
}

TEST(WhisperMelTest, SilenceIsTheFloor) {
  WhisperMel mel;
  StatusOr<Tensor> m = mel.Compute(std::vector<float>(16000, 0.0f));
  ASSERT_TRUE(m.ok());
  for (float v : m->ToFloats()) ASSERT_EQ(v, (-10.0f + 4.0f) / 4.0f);
}

TEST(WhisperMelTest, MatchesReference) {
  WhisperMel mel;
  for (const char* name : {"sine_mix_1s", "chirp_3s"}) {
    const nlohmann::json& c = Case(name);
    StatusOr<Tensor> m = mel.Compute(StoredSamples(c));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const double d = ExpectMatchesSummary(*m, c["whole"], name);
    std::printf("%s: max abs diff vs reference %.3g\n", name, d);
  }
  const nlohmann::json& c = Case("lcg_noise_32_5s");
  std::vector<float> noise = LcgNoise(c["lcg_noise"]["num_samples"].get<int64_t>(),
                                      c["lcg_noise"]["loud_samples"].get<int64_t>());
  StatusOr<Tensor> m = mel.Compute(noise);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const double d = ExpectMatchesSummary(*m, c["whole"], "lcg_noise_32_5s");
  std::printf("lcg_noise_32_5s (whole clip): max abs diff vs reference %.3g\n", d);
}

TEST(WhisperMelTest, ChunksMatchReference) {
  WhisperMel mel;
  const nlohmann::json& c = Case("lcg_noise_32_5s");
  std::vector<float> noise = LcgNoise(c["lcg_noise"]["num_samples"].get<int64_t>(),
                                      c["lcg_noise"]["loud_samples"].get<int64_t>());
  StatusOr<std::vector<WhisperMelChunk>> chunks = mel.ComputeChunks(noise);
  ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
  ASSERT_EQ(chunks->size(), c["chunks"].size());
  for (size_t i = 0; i < chunks->size(); ++i) {
    const auto& want = c["chunks"][i];
    EXPECT_EQ((*chunks)[i].valid_frames, want["valid_frames"].get<int64_t>()) << "chunk " << i;
    const double d = ExpectMatchesSummary((*chunks)[i].mel, want, "chunk " + std::to_string(i));
    std::printf("lcg_noise_32_5s chunk %zu: max abs diff vs reference %.3g\n", i, d);
  }
}

TEST(WhisperMelTest, ChunkBoundaries) {
  WhisperMel mel;
  struct Want {
    int64_t samples;
    std::vector<int64_t> valid;
  };
  for (const Want& w : {Want{1, {1}}, Want{16000, {100}}, Want{480000, {3000}}, Want{480001, {3000, 1}},
                        Want{720000, {3000, 1500}}, Want{960000 + 161, {3000, 3000, 2}}}) {
    StatusOr<std::vector<WhisperMelChunk>> chunks = mel.ComputeChunks(Sine(w.samples, 440.0));
    ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
    ASSERT_EQ(chunks->size(), w.valid.size()) << w.samples << " samples";
    for (size_t i = 0; i < chunks->size(); ++i) {
      EXPECT_EQ((*chunks)[i].mel.shape(), (Shape{128, 3000}));
      EXPECT_EQ((*chunks)[i].valid_frames, w.valid[i]) << w.samples << " samples, chunk " << i;
    }
  }
  // A full 30 s piece is exactly Compute of those samples.
  std::vector<float> sine = Sine(480000, 440.0);
  Tensor whole = *mel.Compute(sine);
  EXPECT_EQ(mel.ComputeChunks(sine)->at(0).mel.ToFloats(), whole.ToFloats());
  // A short piece is Compute of the piece up to the frames that reach its
  // end (reflection there, zeros in the chunk), when the padding does not
  // raise the max.
  std::vector<float> one = Sine(16000, 440.0);
  Tensor short_whole = *mel.Compute(one);
  Tensor chunk = mel.ComputeChunks(one)->at(0).mel;
  for (int m = 0; m < 128; ++m) {
    for (int t = 0; t * 160 + 200 <= 16000; ++t) {
      ASSERT_EQ(chunk.GetFloat(m * 3000 + t), short_whole.GetFloat(m * 100 + t)) << "bin " << m << " frame " << t;
    }
  }
}

TEST(WhisperMelTest, RefusesBadInput) {
  WhisperMel mel;
  StatusOr<Tensor> empty = mel.Compute({});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(mel.Compute(Sine(200, 440.0)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(mel.ComputeChunks({}).status().code(), StatusCode::kInvalidArgument);
  std::vector<float> nan = Sine(16000, 440.0);
  nan[1234] = std::nanf("");
  EXPECT_EQ(mel.Compute(nan).status().code(), StatusCode::kInvalidArgument);
  nan[1234] = INFINITY;
  EXPECT_EQ(mel.ComputeChunks(nan).status().code(), StatusCode::kInvalidArgument);
}

TEST(WhisperMelTest, ConcurrentCallsAgree) {
  WhisperMel mel;
  std::vector<float> chirp = StoredSamples(Case("chirp_3s"));
  std::vector<float> noise = LcgNoise(500000, 250000);
  const std::vector<float> want_chirp = mel.Compute(chirp)->ToFloats();
  const std::vector<float> want_chunk = mel.ComputeChunks(noise)->at(1).mel.ToFloats();
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int r = 0; r < 5; ++r) {
        if (mel.Compute(chirp)->ToFloats() != want_chirp) ++mismatches[i];
        if (mel.ComputeChunks(noise)->at(1).mel.ToFloats() != want_chunk) ++mismatches[i];
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(mismatches[i], 0) << "thread " << i;
}

}  // namespace
}  // namespace omni::models
