// audio_bench: the audio encoder's CPU numbers for docs/PERFORMANCE.md
// (bench/audio/run.sh adds torchaudio's log-mel and the served encoder).
//   BM_LogMel30s        Whisper's log-mel of a 30 s clip (WhisperMel::Compute, one thread)
//   BM_AudioEncoder30s  both branches of the `bench` preset (released widths, few layers) on a
//                       30 s clip: time per branch, real-time factor, GFLOP/s against this
//                       machine's bf16 GEMM rate
//   BM_VideoDecode      DecodeVideo on $OMNI_BENCH_VIDEO (run.sh makes a 640x360 h264 clip):
//                       sampled frames/s and decoded frames/s
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <numbers>
#include <vector>

#include "core/check.h"
#include "media/video.h"
#include "models/audio_encoder/demo_audio_encoder.h"
#include "models/audio_encoder/omni_audio_encoder.h"
#include "ops/linear.h"

namespace omni {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// 30 s of a voiced-like signal: a 150 Hz pulse train through a few formants, plus noise.
std::vector<float> Clip(double seconds) {
  const int64_t n = std::llround(seconds * 16000);
  std::vector<float> x(n);
  uint64_t state = 42;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double t = i / 16000.0, noise = static_cast<double>(state >> 40) / 16777216.0 - 0.5;
    x[i] = static_cast<float>(0.3 * std::sin(2 * std::numbers::pi * 150 * t) * std::sin(2 * std::numbers::pi * 700 * t) +
                              0.1 * std::sin(2 * std::numbers::pi * 2400 * t) + 0.02 * noise);
  }
  return x;
}

Tensor Filled(const Shape& shape, DType dtype, float v) {
  Tensor f = Tensor::Empty(shape, DType::kF32);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = v;
  return f.To(dtype);
}

// bf16 GEMM rate of this machine now: GFLOP/s of an encoder-shaped Linear.
double GemmGflops() {
  ops::Linear w(Filled({5120, 1280}, DType::kBF16, 0.02f));
  Tensor x = Filled({1500, 1280}, DType::kF32, 1.f);
  w.Forward(x, DType::kF32);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    auto a = Clock::now();
    benchmark::DoNotOptimize(w.Forward(x, DType::kF32).raw_data());
    best = std::max(best, 2.0 * 1500 * 1280 * 5120 / Seconds(a, Clock::now()) / 1e9);
  }
  return best;
}

const std::string& BenchDir() {
  static const std::string dir = [] {
    std::string d = (std::filesystem::temp_directory_path() / ("audio_bench." + std::to_string(::getpid()))).string();
    OMNI_CHECK(models::WriteDemoAudioEncoder(models::BenchAudioEncoderSpec(4096), d).ok());
    std::atexit([] { std::filesystem::remove_all(BenchDir()); });
    return d;
  }();
  return dir;
}

void BM_LogMel30s(benchmark::State& state) {
  const std::vector<float> clip = Clip(30);
  models::WhisperMel mel;
  double seconds = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    auto m = mel.Compute(clip);
    seconds += Seconds(a, Clock::now());
    benchmark::DoNotOptimize(m->raw_data());
  }
  state.counters["logmel_ms"] = seconds / state.iterations() * 1e3;
}
BENCHMARK(BM_LogMel30s)->Unit(benchmark::kMillisecond)->Iterations(20);

// FLOPs of one 30 s chunk through the continuous branch (1500 positions, 750
// rows) and of 30 s through the S3 tokenizer (750 tokens), GEMMs, convs and
// attention.
double ContinuousFlops(const models::DemoAudioEncoderSpec& s) {
  const double d = s.d_model, f = s.ffn_dim, t = 1500, rows = 750;
  double flops = 2 * 3000 * 128 * 3 * d + 2 * t * d * 3 * d;
  flops += s.layers * (2 * t * d * 4 * d + 2 * 2 * t * d * f + 2 * 2 * t * t * d);
  flops += 2 * rows * d * d + 2 * rows * d * static_cast<double>(s.llm_hidden_size);
  return flops;
}
double DiscreteFlops(const models::DemoAudioEncoderSpec& s) {
  const double w = 64.0 * s.s3_heads, t = 750;
  double flops = 2 * 1500 * 128 * 3 * w + 2 * t * w * 3 * w;
  flops += s.s3_layers * (2 * t * w * 4 * w + 2 * 2 * t * w * 4 * w + 2 * 2 * t * t * w + 2 * t * w * 31);
  return flops;
}

void BM_AudioEncoder30s(benchmark::State& state) {
  auto encoder = models::OmniAudioEncoder::Load(BenchDir());
  OMNI_CHECK(encoder.ok()) << encoder.status().ToString();
  const std::vector<float> clip = Clip(30);
  (void)(*encoder)->Encode(clip);  // warm the primitive caches
  const double gemm = GemmGflops();
  double total = 0, continuous = 0, discrete = 0;
  Clock::time_point last;
  const models::ActivationCallback timer = [&](std::string_view name, const Tensor&) {
    if (name == "continuous.convs") last = Clock::now();
    if (name == "continuous.rows") continuous += Seconds(last, Clock::now());
    if (name == "discrete.convs") last = Clock::now();
    if (name == "discrete.fsq") discrete += Seconds(last, Clock::now());
  };
  for (auto _ : state) {
    auto a = Clock::now();
    auto e = (*encoder)->Encode(clip, &timer);
    total += Seconds(a, Clock::now());
    benchmark::DoNotOptimize(e->rows.raw_data());
  }
  const double n = static_cast<double>(state.iterations());
  const models::DemoAudioEncoderSpec spec = models::BenchAudioEncoderSpec(4096);
  state.counters["encode_30s_ms"] = total / n * 1e3;
  state.counters["real_time_factor"] = total / n / 30;
  state.counters["continuous_ms"] = continuous / n * 1e3;
  state.counters["discrete_ms"] = discrete / n * 1e3;
  state.counters["continuous_GFLOPs"] = ContinuousFlops(spec) / (continuous / n) / 1e9;
  state.counters["discrete_GFLOPs"] = DiscreteFlops(spec) / (discrete / n) / 1e9;
  state.counters["gemm_GFLOPs"] = gemm;
  state.counters["continuous_fraction_of_gemm"] = ContinuousFlops(spec) / (continuous / n) / 1e9 / gemm;
  state.counters["discrete_fraction_of_gemm"] = DiscreteFlops(spec) / (discrete / n) / 1e9 / gemm;
}
BENCHMARK(BM_AudioEncoder30s)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_VideoDecode(benchmark::State& state) {
  const char* path = std::getenv("OMNI_BENCH_VIDEO");
  if (path == nullptr) {
    state.SkipWithError("OMNI_BENCH_VIDEO names no video (bench/audio/run.sh makes one)");
    return;
  }
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  double seconds = 0;
  int64_t sampled = 0, decoded = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    auto v = media::DecodeVideo(bytes);
    seconds += Seconds(a, Clock::now());
    OMNI_CHECK(v.ok()) << v.status().ToString();
    sampled += std::ssize(v->frames);
    decoded += v->total_frames;
  }
  state.counters["sampled_frames_per_s"] = sampled / seconds;
  state.counters["decoded_frames_per_s"] = decoded / seconds;
  state.counters["decode_ms"] = seconds / state.iterations() * 1e3;
}
BENCHMARK(BM_VideoDecode)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace omni

BENCHMARK_MAIN();
