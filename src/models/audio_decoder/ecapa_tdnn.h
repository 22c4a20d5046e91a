// The zero-shot audio decoder's speaker encoder: ECAPA-TDNN (Desplanques et
// al. 2020, the "A.2" form without the frame-level mean/std concatenation)
// as OmniServe's BigVGAN builds it under `spk_emb.` when finetune is false.
// A reference clip's log-mel [num_mels, T] in, one speaker vector
// [emb_dim] out, which the vocoder repeats over time like a table row.
//
//   auto enc = EcapaTdnn::Load(ckpt, "spk_emb.", {.num_mels = 100, ...});
//   StatusOr<Tensor> speaker = (*enc)->Embed(mel);  // [256] f32
//
// Architecture (H = hidden channels, a multiple of 8; every BatchNorm in
// eval form, (x - running_mean) / sqrt(running_var + 1e-5) * weight + bias):
//   layer1   Conv1dReluBn k5 pad 2: conv (no bias), ReLU, then BatchNorm
//   layer2-4 SE_Res2Block with k3, dilation 2, 3, 4 (padding = dilation),
//            scale 8: Conv1dReluBn 1x1; Res2 (channels in 8 groups; group i
//            > 0 adds the previous group's output before its conv, groups
//            0..6 each Conv1dReluBn, group 7 passed through); Conv1dReluBn
//            1x1; squeeze-excitation (time mean, Linear H -> bottleneck,
//            ReLU, Linear -> H, sigmoid, scale); plus the block's input
//   conv     1x1 with bias over the three blocks' outputs concatenated
//            (3H), ReLU
//   pooling  attentive statistics: with global_context_att the input is
//            also given each channel's time mean and sqrt(unbiased var +
//            1e-10); alpha = softmax_t(linear2(tanh(linear1(input)))) (1x1
//            convs with bias); mean = sum_t alpha x, std = sqrt(max(sum_t
//            alpha x^2 - mean^2, 1e-9)); [mean, std] (6H)
//   bn, linear (6H -> emb_dim), bn_out
// The module's InstanceNorm is never applied in its forward, so not here.
// Sizes (H, bottleneck, attention channels, emb_dim) come from the tensors.
//
// Compute is f32 and time-major ([T, C] rows): each convolution is one
// ops::Linear over the rows of its im2col, which needs no per-length
// primitive the way a oneDNN convolution does (a reference clip's length
// varies per request).
// Thread-safety: immutable after Load; Embed is const.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "models/activation_callback.h"
#include "modelfile/checkpoint.h"
#include "tensor/tensor.h"

namespace omni::models {

struct EcapaTdnnConfig {
  int64_t num_mels = 100;
  bool global_context_att = false;
};

class EcapaTdnn {
 public:
  static StatusOr<std::unique_ptr<EcapaTdnn>> Load(const Checkpoint& ckpt, const std::string& prefix,
                                                   const EcapaTdnnConfig& config);
  ~EcapaTdnn();

  int64_t hidden() const;
  int64_t emb_dim() const;

  // mel [num_mels, T] f32, T >= 2 -> [emb_dim] f32. The callback sees
  // "layer1".."layer4", "conv" ([T, C] time-major) and "pooled" ([6H]).
  StatusOr<Tensor> Embed(const Tensor& mel, const ActivationCallback* callback = nullptr) const;

 private:
  struct Impl;
  EcapaTdnn();
  std::unique_ptr<Impl> impl_;
};

}  // namespace omni::models
