// Vision encoder benchmarks, one binary, one run, ratios as counters
// (docs/PERFORMANCE.md, "Vision encoder"):
//  - BM_PatchEmbed: the Qwen2.5-VL patch embedding of a 392x392 image (784
//    patches of 3 x 2 x 14 x 14, hidden 1280) three ways: 784 Conv3d calls,
//    one per patch (how OmniServe's baseline ran it), one strided Conv3d
//    over the whole frame pair, and omniserve's one GEMM over all patch rows.
//  - BM_VitForward: the `bench` preset's ViT (4 blocks at the real widths,
//    merger and projector) on a 392x392 and a 448x448 image: time, GFLOP/s
//    of its matmuls and attention, and that rate over the bf16 GEMM rate of
//    this machine measured in the same run (a [1024 x 1280] x [1280 x 3456]
//    Linear). whole_with_per_patch_conv_ms is the forward with the
//    per-patch embedding in place of the GEMM.
//  - BM_TaTok: the discrete branch on one 384x384 image (3 SigLIP layers at
//    the real width, SimVQ over 65536 codes).
// The bench preset is written to a temporary folder at start.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include "media/image.h"
#include "models/layers/patch_embed.h"
#include "models/omni_vision/demo_vision_encoder.h"
#include "models/omni_vision/omni_vision_encoder.h"
#include "models/qwen25_vit/image_processor.h"
#include "modelfile/checkpoint.h"
#include "ops/conv.h"
#include "ops/shape_ops.h"
#include "ops/linear.h"

namespace omni {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

Tensor Filled(const Shape& shape, DType dtype, float scale) {
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.37f * static_cast<float>(i % 9973));
  return Tensor::FromFloats(v, shape, dtype);
}

media::Image TestImage(int w, int h) {
  media::Image im{.width = w, .height = h, .rgb = std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
  for (size_t i = 0; i < im.rgb.size(); ++i) im.rgb[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
  return im;
}

// The bench preset, written once per process.
const std::string& BenchModelDir() {
  static const std::string dir = [] {
    std::string d = (std::filesystem::temp_directory_path() / ("vision_bench." + std::to_string(::getpid()))).string();
    OMNI_CHECK(models::WriteDemoVisionEncoder(models::BenchVisionEncoderSpec(1024), d).ok());
    std::atexit([] { std::filesystem::remove_all(BenchModelDir()); });
    return d;
  }();
  return dir;
}

const models::OmniVisionEncoder& BenchEncoder() {
  static const std::unique_ptr<models::OmniVisionEncoder> e = [] {
    auto loaded = models::OmniVisionEncoder::Load(BenchModelDir());
    OMNI_CHECK(loaded.ok()) << loaded.status().ToString();
    return std::move(loaded).value();
  }();
  return *e;
}

// bf16 GEMM rate of this machine now: GFLOP/s of a ViT-shaped Linear.
double GemmGflops() {
  ops::Linear w(Filled({3456, 1280}, DType::kBF16, 0.02f));
  Tensor x = Filled({1024, 1280}, DType::kF32, 1.f);
  w.Forward(x, DType::kF32);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    auto a = Clock::now();
    benchmark::DoNotOptimize(w.Forward(x, DType::kF32).raw_data());
    best = std::max(best, 2.0 * 1024 * 1280 * 3456 / Seconds(a, Clock::now()) / 1e9);
  }
  return best;
}

struct PatchEmbedCost {
  double per_patch_s = 0, whole_conv_s = 0, gemm_s = 0;
};

// The three forms of the embedding on the same weights, interleaved.
PatchEmbedCost MeasurePatchEmbed(int64_t patches, int reps) {
  const int64_t hidden = 1280, grid = static_cast<int64_t>(std::sqrt(static_cast<double>(patches)));
  Tensor weight = Filled({hidden, 3, 2, 14, 14}, DType::kBF16, 0.01f);
  ops::ConvParams p;
  p.stride = {2, 14, 14};
  ops::Conv conv(weight, Tensor(), p);
  ops::Linear gemm(weight.Contiguous().Reshape({hidden, 3 * 2 * 14 * 14}));
  Tensor rows = Filled({patches, 3 * 2 * 14 * 14}, DType::kF32, 1.f);
  Tensor frames = Filled({1, 3, 2, grid * 14, grid * 14}, DType::kF32, 1.f);
  PatchEmbedCost c;
  for (int r = 0; r < reps; ++r) {
    auto a = Clock::now();
    for (int64_t i = 0; i < patches; ++i) {
      benchmark::DoNotOptimize(conv.Forward(rows.Slice(0, i, i + 1).Reshape({1, 3, 2, 14, 14})).raw_data());
    }
    auto b = Clock::now();
    benchmark::DoNotOptimize(conv.Forward(frames).raw_data());
    auto d = Clock::now();
    benchmark::DoNotOptimize(gemm.Forward(rows, DType::kF32).raw_data());
    auto e = Clock::now();
    c.per_patch_s += Seconds(a, b) / reps;
    c.whole_conv_s += Seconds(b, d) / reps;
    c.gemm_s += Seconds(d, e) / reps;
  }
  return c;
}

void BM_PatchEmbed(benchmark::State& state) {
  PatchEmbedCost c;
  for (auto _ : state) c = MeasurePatchEmbed(784, 3);
  state.counters["per_patch_conv_ms"] = c.per_patch_s * 1e3;
  state.counters["whole_conv_ms"] = c.whole_conv_s * 1e3;
  state.counters["gemm_ms"] = c.gemm_s * 1e3;
  state.counters["gemm_speedup_vs_per_patch"] = c.per_patch_s / c.gemm_s;
  state.counters["gemm_speedup_vs_whole_conv"] = c.whole_conv_s / c.gemm_s;
}
BENCHMARK(BM_PatchEmbed)->Unit(benchmark::kMillisecond)->Iterations(1);

// FLOPs of one ViT forward: every matmul (patch embed, qkv, proj, MLP,
// merger, projector) and the attention products (q.k and p.v over each
// token's window or frame).
double VitFlops(const models::Qwen25VitConfig& c, const models::PatchGrid& g, int64_t llm_width) {
  const double n = static_cast<double>(g.t * g.h * g.w), d = static_cast<double>(c.hidden_size);
  const double i = static_cast<double>(c.intermediate_size), units = n / 4;
  double flops = 2 * n * 1176 * d;
  const int64_t window_rows = (c.window_size / c.patch_size) * (c.window_size / c.patch_size);
  for (int64_t b = 0; b < c.depth; ++b) {
    const bool full = std::find(c.fullatt_block_indexes.begin(), c.fullatt_block_indexes.end(), b) !=
                      c.fullatt_block_indexes.end();
    const double keys = full ? n : std::min<double>(n, static_cast<double>(window_rows));
    flops += 2 * n * d * 3 * d + 2 * n * d * d + 3 * 2 * n * d * i + 2 * 2 * n * keys * d;
  }
  flops += 2 * units * (4 * d) * (4 * d) + 2 * units * (4 * d) * c.out_hidden_size;
  flops += 2 * units * c.out_hidden_size * static_cast<double>(llm_width);
  return flops;
}

// The bench preset's branches on their own: the ViT (4 blocks, full
// attention in the last) and TA-Tok as its config.json describes it.
std::unique_ptr<models::Qwen25Vit> BenchVit() {
  auto ckpt = Checkpoint::Open(BenchModelDir());
  OMNI_CHECK(ckpt.ok());
  auto vit = models::Qwen25Vit::Load(
      *ckpt, models::ParseQwen25VitConfig(R"({"depth":4,"fullatt_block_indexes":[3]})", "bench").value());
  OMNI_CHECK(vit.ok()) << vit.status().ToString();
  return std::move(vit).value();
}

std::unique_ptr<models::TaTok> BenchTaTok() {
  auto ckpt = Checkpoint::Open(BenchModelDir());
  OMNI_CHECK(ckpt.ok());
  std::ifstream config_file(BenchModelDir() + "/config.json");
  const std::string config((std::istreambuf_iterator<char>(config_file)), std::istreambuf_iterator<char>());
  auto tatok = models::TaTok::Load(*ckpt, models::ParseTaTokConfig(config, "bench").value());
  OMNI_CHECK(tatok.ok()) << tatok.status().ToString();
  return std::move(tatok).value();
}

void BM_VitForward(benchmark::State& state) {
  const int side = static_cast<int>(state.range(0));
  const models::OmniVisionEncoder& encoder = BenchEncoder();
  models::Qwen2VlImageProcessorConfig pc = encoder.processor_config();
  auto patches = models::PreprocessImage(TestImage(side, side), pc);
  OMNI_CHECK(patches.ok());
  std::unique_ptr<models::Qwen25Vit> vit = BenchVit();
  const models::PatchGrid grid{.t = 1, .h = patches->grid_h, .w = patches->grid_w};
  (void)vit->Forward(patches->pixel_values, {&grid, 1});  // warm the primitive caches
  const double gemm_gflops = GemmGflops();
  double seconds = 0;
  int64_t runs = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    auto rows = vit->Forward(patches->pixel_values, {&grid, 1});
    seconds += Seconds(a, Clock::now());
    ++runs;
    benchmark::DoNotOptimize(rows->raw_data());
  }
  const double per_run = seconds / runs;
  const double gflops = VitFlops(vit->config(), grid, vit->output_width()) / per_run / 1e9;
  const PatchEmbedCost embed = MeasurePatchEmbed(grid.h * grid.w, 2);
  state.counters["patches"] = static_cast<double>(grid.h * grid.w);
  state.counters["forward_ms"] = per_run * 1e3;
  state.counters["GFLOPs"] = gflops;
  state.counters["gemm_GFLOPs"] = gemm_gflops;
  state.counters["fraction_of_gemm"] = gflops / gemm_gflops;
  state.counters["whole_with_per_patch_conv_ms"] = (per_run - embed.gemm_s + embed.per_patch_s) * 1e3;
  state.counters["whole_speedup_vs_per_patch"] = (per_run - embed.gemm_s + embed.per_patch_s) / per_run;
}
BENCHMARK(BM_VitForward)->Arg(392)->Arg(448)->ArgName("side")->Unit(benchmark::kMillisecond)->Iterations(4);

void BM_TaTok(benchmark::State& state) {
  const models::OmniVisionEncoder& encoder = BenchEncoder();
  const media::Image image = TestImage(384, 384);
  (void)encoder.Encode(image);
  double seconds = 0;
  int64_t runs = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    auto e = encoder.Encode(image);
    seconds += Seconds(a, Clock::now());
    ++runs;
    benchmark::DoNotOptimize(e->ids.data());
  }
  state.counters["encode_both_branches_ms"] = seconds / runs * 1e3;
}
BENCHMARK(BM_TaTok)->Unit(benchmark::kMillisecond)->Iterations(3);

// Both branches on `batch` distinct 392x392 images in one EncodeBatch, as the
// encoder server's batcher runs them: images/s, and the ratio to one image
// per forward measured in the same process.
void BM_EncodeBatch(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  const models::OmniVisionEncoder& encoder = BenchEncoder();
  std::vector<media::Image> images;
  for (int i = 0; i < batch; ++i) images.push_back(TestImage(392, 392));
  std::vector<const media::Image*> pointers;
  for (const media::Image& image : images) pointers.push_back(&image);
  (void)encoder.EncodeBatch(pointers);  // warm the primitive caches for these shapes
  (void)encoder.Encode(images.front());
  double batched = 0, alone = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    auto e = encoder.EncodeBatch(pointers);
    batched += Seconds(a, Clock::now());
    OMNI_CHECK(e.ok());
    a = Clock::now();
    for (const media::Image& image : images) {
      auto one = encoder.Encode(image);
      OMNI_CHECK(one.ok());
    }
    alone += Seconds(a, Clock::now());
  }
  state.counters["batched_images_per_s"] = batch * state.iterations() / batched;
  state.counters["alone_images_per_s"] = batch * state.iterations() / alone;
  state.counters["batched_vs_alone"] = alone / batched;
}
BENCHMARK(BM_EncodeBatch)->Arg(1)->Arg(4)->Arg(8)->ArgName("batch")->Unit(benchmark::kMillisecond)->Iterations(1);

// The batch's cost by branch: the ViT on `batch` grids in one Forward, and
// TA-Tok on `batch` images in one EncodeBatch, each against one at a time.
void BM_BranchBatch(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  const models::OmniVisionEncoder& encoder = BenchEncoder();
  auto patches = models::PreprocessImage(TestImage(392, 392), encoder.processor_config());
  OMNI_CHECK(patches.ok());
  std::unique_ptr<models::Qwen25Vit> vit = BenchVit();
  std::unique_ptr<models::TaTok> tatok = BenchTaTok();
  const models::PatchGrid grid{.t = 1, .h = patches->grid_h, .w = patches->grid_w};
  std::vector<models::PatchGrid> grids(batch, grid);
  std::vector<Tensor> pixels(batch, patches->pixel_values);
  const Tensor all = ops::Concat(pixels, 0);
  models::TaTokImageProcessorConfig tc;
  tc.size = tatok->config().image_size;
  std::vector<Tensor> tatok_images(batch, models::PreprocessTaTokImage(TestImage(392, 392), tc));
  (void)vit->Forward(all, grids);
  (void)tatok->EncodeBatch(tatok_images);
  double vit_batched = 0, vit_alone = 0, tatok_batched = 0, tatok_alone = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    (void)vit->Forward(all, grids);
    vit_batched += Seconds(a, Clock::now());
    a = Clock::now();
    for (int i = 0; i < batch; ++i) (void)vit->Forward(patches->pixel_values, {&grid, 1});
    vit_alone += Seconds(a, Clock::now());
    a = Clock::now();
    (void)tatok->EncodeBatch(tatok_images);
    tatok_batched += Seconds(a, Clock::now());
    a = Clock::now();
    for (int i = 0; i < batch; ++i) (void)tatok->Encode(tatok_images[i]);
    tatok_alone += Seconds(a, Clock::now());
  }
  state.counters["vit_batched_vs_alone"] = vit_alone / vit_batched;
  state.counters["tatok_batched_vs_alone"] = tatok_alone / tatok_batched;
  state.counters["vit_batched_ms"] = vit_batched * 1e3 / state.iterations();
  state.counters["tatok_batched_ms"] = tatok_batched * 1e3 / state.iterations();
}
BENCHMARK(BM_BranchBatch)->Arg(4)->ArgName("batch")->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace omni

BENCHMARK_MAIN();
