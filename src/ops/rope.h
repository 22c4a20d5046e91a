// Rotary position embeddings.
//
// The caller supplies inv_freq [rot/2] (f32), so every Hugging Face rope
// scaling (linear, dynamic NTK, YaRN, llama3) is the caller's computation of
// inv_freq plus attention_scaling, exactly as HF's rope_init_fn returns them.
// Angles are computed in double, then cos/sin are multiplied by
// attention_scaling.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace omni::ops {

enum class RopeStyle {
  kNeox,         // HF LLaMA rotate_half: pairs (i, i + rot/2)
  kInterleaved,  // GPT-J / Flux: pairs (2i, 2i + 1)
};

struct RopeParams {
  Tensor inv_freq;  // [rot/2] f32; rot <= D, dims >= rot pass through (partial rotary)
  RopeStyle style = RopeStyle::kNeox;
  float attention_scaling = 1.f;
};

// x [T, H, D] f32/bf16 (views with a contiguous last dim are fine);
// positions [T] i32/i64. Returns a new [T, H, D] tensor in x's dtype.
Tensor ApplyRope(const Tensor& x, const Tensor& positions, const RopeParams& params);

// Multi-axis RoPE (Qwen2-VL M-RoPE, Flux's 3-axis RoPE): positions [A, T];
// frequency pair f (0 <= f < rot/2) takes its position from axis a where
// sections = {n_0, ..., n_{A-1}} (sum rot/2) assigns the first n_0 pairs to
// axis 0, the next n_1 to axis 1, and so on. Qwen2-VL: inv_freq of the full
// head dim, sections = mrope_section, kNeox. Flux: inv_freq = concat of each
// axis's own frequencies, sections = axes_dim / 2, kInterleaved.
Tensor ApplyMultiAxisRope(const Tensor& x, const Tensor& positions, const std::vector<int64_t>& sections,
                          const RopeParams& params);

// HF default inv_freq: 1 / theta^(2i / dim), i < dim/2.
Tensor RopeInvFreq(int64_t dim, double theta);

}  // namespace omni::ops
