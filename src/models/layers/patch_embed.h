// Patch embedding of ViTs and DiTs as ONE matmul over all patches: the
// stride-p Conv2d (or Conv3d over t frames) of the checkpoint is the same
// map as a Linear over each patch's flattened pixels, so the patches are laid
// out as rows [num_patches, C * t * p * p] and multiplied by the conv weight
// reshaped to [hidden, C * t * p * p] (a single GEMM instead of a conv with
// no overlap to exploit).
//
//   Tensor rows = PatchEmbedding::Patchify(image, 14);   // [C, H, W] -> [(H/14)(W/14), C*14*14]
//   Tensor tokens = embed.Forward(rows);                  // [N, hidden]
//
// Thread-safety: immutable after Load; Forward is const.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "ops/linear.h"
#include "tensor/tensor.h"

namespace omni::models::layers {

struct PatchEmbeddingConfig {
  int64_t in_channels = 3;
  int64_t patch_size = 14;      // p: square patches
  int64_t temporal_patch = 1;   // t: frames per patch (Qwen2.5-ViT: 2); 1 for a Conv2d weight
  int64_t hidden = 0;
  bool bias = true;
  std::string name = "proj";  // "<prefix>.<name>.weight": [hidden, C, p, p], [hidden, C, t, p, p] or flat
};

struct PatchEmbedding {
  int64_t patch_dim = 0;  // C * t * p * p
  ops::Linear proj;       // [hidden, patch_dim], the conv weight flattened in (c, [frame,] y, x) order

  static StatusOr<PatchEmbedding> Load(const Checkpoint& ckpt, std::string_view prefix,
                                       const PatchEmbeddingConfig& config);
  // patches [N, patch_dim] f32/bf16 -> [N, hidden] f32.
  Tensor Forward(const Tensor& patches) const;

  // image [C, H, W] (H, W multiples of p; any float dtype) -> [(H/p) * (W/p),
  // C * p * p] in the image's dtype: patches in row-major order, each row
  // (c, y, x) as nn.Conv2d's weight is laid out.
  static Tensor Patchify(const Tensor& image, int64_t patch_size);
};

}  // namespace omni::models::layers
