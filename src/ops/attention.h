// Scaled dot-product attention with GQA and masks, computed tile by tile
// with an online softmax (memory O(seq x block); the [Sq, Skv] score matrix
// is never built).
//
//   AttentionParams p;
//   p.scale = 1 / std::sqrt(128.f);
//   p.mask.causal = true;
//   p.mask.q_offset = cached_tokens;  // decoding after a KV prefix
//   Tensor o = ops::Attention(q, k, v, p);  // [Sq, Hq, D]
//
// Masks combine (a key is visible only if every set condition allows it):
//  - causal: key j visible to query i iff j <= q_offset + i;
//  - window > 0: (q_offset + i) - j < window (sliding window, Mistral style);
//  - segments: q_segments[i] == kv_segments[j] (packed varlen batches or
//    window attention as block-diagonal masks; see SegmentIdsFromCuSeqlens);
//  - block predicate: block_visible(i / block_size, j / block_size), an
//    arbitrary tile-level pattern (evaluated once per block pair per call).
// A query that sees no key gets an output row of zeros.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tensor/tensor.h"

namespace omni::ops {

struct AttentionMask {
  bool causal = false;
  int64_t q_offset = 0;
  int64_t window = 0;  // 0: no sliding window
  std::span<const int32_t> q_segments;   // [Sq] or empty
  std::span<const int32_t> kv_segments;  // [Skv] or empty (then q_segments is used when Sq == Skv)
  int64_t block_size = 0;                // 0: no block predicate
  std::function<bool(int64_t q_block, int64_t kv_block)> block_visible;
};

struct AttentionParams {
  float scale = 1.f;  // multiplies q.k; pass 1/sqrt(D) or the model's own
  AttentionMask mask;
};

// q [Sq, Hq, D], k/v [Skv, Hkv, D] with Hq % Hkv == 0 (GQA), f32 or bf16
// (all three alike; views with a contiguous last dim are read in place, so
// slices of a fused QKV projection need no copy). Returns [Sq, Hq, D] in
// q's dtype. f32 accumulation.
Tensor Attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionParams& params);

// cu_seqlens [0, n0, n0+n1, ...] -> segment id per token [total].
std::vector<int32_t> SegmentIdsFromCuSeqlens(std::span<const int32_t> cu_seqlens);

}  // namespace omni::ops
