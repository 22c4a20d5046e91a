// The vision decoder pipeline (OmniServe's VisionTokenToImagePipeline): 729
// discrete image ids and an output size -> an RGB image.
//
//   condition: E = vocab_embeddings[ids] [729, D]; pooled = mean(E);
//              E as a 27x27 grid, bilinear (align_corners false) to the latent grid
//   latent x:  [16, H/8, W/8] standard normal noise from the seed
//   per step:  v = DiT([x | E], t) (+ g (v - DiT2(...)) with autoguidance); x += (sigma' - sigma) v
//   image:     VAE decoder(x) -> [3, H, W] in [-1, 1]
//
//   auto decoder = VisionDecoder::Load("/models/vd");
//   auto image = (*decoder)->Generate({.ids = ids, .width = 656, .height = 880, .steps = 25, .seed = 7});
//
// The noise is omniserve's own counter-based generator (SplitMix64 and
// Box-Muller), the same on every machine and for any sequence split, so a
// seed gives the same image at any --sp; OmniServe's torch.randn stream is
// not reproduced (its chainer sends no seed, so its images are not
// reproducible at all).
//
// Sequence parallelism (--sp N): each of N ranks calls GenerateSharded with
// the same request and its handle on the group; each runs the DiT on 1/N of
// the latent's tokens, with Ulysses attention (parallel/ulysses_attention.h)
// exchanging heads for tokens around each attention.
//
// Thread-safety: immutable after Load; Generate and GenerateSharded may run
// concurrently (the cached oneDNN primitives run with a per-thread
// scratchpad; ops' ConcurrentForwardMatchesSerial tests check it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "models/vision_decoder/dit.h"
#include "models/vision_decoder/flow_match_scheduler.h"
#include "models/vision_decoder/vae_decoder.h"
#include "tensor/tensor.h"

namespace omni::parallel {
class Collective;
}  // namespace omni::parallel

namespace omni::models {

// A standard normal [channels, h, w] f32 tensor for `seed`: element j from
// the j-th pair of SplitMix64 outputs (Box-Muller).
Tensor SeededNoise(uint64_t seed, int64_t channels, int64_t h, int64_t w);

struct VisionCondition {
  Tensor spatial;  // [h * w, D] f32: the ids' embeddings resized to the latent grid, token-major
  Tensor pooled;   // [1, D] f32: their mean
};

struct VisionGenerateRequest {
  std::vector<int32_t> ids;  // num_ids() ids, each < vocab_size() (checked by the caller's parser)
  int width = 768, height = 768;  // multiples of 16
  int steps = 25;
  float guidance = 0.75f;  // autoguidance scale; ignored without transformer2
  uint64_t seed = 0;
  std::optional<Tensor> noise;  // [16, h, w] f32 initial latent instead of SeededNoise(seed) (tests)
};

struct VisionGenerateTimings {
  double condition_s = 0, denoise_s = 0, vae_s = 0;
  int steps_done = 0;
  // GenerateSharded only (parts of denoise_s, and the final gather): the
  // Ulysses all-to-alls, and agreeing on each step's continue flag plus
  // gathering the latent.
  double all_to_all_s = 0, sync_s = 0;
};

struct VisionGenerateHooks {
  // Called after each step with its index (0-based); false cancels the rest.
  std::function<bool(int step)> after_step;
};

class VisionDecoder {
 public:
  // `dir`: model_index.json, scheduler/, transformer/, transformer2/ (when
  // model_index names it), vae/, token_embedder/.
  static StatusOr<std::unique_ptr<VisionDecoder>> Load(const std::string& dir);

  // -> [3, height, width] f32 (unclamped VAE output). Cancelled when a hook
  // said stop; InvalidArgument for sizes or steps out of range. It is
  // GenerateSharded over a group of one: one loop for both.
  StatusOr<Tensor> Generate(const VisionGenerateRequest& request, const VisionGenerateHooks& hooks = {},
                            VisionGenerateTimings* timings = nullptr) const;

  // Generate as one rank of a sequence-parallel group: every rank of `group`
  // calls it with the same request. Each computes the condition and the
  // seeded noise in full (cheap), keeps its shard of the latent's tokens
  // (parallel::EvenShards, in row-major order), runs the DiTs on those alone
  // with Ulysses attention, and at the end the shards are gathered and rank 0
  // runs the VAE. Rank 0 gets the image; the other ranks get an empty
  // Tensor. hooks.after_step is consulted on rank 0 only and its answer
  // broadcast, so all ranks stop after the same step. Errors: those of Generate;
  // InvalidArgument when the group size does not divide a DiT's heads or
  // exceeds the token count; Unavailable("sequence-parallel rank failed:
  // ...") when a collective fails, after which the group is broken and the
  // caller builds a new one.
  StatusOr<Tensor> GenerateSharded(const VisionGenerateRequest& request, parallel::Collective* group,
                                   const VisionGenerateHooks& hooks = {},
                                   VisionGenerateTimings* timings = nullptr) const;

  // InvalidArgument when `sp` ranks cannot split the DiTs' heads (the
  // decoder's start-up check for --sp).
  Status CheckSequenceParallel(int sp) const;

  // The pieces, for tests and the sequence-parallel ranks.
  VisionCondition Condition(const std::vector<int32_t>& ids, int64_t h, int64_t w) const;
  // One step: x [16, h, w] f32 -> x + (sigma_next - sigma) * guided velocity.
  void Step(Tensor* x, const VisionCondition& condition, float sigma, float sigma_next, float guidance,
            const SequenceAttention& attention = {}) const;
  // The guided velocity (autoguidance when transformer2 exists and guidance
  // is not 0), token-major [h * w, 16] f32.
  Tensor Velocity(const Tensor& x, const VisionCondition& condition, float sigma, float guidance,
                  const SequenceAttention& attention = {}) const;

  const VisionDit& transformer() const { return transformer_; }
  const VisionDit* transformer2() const { return transformer2_ ? &*transformer2_ : nullptr; }
  const VaeDecoder& vae() const { return vae_; }
  const FlowMatchSchedulerConfig& scheduler() const { return scheduler_; }
  int64_t vocab_size() const { return vocab_embeddings_.dim(0); }
  static constexpr int kNumIds = 729;     // a 27 x 27 grid
  static constexpr int kMaxSteps = 200;

 private:
  VisionDecoder(VisionDit transformer, std::optional<VisionDit> transformer2, VaeDecoder vae)
      : transformer_(std::move(transformer)), transformer2_(std::move(transformer2)), vae_(std::move(vae)) {}

  Status CheckRequest(const VisionGenerateRequest& request) const;
  // [16, h, w] f32: the request's noise (copied) or SeededNoise.
  StatusOr<Tensor> InitialLatent(const VisionGenerateRequest& request, int64_t h, int64_t w) const;
  // The guided velocity of the tokens in `in`, token-major [T, 16] f32.
  Tensor GuidedVelocity(const DitInput& in, float guidance, const SequenceAttention& attention) const;

  VisionDit transformer_;
  std::optional<VisionDit> transformer2_;
  VaeDecoder vae_;
  FlowMatchSchedulerConfig scheduler_;
  std::unique_ptr<Checkpoint> embedder_;  // token_embedder/: vocab_embeddings_ is a view of its mapping
  Tensor vocab_embeddings_;               // [vocab, D] as stored
};

}  // namespace omni::models
