// Adaptive LayerNorm modulation (DiT, Peebles & Xie 2023): a conditioning
// vector c (timestep + class/text embedding) gives per-block shift, scale and
// gate vectors through SiLU and one Linear, and they act on the normalised
// residual stream:
//
//   [shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp] = chunks(linear(silu(c)))
//   h = h + gate_msa * attn(Modulate(norm(h), shift_msa, scale_msa))
//
// with Modulate(x, shift, scale) = x * (1 + scale) + shift. The chunk count
// and order are the checkpoint's (6 for a DiT block, 2 = shift, scale for
// the final layer); chunk i is rows [i * hidden, (i + 1) * hidden) of the
// Linear's output, as torch.chunk splits it.
//
// Thread-safety: immutable after Load; Forward is const.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "ops/linear.h"
#include "tensor/tensor.h"

namespace omni::models::layers {

struct AdaLnConfig {
  int64_t cond_dim = 0;    // c's width
  int64_t hidden = 0;      // each chunk's width
  int64_t num_chunks = 6;  // 6: DiT block; 2: final layer
  bool bias = true;
};

struct AdaLnModulation {
  int64_t hidden = 0, num_chunks = 0;
  ops::Linear linear;  // [num_chunks * hidden, cond_dim]

  // Reads "<prefix>.weight" / "<prefix>.bias" (e.g. "blocks.0.adaLN_modulation.1").
  static StatusOr<AdaLnModulation> Load(const Checkpoint& ckpt, std::string_view prefix, const AdaLnConfig& config);
  // c [B, cond_dim] f32/bf16 -> num_chunks contiguous [B, hidden] f32 tensors.
  std::vector<Tensor> Forward(const Tensor& c) const;
};

// x [B, T, hidden] with shift/scale [B, hidden] (one per batch item), or
// x [T, hidden] with shift/scale [hidden] or [1, hidden]: x * (1 + scale) + shift, f32.
Tensor Modulate(const Tensor& x, const Tensor& shift, const Tensor& scale);
// h + gate * y with the gate broadcast as in Modulate; f32.
Tensor GatedResidual(const Tensor& h, const Tensor& gate, const Tensor& y);

}  // namespace omni::models::layers
