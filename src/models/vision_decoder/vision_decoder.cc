#include "models/vision_decoder/vision_decoder.h"

#include <chrono>
#include <cmath>
#include <numbers>

#include <fmt/core.h>

#include "core/check.h"
#include "core/splitmix.h"
#include "core/config.h"
#include "models/layers/weights.h"
#include "ops/elementwise.h"
#include "ops/resize.h"
#include "ops/shape_ops.h"
#include "parallel/collective.h"
#include "parallel/ulysses_attention.h"

namespace omni::models {
namespace {

// (0, 1]: the top 53 bits, offset by one so log() is finite.
double UnitInterval(uint64_t bits) { return (static_cast<double>(bits >> 11) + 1.0) * 0x1.0p-53; }

// model_index.json names transformer2 as [library, class] when the pipeline
// has one and [null, null] (or nothing) when not.
StatusOr<bool> HasTransformer2(const std::string& index_path) {
  OMNI_ASSIGN_OR_RETURN(std::string json, ReadTextFile(index_path));
  OMNI_ASSIGN_OR_RETURN(ConfigNode node, ParseJson(json, index_path));
  ObjectReader r(node, "", ObjectReader::UnknownKeys::kAllow);
  OMNI_RETURN_IF_ERROR(r.CheckIsMap());
  const ConfigNode* t2 = r.GetNode("transformer2");
  if (t2 == nullptr || t2->kind == ConfigNode::Kind::kNull) return false;
  if (t2->kind != ConfigNode::Kind::kList || t2->list.size() != 2) {
    return r.Error("transformer2", "expected [library, class] or [null, null]");
  }
  return t2->list[1].kind != ConfigNode::Kind::kNull;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Token-major [h * w, C] <-> channel-major [C, h, w].
Tensor ToTokens(const Tensor& chw) {
  return ops::Permute(chw.Reshape({chw.dim(0), chw.dim(1) * chw.dim(2)}), {1, 0});
}
Tensor ToChannels(const Tensor& tokens, int64_t h, int64_t w) {
  return ops::Permute(tokens, {1, 0}).Reshape({tokens.dim(1), h, w});
}

Status RankFailed(const Status& cause) { return Unavailable("sequence-parallel rank failed: " + cause.message()); }

// Rank 0's after_step hook decides for the whole group (one byte broadcast
// per step), so every rank stops after the same step.
StatusOr<bool> AgreeToContinue(parallel::Collective* group, const VisionGenerateHooks& hooks, int step) {
  std::string go(1, '1');
  if (group->rank() == 0 && hooks.after_step && !hooks.after_step(step)) go[0] = '0';
  if (Status s = group->Broadcast(&go, 0); !s.ok()) return RankFailed(s);
  return go == "1";
}

}  // namespace

Tensor SeededNoise(uint64_t seed, int64_t channels, int64_t h, int64_t w) {
  Tensor out = Tensor::Empty({channels, h, w}, DType::kF32);
  float* p = out.data<float>();
  const uint64_t key = SplitMix64(seed);
  const int64_t n = channels * h * w;
  for (int64_t j = 0; j < n; ++j) {
    const double u1 = UnitInterval(SplitMix64(key + 2 * static_cast<uint64_t>(j)));
    const double u2 = UnitInterval(SplitMix64(key + 2 * static_cast<uint64_t>(j) + 1));
    p[j] = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
  }
  return out;
}

StatusOr<std::unique_ptr<VisionDecoder>> VisionDecoder::Load(const std::string& dir) {
  OMNI_ASSIGN_OR_RETURN(bool has_t2, HasTransformer2(dir + "/model_index.json"));
  OMNI_ASSIGN_OR_RETURN(VisionDit t1, VisionDit::Load(dir + "/transformer"));
  std::optional<VisionDit> t2;
  if (has_t2) {
    OMNI_ASSIGN_OR_RETURN(VisionDit loaded, VisionDit::Load(dir + "/transformer2"));
    const DitConfig &a = t1.config(), &b = loaded.config();
    if (a.in_channels != b.in_channels || a.context_in_dim != b.context_in_dim || a.vec_in_dim != b.vec_in_dim) {
      return InvalidArgument(fmt::format("{}/transformer2: its input sizes differ from transformer's", dir));
    }
    t2 = std::move(loaded);
  }
  OMNI_ASSIGN_OR_RETURN(VaeDecoder vae, VaeDecoder::Load(dir + "/vae"));
  if (vae.config().latent_channels != t1.config().in_channels) {
    return InvalidArgument(fmt::format("{}: the VAE's latent_channels {} differ from the DiT's in_channels {}", dir,
                                       vae.config().latent_channels, t1.config().in_channels));
  }
  std::unique_ptr<VisionDecoder> d(new VisionDecoder(std::move(t1), std::move(t2), std::move(vae)));
  const std::string scheduler_path = dir + "/scheduler/scheduler_config.json";
  OMNI_ASSIGN_OR_RETURN(std::string scheduler_json, ReadTextFile(scheduler_path));
  OMNI_ASSIGN_OR_RETURN(d->scheduler_, ParseFlowMatchSchedulerConfig(scheduler_json, scheduler_path));
  OMNI_ASSIGN_OR_RETURN(Checkpoint embedder,
                        Checkpoint::OpenFile(dir + "/token_embedder/diffusion_pytorch_model.safetensors"));
  d->embedder_ = std::make_unique<Checkpoint>(std::move(embedder));
  OMNI_ASSIGN_OR_RETURN(d->vocab_embeddings_, layers::LoadFloatWeight(*d->embedder_, "vocab_embeddings",
                                                                      {-1, d->transformer_.config().context_in_dim}));
  if (d->vocab_embeddings_.dim(0) < 1) return InvalidArgument(dir + "/token_embedder: empty vocab_embeddings");
  return d;
}

VisionCondition VisionDecoder::Condition(const std::vector<int32_t>& ids, int64_t h, int64_t w) const {
  OMNI_CHECK(ids.size() == kNumIds) << ids.size() << " ids";
  const Tensor id_tensor = Tensor::View(const_cast<int32_t*>(ids.data()), {kNumIds}, DType::kI32);
  const Tensor e = ops::Cast(ops::Embedding(vocab_embeddings_, id_tensor), DType::kF32);  // [729, D]
  const int64_t dim = e.dim(1);
  std::vector<double> sum(static_cast<size_t>(dim), 0.0);
  const float* pe = e.data<float>();
  for (int64_t i = 0; i < kNumIds; ++i) {
    for (int64_t c = 0; c < dim; ++c) sum[static_cast<size_t>(c)] += pe[i * dim + c];
  }
  std::vector<float> mean(static_cast<size_t>(dim));
  for (int64_t c = 0; c < dim; ++c) mean[static_cast<size_t>(c)] = static_cast<float>(sum[static_cast<size_t>(c)] / kNumIds);
  const Tensor grid = ops::Permute(e, {1, 0}).Reshape({1, dim, 27, 27});
  const Tensor resized = ops::Resize(grid, h, w, ops::ResizeMode::kBilinear);  // [1, D, h, w]
  return {.spatial = ToTokens(resized.Reshape({dim, h, w})), .pooled = Tensor::FromFloats(mean, {1, dim})};
}

Tensor VisionDecoder::GuidedVelocity(const DitInput& in, float guidance, const SequenceAttention& attention) const {
  Tensor v = transformer_.Forward(in, attention);
  if (transformer2_ && guidance != 0.f) v = Autoguide(v, transformer2_->Forward(in, attention), guidance);
  return v;
}

Tensor VisionDecoder::Velocity(const Tensor& x, const VisionCondition& condition, float sigma, float guidance,
                               const SequenceAttention& attention) const {
  const int64_t h = x.dim(1), w = x.dim(2);
  const Tensor parts[] = {ToTokens(x), condition.spatial};
  DitInput in{.tokens = ops::Concat(parts, 1),
              .positions = DitPositions(h, w, 0, h * w),
              .pooled = condition.pooled,
              .timestep = DitTimestep(sigma)};
  return GuidedVelocity(in, guidance, attention);
}

void VisionDecoder::Step(Tensor* x, const VisionCondition& condition, float sigma, float sigma_next, float guidance,
                         const SequenceAttention& attention) const {
  const Tensor v = Velocity(*x, condition, sigma, guidance, attention);
  EulerStep(x, ToChannels(v, x->dim(1), x->dim(2)), sigma, sigma_next);
}

Status VisionDecoder::CheckRequest(const VisionGenerateRequest& r) const {
  if (r.width < 16 || r.height < 16 || r.width % 16 != 0 || r.height % 16 != 0 || r.width > 4096 ||
      r.height > 4096) {
    return InvalidArgument(fmt::format("image size {}x{}: width and height must be multiples of 16 in [16, 4096]",
                                       r.width, r.height));
  }
  if (r.steps < 1 || r.steps > kMaxSteps) {
    return InvalidArgument(fmt::format("steps {} out of range [1, {}]", r.steps, kMaxSteps)).WithParam("steps");
  }
  if (r.ids.size() != kNumIds) return InvalidArgument(fmt::format("{} image ids, expected {}", r.ids.size(), kNumIds));
  for (int32_t id : r.ids) {
    if (id < 0 || id >= vocab_size()) return InvalidArgument(fmt::format("image id {} out of range", id));
  }
  return Status::Ok();
}

StatusOr<Tensor> VisionDecoder::InitialLatent(const VisionGenerateRequest& r, int64_t h, int64_t w) const {
  const int64_t channels = transformer_.config().in_channels;
  Tensor x = r.noise ? r.noise->Contiguous() : SeededNoise(r.seed, channels, h, w);
  if (x.dtype() != DType::kF32 || x.shape() != Shape{channels, h, w}) {
    return InvalidArgument("initial latent must be f32 [" + std::to_string(channels) + ", h/8, w/8]");
  }
  if (r.noise) x = x.Copy();  // the caller's noise stays as it was
  return x;
}

StatusOr<Tensor> VisionDecoder::Generate(const VisionGenerateRequest& r, const VisionGenerateHooks& hooks,
                                         VisionGenerateTimings* timings) const {
  const std::unique_ptr<parallel::Collective> alone = parallel::MakeSingleRankCollective();
  return GenerateSharded(r, alone.get(), hooks, timings);
}

Status VisionDecoder::CheckSequenceParallel(int sp) const {
  OMNI_RETURN_IF_ERROR(parallel::CheckUlyssesHeads(transformer_.config().num_heads, sp));
  if (transformer2_) OMNI_RETURN_IF_ERROR(parallel::CheckUlyssesHeads(transformer2_->config().num_heads, sp));
  return Status::Ok();
}

StatusOr<Tensor> VisionDecoder::GenerateSharded(const VisionGenerateRequest& r, parallel::Collective* group,
                                                const VisionGenerateHooks& hooks,
                                                VisionGenerateTimings* timings) const {
  OMNI_CHECK(group != nullptr);
  OMNI_RETURN_IF_ERROR(CheckRequest(r));
  const int n = group->size(), rank = group->rank();
  OMNI_RETURN_IF_ERROR(CheckSequenceParallel(n));
  const int64_t h = r.height / 8, w = r.width / 8, tokens = h * w, channels = transformer_.config().in_channels;
  if (tokens < n) {
    return InvalidArgument(fmt::format("a {}x{} image has {} latent tokens, fewer than the {} sequence-parallel ranks",
                                       r.width, r.height, tokens, n));
  }
  VisionGenerateTimings local;
  VisionGenerateTimings& t = timings ? *timings : local;
  auto start = std::chrono::steady_clock::now();
  const VisionCondition condition = Condition(r.ids, h, w);
  OMNI_ASSIGN_OR_RETURN(const Tensor noise, InitialLatent(r, h, w));
  const std::vector<int64_t> shards = parallel::EvenShards(tokens, n);
  const int64_t begin = tokens * rank / n, end = begin + shards[static_cast<size_t>(rank)];
  Tensor x = ToTokens(noise).Slice(0, begin, end).Copy();  // [T_r, 16]: this rank's tokens of the latent
  const Tensor spatial = condition.spatial.Slice(0, begin, end);
  const Tensor positions = DitPositions(h, w, begin, end);
  t.condition_s = SecondsSince(start);

  start = std::chrono::steady_clock::now();
  parallel::UlyssesStats stats;
  const SequenceAttention attention = parallel::UlyssesAttention(group, shards, &stats);
  const std::vector<float> sigmas = FlowMatchSigmas(scheduler_, r.steps);
  try {
    for (int i = 0; i < r.steps; ++i) {
      const float sigma = sigmas[static_cast<size_t>(i)], sigma_next = sigmas[static_cast<size_t>(i) + 1];
      const Tensor parts[] = {x, spatial};
      const DitInput in{.tokens = ops::Concat(parts, 1),
                        .positions = positions,
                        .pooled = condition.pooled,
                        .timestep = DitTimestep(sigma)};
      EulerStep(&x, GuidedVelocity(in, r.guidance, attention), sigma, sigma_next);
      t.steps_done = i + 1;
      const auto sync_start = std::chrono::steady_clock::now();
      OMNI_ASSIGN_OR_RETURN(const bool go_on, AgreeToContinue(group, hooks, i));
      t.sync_s += SecondsSince(sync_start);
      if (!go_on) {
        t.all_to_all_s = stats.all_to_all_s;
        t.denoise_s = SecondsSince(start);
        return Cancelled(fmt::format("cancelled after step {} of {}", i + 1, r.steps));
      }
    }
  } catch (const parallel::CollectiveError& e) {  // thrown by the Ulysses attention inside the DiT
    t.all_to_all_s = stats.all_to_all_s;
    return RankFailed(e.status());
  }
  t.all_to_all_s = stats.all_to_all_s;
  t.denoise_s = SecondsSince(start);

  start = std::chrono::steady_clock::now();
  std::vector<int64_t> counts;
  for (int64_t shard : shards) counts.push_back(shard * channels);
  Tensor latent = Tensor::Empty({tokens, channels}, DType::kF32);
  const std::span<const float> mine(x.data<float>(), static_cast<size_t>(x.numel()));
  if (Status s = group->AllGatherV(mine, {latent.data<float>(), static_cast<size_t>(latent.numel())}, counts);
      !s.ok()) {
    return RankFailed(s);
  }
  t.sync_s += SecondsSince(start);
  if (rank != 0) return Tensor();
  start = std::chrono::steady_clock::now();
  Tensor image = vae_.Decode(ToChannels(latent, h, w));
  t.vae_s = SecondsSince(start);
  return image;
}

}  // namespace omni::models
