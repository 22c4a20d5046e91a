// One binary, one run, ratios printed as counters (docs/OPS.md, "Benchmarks"):
//  - BM_LinearVsDnnl: ops::Linear::Forward against a hand-written oneDNN
//    matmul on the same packed weights, the two interleaved in every
//    iteration; overhead_pct = (ours / direct - 1) * 100.
//  - BM_DecodeBandwidth: a multithreaded streaming sum over 1 GiB (the
//    machine's read bandwidth) and the M=1 bf16 Linear's weight bytes / time,
//    cycling 8 layers (256 MiB) so weights come from DRAM, not cache.
//  - BM_StreamRead: the streaming sum alone.
//  - BM_DecodeStepGemv: the same for one decode step of the `bench` demo
//    model's shapes (48 matmuls and the lm_head, 400 MiB), on OpenMP
//    (team:0) and on the LLM engine's spin team (team:1).
//  - BM_GemvFromMemory: the M=1 GEMV of one of those shapes, from memory.
//  - BM_GemvInCache: the M=1 GEMV on weights already in cache (the
//    level's arithmetic ceiling for decode, plus the call's fixed cost).
//  - BM_LinearCallCost: the fixed cost of one M=1 Linear call, on weights
//    too small to matter, on OpenMP (team:0) and on the spin team (team:1).
//  - BM_AttentionPrefill: causal self-attention, 16 heads x 128 dim, bf16.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/huge_buffer.h"
#include "backend/cpu/kernels.h"
#include "ops/attention.h"
#include "ops/linear.h"
#include "ops/threading.h"

namespace omni {
namespace {

using Clock = std::chrono::steady_clock;

Tensor Filled(const Shape& shape, DType dtype, float scale) {
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.37f * static_cast<float>(i % 9973));
  return Tensor::FromFloats(v, shape, dtype);
}

// The baseline: what a caller writing oneDNN by hand would do.
class DirectDnnlLinear {
 public:
  DirectDnnlLinear(const Tensor& w, int64_t m, DType act)
      : eng_(dnnl::engine::kind::cpu, 0), stream_(eng_) {
    using dnnl::memory;
    const int64_t n = w.dim(0), k = w.dim(1);
    auto wdt = w.dtype() == DType::kBF16 ? memory::data_type::bf16 : memory::data_type::f32;
    auto adt = act == DType::kBF16 ? memory::data_type::bf16 : memory::data_type::f32;
    memory::desc src({m, k}, wdt, memory::format_tag::ab);
    memory::desc wei({k, n}, wdt, memory::format_tag::any);
    memory::desc dst({m, n}, adt, memory::format_tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), eng_);
    prim_ = dnnl::matmul(pd);
    memory user({{k, n}, wdt, memory::format_tag::ba}, eng_, w.raw_data());
    wei_ = memory(pd.weights_desc(), eng_);
    dnnl::reorder(user, wei_).execute(stream_, user, wei_);
    src_buf_ = Tensor::Zeros({m, k}, w.dtype());
    dst_buf_ = Tensor::Zeros({m, n}, act);
    src_ = memory(src, eng_, src_buf_.raw_data());
    dst_ = memory(dst, eng_, dst_buf_.raw_data());
  }
  void Run() {
    prim_.execute(stream_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, dst_}});
    stream_.wait();
  }

 private:
  dnnl::engine eng_;
  dnnl::stream stream_;
  dnnl::matmul prim_;
  dnnl::memory wei_, src_, dst_;
  Tensor src_buf_, dst_buf_;
};

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Args: M, weight dtype (0 f32, 1 bf16). Activations share the weight dtype
// so both sides do identical work; N = K = 4096.
void BM_LinearVsDnnl(benchmark::State& state) {
  const int64_t m = state.range(0), nk = 4096;
  const DType dt = state.range(1) ? DType::kBF16 : DType::kF32;
  Tensor w = Filled({nk, nk}, dt, 0.02f);
  ops::Linear ours(w);
  DirectDnnlLinear direct(w, m, dt);
  Tensor x = Filled({m, nk}, dt, 1.f);
  ours.Forward(x);  // warm the primitive cache
  direct.Run();
  double t_ours = 0, t_direct = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    Tensor y = ours.Forward(x);
    benchmark::DoNotOptimize(y.raw_data());
    auto b = Clock::now();
    direct.Run();
    auto c = Clock::now();
    t_ours += Seconds(a, b);
    t_direct += Seconds(b, c);
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["ours_us"] = t_ours / iters * 1e6;
  state.counters["dnnl_us"] = t_direct / iters * 1e6;
  state.counters["overhead_pct"] = (t_ours / t_direct - 1) * 100;
  state.counters["ours_GFLOPs"] = 2.0 * m * nk * nk / (t_ours / iters) / 1e9;
}
BENCHMARK(BM_LinearVsDnnl)
    ->ArgsProduct({{1, 16, 512}, {1, 0}})
    ->ArgNames({"M", "bf16"})
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(1.0);

// Multithreaded streaming read: GB/s of reading the buffer, best of
// `passes`, with the best kernel level this CPU has whatever OMNI_CPU_ISA
// says (the bound is the hardware's, not the level's).
double StreamReadGBps(const float* data, int64_t n, int passes) {
  const cpu::CpuKernels& k = *cpu::KernelsFor(cpu::ActiveIsa().best);
  double best = 0;
  for (int p = 0; p < passes; ++p) {
    auto a = Clock::now();
    uint64_t total = 0;
#pragma omp parallel for num_threads(ops::NumThreads()) reduction(| : total)
    for (int64_t blk = 0; blk < n; blk += 1 << 16) total |= k.stream_read(data + blk, (1 << 16) * 4);
    benchmark::DoNotOptimize(total);
    best = std::max(best, n * 4.0 / Seconds(a, Clock::now()) / 1e9);
  }
  return best;
}

// 1 GiB on huge pages for the streaming bound, touched once so no page
// fault lands in a reading.
struct StreamBuffer {
  static constexpr int64_t kFloats = int64_t{1} << 28;
  cpu::HugeBuffer buffer{kFloats * sizeof(float)};
  StreamBuffer() { std::fill_n(data(), kFloats, 1.f); }
  float* data() { return static_cast<float*>(buffer.data()); }
  // The bound now; then a pause, since libgomp's workers spin some 5 ms
  // after the read's OpenMP region and would share the cores with the spin
  // team's loops timed next.
  double ReadAndSettle() {
    const double gbps = StreamReadGBps(data(), kFloats, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return gbps;
  }
};

void BM_DecodeBandwidth(benchmark::State& state) {
  const int64_t nk = 4096;
  constexpr int kLayers = 8;  // 8 x 32 MiB of bf16 weights: far beyond any cache here
  std::vector<ops::Linear> layers;
  for (int i = 0; i < kLayers; ++i) layers.emplace_back(Filled({nk, nk}, DType::kBF16, 0.02f + i * 1e-3f));
  Tensor x = Filled({1, nk}, DType::kBF16, 1.f);
  for (auto& l : layers) l.Forward(x);
  // 1 GiB (Tensor storage is 64-byte aligned), touched once so no page
  // faults land in the measurement.
  // on the same huge pages as the packed weights, so the bound is the best
  // this machine reads.
  const int64_t big_n = int64_t{1} << 28;
  cpu::HugeBuffer big(big_n * sizeof(float));
  float* big_data = static_cast<float*>(big.data());
  std::fill_n(big_data, big_n, 1.f);
  // The same decode step written directly against oneDNN, for comparison.
  std::vector<std::unique_ptr<DirectDnnlLinear>> direct;
  for (int i = 0; i < kLayers; ++i) {
    direct.push_back(std::make_unique<DirectDnnlLinear>(Filled({nk, nk}, DType::kBF16, 0.02f), 1, DType::kBF16));
  }
  double stream_gbps = 0, linear_time = 0, direct_time = 0;
  int64_t calls = 0;
  for (auto _ : state) {
    stream_gbps = std::max(stream_gbps, StreamReadGBps(big_data, big_n, 1));
    auto a = Clock::now();
    for (int rep = 0; rep < 4; ++rep)
      for (auto& l : layers) benchmark::DoNotOptimize(l.Forward(x).raw_data());
    auto b = Clock::now();
    for (int rep = 0; rep < 4; ++rep)
      for (auto& d : direct) d->Run();
    direct_time += Seconds(b, Clock::now());
    linear_time += Seconds(a, b);
    calls += 4 * kLayers;
  }
  const double weight_bytes = static_cast<double>(layers[0].packed_bytes());
  const double linear_gbps = weight_bytes * calls / linear_time / 1e9;
  state.counters["stream_GBps"] = stream_gbps;
  state.counters["linear_M1_GBps"] = linear_gbps;
  state.counters["fraction_of_stream"] = linear_gbps / stream_gbps;
  state.counters["linear_M1_us"] = linear_time / calls * 1e6;
  state.counters["dnnl_M1_GBps"] = weight_bytes * calls / direct_time / 1e9;
}
BENCHMARK(BM_DecodeBandwidth)->Unit(benchmark::kMillisecond)->Iterations(5);

// The streaming bound alone, quick enough to take right before and after a
// served decode run (bench/llm/run.sh): best of 10 passes over 1 GiB.
void BM_StreamRead(benchmark::State& state) {
  const int64_t big_n = int64_t{1} << 28;
  cpu::HugeBuffer big(big_n * sizeof(float));
  float* big_data = static_cast<float*>(big.data());
  std::fill_n(big_data, big_n, 1.f);
  double best = 0;
  for (auto _ : state) best = std::max(best, StreamReadGBps(big_data, big_n, 10));
  state.counters["stream_GBps"] = best;
}
BENCHMARK(BM_StreamRead)->Unit(benchmark::kMillisecond)->Iterations(1);

// One decode step's matmuls for the `bench` demo model (hidden 1024, 12
// layers, q/k/v 16/4/4 heads of 64, MLP 2816, the 72k-token tied lm_head)
// at M sequences (Arg): weight bytes / time over the streaming bound, i.e.
// the ceiling for decode tokens/s before attention, norms and sampling. At
// M = 16 the step is bound by compute, not by the weight stream.
void BM_DecodeStepGemv(benchmark::State& state) {
  const int64_t hidden = 1024, inter = 2816, layers = 12, vocab = 73728;
  const int64_t m = state.range(0);
  ops::EnableSpinTeam(state.range(1) != 0);
  const std::vector<std::pair<int64_t, int64_t>> layer_shapes = {
      {1536, hidden}, {hidden, hidden}, {2 * inter, hidden}, {hidden, inter}};
  std::vector<ops::Linear> linears;
  std::vector<Tensor> inputs;
  double bytes = 0;
  for (int64_t l = 0; l < layers; ++l) {
    for (auto [n, k] : layer_shapes) {
      linears.emplace_back(Filled({n, k}, DType::kBF16, 0.02f));
      inputs.push_back(Filled({m, k}, DType::kF32, 1.f));
      bytes += static_cast<double>(linears.back().packed_bytes());
    }
  }
  linears.emplace_back(Filled({vocab, hidden}, DType::kBF16, 0.02f));
  inputs.push_back(Filled({m, hidden}, DType::kF32, 1.f));
  bytes += static_cast<double>(linears.back().packed_bytes());
  StreamBuffer stream;
  double stream_gbps = 0, time = 0;
  int64_t steps = 0;
  for (auto _ : state) {
    stream_gbps = std::max(stream_gbps, stream.ReadAndSettle());
    auto a = Clock::now();
    for (int rep = 0; rep < 4; ++rep, ++steps)
      for (size_t i = 0; i < linears.size(); ++i) benchmark::DoNotOptimize(linears[i].Forward(inputs[i]).raw_data());
    time += Seconds(a, Clock::now());
  }
  const double gbps = bytes * steps / time / 1e9;
  state.counters["stream_GBps"] = stream_gbps;
  state.counters["step_GBps"] = gbps;
  state.counters["fraction_of_stream"] = gbps / stream_gbps;
  state.counters["step_ms"] = time / steps * 1e3;
  state.counters["GMACs"] = bytes / 2 * m * steps / time / 1e9;
}
BENCHMARK(BM_DecodeStepGemv)
    ->ArgsProduct({{1, 16}, {0, 1}})
    ->ArgNames({"M", "team"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// One shape of the decode step at M=1 (Args: n, k), cycling through copies
// of it that add up to 256 MiB, so weights come from memory: the weight
// stream of one shape against the streaming bound. Small matrices pay the
// call's fixed cost and the prefetchers' ramp-up per call; the lm_head shows
// the steady rate.
void BM_GemvFromMemory(benchmark::State& state) {
  const int64_t n = state.range(0), k = state.range(1);
  const int64_t copies = std::max<int64_t>(2, (int64_t{256} << 20) / (n * k * 2));
  ops::EnableSpinTeam(true);  // as the LLM engine runs it
  std::vector<ops::Linear> linears;
  for (int64_t i = 0; i < copies; ++i) linears.emplace_back(Filled({n, k}, DType::kBF16, 0.02f));
  Tensor x = Filled({1, k}, DType::kF32, 1.f);
  StreamBuffer stream;
  double stream_gbps = 0, time = 0, bytes = 0;
  for (auto _ : state) {
    stream_gbps = std::max(stream_gbps, stream.ReadAndSettle());
    auto a = Clock::now();
    for (int rep = 0; rep < 4; ++rep)
      for (auto& l : linears) {
        benchmark::DoNotOptimize(l.Forward(x).raw_data());
        bytes += static_cast<double>(l.packed_bytes());
      }
    time += Seconds(a, Clock::now());
  }
  state.counters["stream_GBps"] = stream_gbps;
  state.counters["GBps"] = bytes / time / 1e9;
  state.counters["fraction_of_stream"] = bytes / time / 1e9 / stream_gbps;
  state.counters["us_per_call"] = time / (static_cast<double>(state.iterations()) * 4 * copies) * 1e6;
}
BENCHMARK(BM_GemvFromMemory)
    ->Args({1024, 1024})
    ->Args({1536, 1024})
    ->Args({5632, 1024})
    ->Args({1024, 2816})
    ->Args({73728, 1024})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// Causal prefill, 16 query heads, 16 kv heads, head dim 128, bf16.
void BM_AttentionPrefill(benchmark::State& state) {
  const int64_t s = state.range(0), h = 16, d = 128;
  Tensor q = Filled({s, h, d}, DType::kBF16, 1.f);
  Tensor k = Filled({s, h, d}, DType::kBF16, 0.9f);
  Tensor v = Filled({s, h, d}, DType::kBF16, 1.f);
  ops::AttentionParams p;
  p.scale = 1.f / std::sqrt(static_cast<float>(d));
  p.mask.causal = true;
  for (auto _ : state) benchmark::DoNotOptimize(ops::Attention(q, k, v, p).raw_data());
  const double iters = static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] = benchmark::Counter(s * iters, benchmark::Counter::kIsRate);
  // Useful FLOPs of the causal half: 2 matmuls x 2 flop x s^2/2 x d x h.
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * s * s * d * h * iters / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AttentionPrefill)->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// The M=1 GEMV with its weights in cache (256 x 1024 bf16, 512 KiB, the same
// matrix 2000 times per iteration): the level's arithmetic ceiling for the
// weight stream, to set against the memory bound (StreamRead). Run it with
// OMP_NUM_THREADS=1 and 2 and OMNI_CPU_ISA=<level>.
void BM_GemvInCache(benchmark::State& state) {
  const int64_t n = 256, k = 1024;
  ops::EnableSpinTeam(true);  // as the LLM engine runs it
  ops::Linear l(Filled({n, k}, DType::kBF16, 0.02f));
  Tensor x = Filled({1, k}, DType::kF32, 1.f);
  for (int i = 0; i < 100; ++i) l.Forward(x);
  constexpr int kCalls = 2000;
  double time = 0;
  int64_t calls = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    for (int i = 0; i < kCalls; ++i) benchmark::DoNotOptimize(l.Forward(x).raw_data());
    time += Seconds(a, Clock::now());
    calls += kCalls;
  }
  state.counters["GBps"] = static_cast<double>(l.packed_bytes()) * calls / time / 1e9;
  state.counters["us"] = time / calls * 1e6;
}
BENCHMARK(BM_GemvInCache)->Unit(benchmark::kMillisecond)->Iterations(5);

// One M=1 Linear call on 64 x 64 bf16 weights (8 KiB, in L1): what a call
// costs besides its weight stream (the input's conversion, the output's
// allocation, the parallel loop's hand-off: OpenMP's region and barriers,
// or the spin team's). A decode step of the `bench` model makes 49 such
// calls. Run it with OMP_NUM_THREADS=1 and 2.
void BM_LinearCallCost(benchmark::State& state) {
  ops::EnableSpinTeam(state.range(0) != 0);
  ops::Linear l(Filled({64, 64}, DType::kBF16, 0.02f));
  Tensor x = Filled({1, 64}, DType::kF32, 1.f);
  for (int i = 0; i < 100; ++i) l.Forward(x);
  for (auto _ : state) benchmark::DoNotOptimize(l.Forward(x).raw_data());
}
BENCHMARK(BM_LinearCallCost)->Arg(0)->Arg(1)->ArgName("team")->Unit(benchmark::kMicrosecond)->MinTime(1.0);

}  // namespace
}  // namespace omni

BENCHMARK_MAIN();
