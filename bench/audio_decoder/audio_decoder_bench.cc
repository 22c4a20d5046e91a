// audio_decoder_bench: the unit BigVGAN vocoder's CPU numbers for
// docs/PERFORMANCE.md (bench/audio_decoder/run.sh adds PyTorch on the same
// weights, the served decoder and time to first audio).
//   BM_Vocode10s        250 units (10 s) with the `bench` preset: time, real-time factor
//   BM_Batch8x2s        8 clips of 29..50 units, as one [8, 64] forward and as eight [1, 64] ones
//   BM_SpeakerFromClip5s  the zero-shot companion's speaker vector from a 5 s clip (high-pass,
//                       log-mel, ECAPA-TDNN), steady and for a clip length never seen before
// The preset's weights are written to $OMNI_BENCH_AD_DIR when set (run.sh
// points PyTorch at the same folder), else to a temp folder.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/check.h"
#include "models/audio_decoder/demo_audio_decoder.h"
#include "models/audio_decoder/unit_bigvgan.h"

namespace omni {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// The preset's folder; `sub` "" for the table vocoder, "zeroshot" for its companion.
const models::UnitBigVgan* LoadBench(const std::string& sub) {
  const char* env = std::getenv("OMNI_BENCH_AD_DIR");
  const std::string dir = env != nullptr ? env
                                         : (std::filesystem::temp_directory_path() /
                                            ("audio_decoder_bench." + std::to_string(::getpid())))
                                               .string();
  if (!std::filesystem::exists(dir + "/model.safetensors")) {
    OMNI_CHECK(models::WriteDemoAudioDecoder(models::BenchAudioDecoderSpec(), dir).ok());
  }
  auto v = models::UnitBigVgan::Load(sub.empty() ? dir : dir + "/" + sub);
  OMNI_CHECK(v.ok()) << v.status().ToString();
  if (env == nullptr) std::filesystem::remove_all(dir);
  return v->release();
}

const models::UnitBigVgan& Vocoder() {
  static const models::UnitBigVgan* vocoder = LoadBench("");
  return *vocoder;
}

// The reference's unit sequence (tools/reference/audio_decoder_ref.py).
std::vector<int32_t> Units(int n, int offset = 0) {
  std::vector<int32_t> u(n);
  for (int t = 0; t < n; ++t) u[t] = static_cast<int32_t>(((t + offset) * 2731 + 17) % 6561);
  return u;
}

void BM_Vocode10s(benchmark::State& state) {
  const models::UnitBigVgan& v = Vocoder();
  const Tensor speaker = *v.SpeakerRow(0);
  const std::vector<int32_t> units = Units(250);
  (void)v.Vocode(units, speaker);  // primitives built
  double seconds = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    auto wav = v.Vocode(units, speaker);
    seconds += Seconds(a, Clock::now());
    benchmark::DoNotOptimize(wav->data());
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["vocode_10s_ms"] = seconds / n * 1e3;
  state.counters["real_time_factor"] = seconds / n / 10;
}
BENCHMARK(BM_Vocode10s)->Unit(benchmark::kMillisecond)->Iterations(3);

// The forward itself, batched or not: 8 clips of 29..50 units as one
// [8, 64] forward (rows right-padded, each ending at its own length) against
// eight [1, 64] forwards. VocodeBatch runs the latter (unit_bigvgan.h).
void BM_Batch8x2s(benchmark::State& state) {
  const models::UnitBigVgan& v = Vocoder();
  constexpr int64_t kRows = 8, kWindow = 64;
  Tensor ids = Tensor::Zeros({kRows, kWindow}, DType::kI64);
  Tensor speakers = Tensor::Empty({kRows, v.config().spk_emb_dim}, DType::kF32);
  std::vector<int64_t> lengths;
  for (int64_t r = 0; r < kRows; ++r) {
    const std::vector<int32_t> units = Units(50 - 3 * static_cast<int>(r), 100 * static_cast<int>(r));
    std::copy(units.begin(), units.end(), ids.data<int64_t>() + r * kWindow);
    lengths.push_back(std::ssize(units));
    const Tensor s = *v.SpeakerRow(r % 4);
    std::copy_n(s.data<float>(), s.numel(), speakers.data<float>() + r * s.numel());
  }
  auto row = [&](int64_t r) {
    return v.Forward(ids.Slice(0, r, r + 1).Contiguous(), speakers.Slice(0, r, r + 1).Contiguous(),
                     std::span<const int64_t>(&lengths[static_cast<size_t>(r)], 1));
  };
  (void)v.Forward(ids, speakers, lengths);  // primitives built for both shapes
  (void)row(0);
  double batched = 0, single = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    benchmark::DoNotOptimize(v.Forward(ids, speakers, lengths).raw_data());
    batched += Seconds(a, Clock::now());
    a = Clock::now();
    for (int64_t r = 0; r < kRows; ++r) benchmark::DoNotOptimize(row(r).raw_data());
    single += Seconds(a, Clock::now());
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["batched_ms"] = batched / n * 1e3;
  state.counters["one_at_a_time_ms"] = single / n * 1e3;
  state.counters["batch_speedup"] = single / batched;
}
BENCHMARK(BM_Batch8x2s)->Unit(benchmark::kMillisecond)->Iterations(2);

// A voice-like clip of `seconds` at 24 kHz (torch_speaker.py's formula).
std::vector<float> Clip(double seconds) {
  std::vector<float> x(static_cast<size_t>(seconds * 24000));
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>(i) / 24000;
    x[i] = static_cast<float>(0.3 * std::sin(2 * M_PI * 180 * t) * (0.6 + 0.4 * std::sin(2 * M_PI * 3 * t)));
  }
  return x;
}

void BM_SpeakerFromClip5s(benchmark::State& state) {
  static const models::UnitBigVgan* zero_shot = LoadBench("zeroshot");
  const std::vector<float> clip = Clip(5.0);
  // A length never seen: whatever per-shape setup the encoder has is in this time.
  auto a = Clock::now();
  OMNI_CHECK(zero_shot->SpeakerFromClip(Clip(5.37)).ok());
  const double first = Seconds(a, Clock::now());
  double seconds = 0;
  for (auto _ : state) {
    a = Clock::now();
    auto v = zero_shot->SpeakerFromClip(clip);
    seconds += Seconds(a, Clock::now());
    OMNI_CHECK(v.ok());
    benchmark::DoNotOptimize(v->raw_data());
  }
  state.counters["clip_5s_ms"] = seconds / static_cast<double>(state.iterations()) * 1e3;
  state.counters["new_length_5_37s_ms"] = first * 1e3;
}
BENCHMARK(BM_SpeakerFromClip5s)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace omni

BENCHMARK_MAIN();
