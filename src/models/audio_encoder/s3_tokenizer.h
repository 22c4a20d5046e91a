// The audio encoder's discrete branch: CosyVoice2's S3 tokenizer v2 (FSMN
// attention and FSQ), from the shared blocks.
//
//   mel [128, F] (WhisperMel::Compute: the whole piece, no 30 s padding)
//   conv1 Conv1d(128 -> S, k3, s2, p1) + GELU, conv2 Conv1d(S -> S, k3, s2, p1) + GELU
//   blocks   a = attn_ln(x)                    LayerNorm eps 1e-6
//            q, k = RoPE(query(a)), RoPE(key(a))   heads of 64, theta 1e4, rotate-half,
//                                              positions 0..T-1; key has no bias
//            v = value(a);  fsmn = v + depthwise_conv_k31(v)   (zero padding 15 | 15, no bias)
//            x += out(softmax(q k^T / 8) v) + fsmn
//            x += mlp.2(GELU(mlp.0(mlp_ln(x))))  LayerNorm eps 1e-5, width 4 S
//   FSQ      h = tanh(project_down(x)) * 0.999 (S -> 8);  digit_i = round(h_i) + 1 in {0, 1, 2}
//            id = sum_i digit_i * 3^i (digit 0 least significant): ids in [0, 6561)
// T = ((F - 1) / 2 + 1 - 1) / 2 + 1 tokens: 25 per second. The reference
// scales q and k by 64^-1/4 each; one 1/8 on the scores is the same product.
// round() is half to even, as torch.round.
//
// Tensor names under model.discrete_audio_model: encoder.{conv1,conv2},
// encoder.blocks.{i}.{attn.{query,key,value,out,fsmn_block}, attn_ln, mlp.0,
// mlp.2, mlp_ln}, quantizer._codebook.project_down.
// Named activations: "convs", "blocks.{i}", "fsq" (h before rounding, [T, 8]).
// Thread-safety: immutable after Load; Encode is const.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "models/activation_callback.h"
#include "models/audio_encoder/audio_encoder_config.h"
#include "tensor/tensor.h"

namespace omni::models {

class S3Tokenizer {
 public:
  static StatusOr<std::unique_ptr<S3Tokenizer>> Load(const Checkpoint& ckpt, const S3TokenizerConfig& config);
  ~S3Tokenizer();

  // Tokens a mel of `frames` frames gives.
  static int64_t TokensForFrames(int64_t frames);

  // mel [128, frames >= 1] f32 -> TokensForFrames(frames) ids in [0, 6561).
  StatusOr<std::vector<int32_t>> Encode(const Tensor& mel, const ActivationCallback* on_activation = nullptr) const;

  const S3TokenizerConfig& config() const { return config_; }

 private:
  struct Weights;
  S3Tokenizer(S3TokenizerConfig config, std::unique_ptr<Weights> weights);

  S3TokenizerConfig config_;
  std::unique_ptr<Weights> w_;
};

}  // namespace omni::models
