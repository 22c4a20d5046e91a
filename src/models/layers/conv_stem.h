// A stack of convolutions, each followed by an activation: the front of the
// audio encoders (Whisper: Conv1d k3 p1, GELU, Conv1d k3 s2 p1, GELU), the
// S3 tokenizer and the VAE/vocoder inputs. Each stage reads "<prefix>.<name>.weight"
// ([O, I, k] for Conv1d, [O, I, kh, kw] for Conv2d) and, with a bias,
// "<prefix>.<name>.bias"; a stage's input channels must be the previous
// stage's output channels.
//
// Thread-safety: immutable after Load; Forward is const.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "models/layers/activation.h"
#include "ops/conv.h"
#include "tensor/tensor.h"

namespace omni::models::layers {

struct ConvStageSpec {
  std::string name;         // e.g. "conv1"
  ops::ConvParams params;   // stride, padding, dilation, groups (not transposed)
  Activation activation = Activation::kGelu;
  bool bias = true;
};

struct ConvStem {
  struct Stage {
    ops::Conv conv;
    Activation activation = Activation::kIdentity;
  };
  int spatial_rank = 1;  // 1: Conv1d, 2: Conv2d
  std::vector<Stage> stages;

  // `spatial_rank` 1 or 2; weights are packed as bf16.
  static StatusOr<ConvStem> Load(const Checkpoint& ckpt, std::string_view prefix, int spatial_rank,
                                 std::span<const ConvStageSpec> specs);
  // x [N, C_in, *spatial] f32/bf16 -> [N, C_out, *spatial'] in x's dtype.
  Tensor Forward(const Tensor& x) const;
  Shape OutputShape(const Shape& input) const;
};

}  // namespace omni::models::layers
