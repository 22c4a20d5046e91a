// Vision decoder benchmark, one binary, one run (docs/PERFORMANCE.md,
// "Vision decoder"; bench/vision_decoder/run.sh adds PyTorch):
//
//   vision_decoder_bench MODEL_DIR [REPS]      (MODEL_DIR: make-demo-model --component vd --preset bench)
//
// At 656x880 (latent 82x110 = 9020 tokens), on the `bench` preset (DiT 1920
// wide, 24 heads, 2 of the released 35 single blocks; the real VAE):
//  - this machine's bf16 GEMM rate now: ops::Linear, [4096 x 4096] x
//    [4096 x 4096], best of 3;
//  - one DiT forward (the transformer alone), best of REPS after a warm-up:
//    seconds, GFLOP/s (every Linear 2 T in out, attention 4 T^2 hidden per
//    block; the one-row conditioning and modulation Linears are left out)
//    and that rate over the GEMM rate;
//  - the same forward through Ulysses on a group of one, which copies the
//    DiT's strided v view (a slice of the fused linear1 output) contiguous
//    before ops::Attention: what that copy alone is worth;
//  - the per-block time: the same forward with a 1-block DiT (the same
//    weights, config.json saying 1 block; the two interleaved) subtracted
//    from the 2-block one; the real model's DiT forward = (1-block forward -
//    block) + 35 blocks, its step the measured step scaled likewise;
//  - one full step with autoguidance (both DiTs, VisionDecoder::Step), the
//    condition, the VAE decode; the latency projected at 25 and 50 steps as
//    condition + steps x step + VAE, for the preset and for 35 blocks;
//  - sequence parallelism with one compute thread per rank
//    (ops::SetNumThreads(1): the process-wide setting, so every rank thread
//    runs its ops on one thread), ranks as threads of this process over
//    Gloo on loopback, each with its own loaded VisionDecoder (a model is not
//    shared between threads, vision_decoder.h): one DiT forward at sp 1
//    (plain, and through Ulysses on a group of one, which also copies the
//    strided v contiguous) and at sp 2 (UlyssesStats: all-to-all, attention,
//    pack seconds, floats sent), the exchange bandwidth of a bare AllToAllV
//    of one attention's q, k, v, and a projection to N = 4 and 8 ranks:
//    T_N = compute_1 / N + comm_N, compute_1 the sp 1 forward through
//    Ulysses (the ranks' code path), comm_N = blocks x 4 (T/N) hidden
//    (N-1)/N floats (q, k, v out and the output back, per attention) x 4
//    bytes / the bare exchange's per-rank bandwidth at sp 2.
// Prints readable lines, then one JSON line (prefixed "JSON ") for run.sh.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "models/vision_decoder/dit.h"
#include "models/vision_decoder/flow_match_scheduler.h"
#include "models/vision_decoder/vision_decoder.h"
#include "ops/linear.h"
#include "ops/shape_ops.h"
#include "ops/threading.h"
#include "parallel/collective.h"
#include "parallel/gloo_collective.h"
#include "parallel/ulysses_attention.h"

namespace omni {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

constexpr int kWidth = 656, kHeight = 880;
constexpr int64_t kH = kHeight / 8, kW = kWidth / 8, kTokens = kH * kW;
constexpr int kRealBlocks = 35;

Tensor Filled(const Shape& shape, DType dtype, float scale) {
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.37f * static_cast<float>(i % 9973));
  return Tensor::FromFloats(v, shape, dtype);
}

// Best (smallest) seconds of `reps` calls after one warm-up call.
template <typename F>
double Best(int reps, F&& f, bool warm = true) {
  if (warm) f();
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < reps; ++i) {
    const auto a = Clock::now();
    f();
    best = std::min(best, Seconds(a, Clock::now()));
  }
  return best;
}

// bf16 GEMM rate of this machine now (GFLOP/s): a square 4096 Linear, best of 3.
double GemmGflops() {
  constexpr int64_t n = 4096;
  ops::Linear w(Filled({n, n}, DType::kBF16, 0.02f));
  const Tensor x = Filled({n, n}, DType::kF32, 1.f);
  const double s = Best(3, [&] { (void)w.Forward(x, DType::kF32); });
  return 2.0 * n * n * n / s / 1e9;
}

// FLOPs of one DiT forward over `tokens` tokens (all of them attend to all).
double BlockFlops(const models::DitConfig& c, double tokens) {
  const double h = static_cast<double>(c.hidden_size), mlp = static_cast<double>(c.mlp_hidden());
  return 2 * tokens * h * (3 * h + mlp) + 2 * tokens * (h + mlp) * h + 4 * tokens * tokens * h;
}
double DitFlops(const models::DitConfig& c, double tokens, int64_t blocks) {
  const double h = static_cast<double>(c.hidden_size);
  return 2 * tokens * static_cast<double>(c.in_channels + c.context_in_dim) * h +
         2 * tokens * h * static_cast<double>(c.in_channels) + static_cast<double>(blocks) * BlockFlops(c, tokens);
}

std::vector<int32_t> Ids() {
  std::vector<int32_t> ids(models::VisionDecoder::kNumIds);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919 + 13) % 65536);
  return ids;
}

// The DiT input of tokens [begin, end) of the 82x110 latent.
models::DitInput Input(const models::VisionDecoder& d, const models::VisionCondition& cond, const Tensor& noise,
                       int64_t begin, int64_t end) {
  const Tensor tokens = ops::Permute(noise.Reshape({noise.dim(0), kTokens}), {1, 0});  // [T, 16]
  const Tensor parts[] = {tokens.Slice(0, begin, end), cond.spatial.Slice(0, begin, end)};
  return {.tokens = ops::Concat(parts, 1),
          .positions = models::DitPositions(kH, kW, begin, end),
          .pooled = cond.pooled,
          .timestep = models::DitTimestep(0.7f)};
}

// A folder holding transformer/ with config.json saying 1 block and the
// 2-block safetensors linked (Load reads only the tensors it needs).
std::string OneBlockDit(const std::string& model_dir) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("vd_bench_1block." + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  std::ifstream in(model_dir + "/transformer/config.json");
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  config = std::regex_replace(config, std::regex(R"("depth_single_blocks"\s*:\s*\d+)"), R"("depth_single_blocks": 1)");
  std::ofstream(dir + "/config.json") << config;
  std::filesystem::create_symlink(std::filesystem::absolute(model_dir + "/transformer/diffusion_pytorch_model.safetensors"),
                                  dir + "/diffusion_pytorch_model.safetensors");
  return dir;
}

std::unique_ptr<models::VisionDecoder> LoadDecoder(const std::string& dir) {
  auto d = models::VisionDecoder::Load(dir);
  OMNI_CHECK(d.ok()) << d.status().ToString();
  return std::move(d).value();
}

struct RankResult {
  double forward_s = 0, exchange_gbs = 0;
  parallel::UlyssesStats stats;
};

// One DiT forward per rank at sp `n` (threads, one compute thread each),
// after a warm-up forward; the exchange bandwidth of a bare AllToAllV of one
// attention's q, k, v (best of 3, bytes this rank sends per second).
std::vector<RankResult> Sharded(const std::string& model_dir, int n) {
  const std::string rendezvous =
      (std::filesystem::temp_directory_path() / ("vd_bench_sp." + std::to_string(::getpid()) + "." + std::to_string(n)))
          .string();
  std::vector<RankResult> results(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      const std::unique_ptr<models::VisionDecoder> d = LoadDecoder(model_dir);
      const models::VisionCondition cond = d->Condition(Ids(), kH, kW);
      const Tensor noise = models::SeededNoise(7, 16, kH, kW);
      auto group = parallel::ConnectGloo({.rank = r, .size = n, .rendezvous_dir = rendezvous, .prefix = "bench",
                                          .timeout = std::chrono::seconds(600)});
      OMNI_CHECK(group.ok()) << group.status().ToString();
      const std::vector<int64_t> shards = parallel::EvenShards(kTokens, n);
      const int64_t begin = kTokens * r / n, end = begin + shards[static_cast<size_t>(r)];
      const models::DitInput in = Input(*d, cond, noise, begin, end);
      RankResult& out = results[static_cast<size_t>(r)];
      parallel::UlyssesStats warm;
      (void)d->transformer().Forward(in, parallel::UlyssesAttention(group->get(), shards, &warm));
      OMNI_CHECK((*group)->Barrier().ok());
      const auto a = Clock::now();
      (void)d->transformer().Forward(in, parallel::UlyssesAttention(group->get(), shards, &out.stats));
      out.forward_s = Seconds(a, Clock::now());
      // The bare exchange: this rank's q, k, v for one attention, split evenly.
      const int64_t hidden = d->transformer().config().hidden_size;
      const int64_t per_peer = 3 * shards[static_cast<size_t>(r)] * hidden / n;
      std::vector<int64_t> send_counts(static_cast<size_t>(n)), recv_counts(static_cast<size_t>(n));
      for (int p = 0; p < n; ++p) {
        send_counts[static_cast<size_t>(p)] = per_peer;
        recv_counts[static_cast<size_t>(p)] = 3 * shards[static_cast<size_t>(p)] * hidden / n;
      }
      int64_t recv_total = 0;
      for (int64_t c : recv_counts) recv_total += c;
      std::vector<float> send(static_cast<size_t>(per_peer * n), 1.f), recv(static_cast<size_t>(recv_total));
      double best = std::numeric_limits<double>::infinity();
      for (int i = 0; i < 4; ++i) {
        OMNI_CHECK((*group)->Barrier().ok());
        const auto b = Clock::now();
        OMNI_CHECK((*group)->AllToAllV(send, send_counts, recv, recv_counts).ok());
        if (i > 0) best = std::min(best, Seconds(b, Clock::now()));
      }
      out.exchange_gbs = n > 1 ? static_cast<double>(per_peer * (n - 1)) * 4 / best / 1e9 : 0;
      OMNI_CHECK((*group)->Barrier().ok());
    });
  }
  for (std::thread& t : threads) t.join();
  std::filesystem::remove_all(rendezvous);
  return results;
}

int Main(int argc, char** argv) {
  OMNI_CHECK(argc >= 2) << "usage: vision_decoder_bench MODEL_DIR [REPS]";
  const std::string model_dir = argv[1];
  const int reps = argc > 2 ? std::atoi(argv[2]) : 2;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines as they come, through a pipe too
  const int threads = ops::NumThreads();
  std::printf("vision decoder bench: %dx%d (latent %ldx%ld = %ld tokens), %d threads, best of %d\n", kWidth, kHeight,
              static_cast<long>(kW), static_cast<long>(kH), static_cast<long>(kTokens), threads, reps);

  const double gemm_gflops = GemmGflops();
  std::printf("bf16 GEMM rate (4096^3 ops::Linear, best of 3): %.0f GFLOP/s\n", gemm_gflops);

  const std::unique_ptr<models::VisionDecoder> d = LoadDecoder(model_dir);
  const models::DitConfig& c = d->transformer().config();
  const std::vector<int32_t> ids = Ids();
  auto a = Clock::now();
  const models::VisionCondition cond = d->Condition(ids, kH, kW);
  const Tensor noise = models::SeededNoise(7, 16, kH, kW);
  const double condition_s = Seconds(a, Clock::now());
  const models::DitInput in = Input(*d, cond, noise, 0, kTokens);

  // One DiT forward, and the 1-block DiT for the per-block time, interleaved
  // so that a busy spell of the machine hits both alike.
  const std::string one_dir = OneBlockDit(model_dir);
  auto one = models::VisionDit::Load(one_dir);
  OMNI_CHECK(one.ok()) << one.status().ToString();
  OMNI_CHECK_EQ(one->config().depth_single_blocks, 1);
  double forward_s = std::numeric_limits<double>::infinity(), one_block_s = forward_s;
  (void)d->transformer().Forward(in);  // warm the primitive caches
  for (int i = 0; i < reps; ++i) {
    forward_s = std::min(forward_s, Best(1, [&] { (void)d->transformer().Forward(in); }, false));
    one_block_s = std::min(one_block_s, Best(1, [&] { (void)one->Forward(in); }, false));
  }
  std::filesystem::remove_all(one_dir);
  // The same forward with v contiguous: through Ulysses on a group of one
  // (which copies the strided v view before ops::Attention).
  const std::unique_ptr<parallel::Collective> single = parallel::MakeSingleRankCollective();
  const double contiguous_v_s = Best(1, [&] {
    (void)d->transformer().Forward(in, parallel::UlyssesAttention(single.get(), {kTokens}));
  }, false);
  const double flops = DitFlops(c, kTokens, c.depth_single_blocks);
  const double dit_gflops = flops / forward_s / 1e9;
  std::printf("DiT forward (%ld blocks): %.3f s, %.1f TFLOP, %.0f GFLOP/s = %.2f of the GEMM rate\n",
              static_cast<long>(c.depth_single_blocks), forward_s, flops / 1e12, dit_gflops, dit_gflops / gemm_gflops);
  std::printf("DiT forward with v made contiguous (Ulysses, group of one): %.3f s, %.0f GFLOP/s = %.2f of the GEMM "
              "rate (%.2fx the plain forward)\n",
              contiguous_v_s, flops / contiguous_v_s / 1e9, flops / contiguous_v_s / 1e9 / gemm_gflops,
              forward_s / contiguous_v_s);
  const double block_s = (forward_s - one_block_s) / static_cast<double>(c.depth_single_blocks - 1);
  const double outside_s = std::max(0.0, one_block_s - block_s);
  const double real_forward_s = outside_s + kRealBlocks * block_s;
  std::printf("1-block forward %.3f s: per block %.3f s (%.0f GFLOP/s), outside the blocks %.3f s; %d blocks: %.2f s\n",
              one_block_s, block_s, BlockFlops(c, kTokens) / block_s / 1e9, outside_s, kRealBlocks, real_forward_s);

  // One step with autoguidance, and the VAE.
  OMNI_CHECK(d->transformer2() != nullptr);
  Tensor x = noise.Copy();
  const double step_s = Best(1, [&] { d->Step(&x, cond, 0.7f, 0.68f, 0.75f); }, /*warm=*/false);
  const double vae_s = Best(1, [&] { (void)d->vae().Decode(x); });
  // The real model's step: the measured step scaled as its forwards scale.
  const double real_step_s = step_s * real_forward_s / forward_s;
  auto latency = [&](int steps, double step) { return condition_s + steps * step + vae_s; };
  std::printf("condition %.3f s; step with autoguidance %.3f s (%.2f forwards); VAE decode %.3f s\n", condition_s,
              step_s, step_s / forward_s, vae_s);
  std::printf("latency, bench preset: 25 steps %.1f s, 50 steps %.1f s (%.2fx)\n", latency(25, step_s),
              latency(50, step_s), latency(50, step_s) / latency(25, step_s));
  std::printf("latency, %d blocks (projected): step %.2f s; 25 steps %.1f s, 50 steps %.1f s (%.2fx)\n", kRealBlocks,
              real_step_s, latency(25, real_step_s), latency(50, real_step_s),
              latency(50, real_step_s) / latency(25, real_step_s));

  // Sequence parallelism, one compute thread per rank.
  ops::SetNumThreads(1);
  const double sp1_s = Best(1, [&] { (void)d->transformer().Forward(in); });
  const std::vector<RankResult> sp1u = Sharded(model_dir, 1);
  const std::vector<RankResult> sp2 = Sharded(model_dir, 2);
  ops::SetNumThreads(threads);
  double sp2_s = 0, sp2_a2a = 0, exchange_gbs = std::numeric_limits<double>::infinity();
  int64_t floats_sent = 0;
  for (const RankResult& r : sp2) {
    sp2_s = std::max(sp2_s, r.forward_s);
    sp2_a2a = std::max(sp2_a2a, r.stats.all_to_all_s);
    floats_sent = std::max(floats_sent, r.stats.floats_sent);
    exchange_gbs = std::min(exchange_gbs, r.exchange_gbs);
  }
  const double sp2_compute = sp2_s - sp2_a2a;
  const double bytes_2 = static_cast<double>(floats_sent) * 4;
  std::printf("sp 1 (1 thread): %.3f s plain; %.3f s through Ulysses on a group of one (pack %.3f s)\n", sp1_s,
              sp1u[0].forward_s, sp1u[0].stats.pack_s);
  std::printf("sp 2 (1 thread per rank): %.3f s = %.2fx of sp 1 plain, %.2fx of sp 1 via Ulysses; all-to-all %.3f s "
              "(%.1f MB sent per rank, %.2f GB/s while in it), compute %.3f s (attention %.3f s, pack %.3f s)\n",
              sp2_s, sp1_s / sp2_s, sp1u[0].forward_s / sp2_s, sp2_a2a, bytes_2 / 1e6, bytes_2 / sp2_a2a / 1e9,
              sp2_compute, sp2[0].stats.attention_s, sp2[0].stats.pack_s);
  std::printf("bare AllToAllV of one attention's q, k, v at sp 2: %.2f GB/s sent per rank\n", exchange_gbs);
  // Projection: each rank computes 1/N of sp 1's work and sends
  // 4 (T/N) hidden (N-1)/N floats per block per forward (q, k, v out, the
  // output back) at the measured per-rank bandwidth.
  auto comm = [&](int n) {
    const double floats = static_cast<double>(c.depth_single_blocks) * 4 * (kTokens / static_cast<double>(n)) *
                          static_cast<double>(c.hidden_size) * (n - 1) / n;
    return floats * 4 / (exchange_gbs * 1e9);
  };
  // compute_1: sp 1 through Ulysses (the ranks' code path: v contiguous).
  const double compute_1 = sp1u[0].forward_s;
  std::vector<double> projected;
  for (int n : {2, 4, 8}) {
    const double t = compute_1 / n + comm(n);
    projected.push_back(t);
    std::printf("projected sp %d: %.3f s = %.3f compute + %.3f all-to-all (%.2fx of sp 1)\n", n, t, compute_1 / n,
                comm(n), compute_1 / t);
  }

  std::printf(
      "JSON {\"threads\":%d,\"tokens\":%ld,\"gemm_gflops\":%.1f,\"dit_forward_s\":%.4f,\"dit_tflop\":%.4f,"
      "\"dit_gflops\":%.1f,\"fraction_of_gemm\":%.4f,\"contiguous_v_s\":%.4f,\"one_block_forward_s\":%.4f,\"block_s\":%.4f,"
      "\"outside_blocks_s\":%.4f,\"real_forward_s\":%.3f,\"condition_s\":%.4f,\"step_s\":%.4f,\"vae_s\":%.4f,"
      "\"latency_25_s\":%.3f,\"latency_50_s\":%.3f,\"real_step_s\":%.3f,\"real_latency_25_s\":%.3f,"
      "\"real_latency_50_s\":%.3f,\"sp1_s\":%.4f,\"sp1_ulysses_s\":%.4f,\"sp1_ulysses_pack_s\":%.4f,\"sp2_s\":%.4f,"
      "\"sp2_all_to_all_s\":%.4f,\"sp2_compute_s\":%.4f,\"sp2_attention_s\":%.4f,\"sp2_pack_s\":%.4f,"
      "\"sp2_bytes_sent\":%.0f,\"exchange_gbs\":%.3f,\"comm_2_s\":%.4f,\"comm_4_s\":%.4f,\"comm_8_s\":%.4f,"
      "\"projected_2_s\":%.4f,\"projected_4_s\":%.4f,\"projected_8_s\":%.4f}\n",
      threads, static_cast<long>(kTokens), gemm_gflops, forward_s, flops / 1e12, dit_gflops, dit_gflops / gemm_gflops,
      contiguous_v_s, one_block_s, block_s, outside_s, real_forward_s, condition_s, step_s, vae_s, latency(25, step_s),
      latency(50, step_s), real_step_s, latency(25, real_step_s), latency(50, real_step_s), sp1_s, sp1u[0].forward_s,
      sp1u[0].stats.pack_s, sp2_s, sp2_a2a, sp2_compute, sp2[0].stats.attention_s, sp2[0].stats.pack_s, bytes_2,
      exchange_gbs, comm(2), comm(4), comm(8), projected[0], projected[1], projected[2]);
  return 0;
}

}  // namespace
}  // namespace omni

int main(int argc, char** argv) { return omni::Main(argc, argv); }
