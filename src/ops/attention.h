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

// One sequence of a PagedAttention batch.
struct PagedSequence {
  int64_t num_queries = 0;               // its rows of q, after the previous sequences' rows
  int64_t start_position = 0;            // position of its first query
  std::span<const int32_t> block_table;  // cache block of positions [b * block_size, (b + 1) * block_size)
};

// Causal attention of a batch of sequences straight from a paged KV cache:
// query i of a sequence sits at position start_position + i and sees the
// keys at positions 0 .. start_position + i, which must already be in the
// cache. q [T, Hq, D] stacks the sequences' queries in order; k_cache/v_cache
// [num_blocks, block_size, Hkv, D] (block_size even) in q's dtype. Returns
// [T, Hq, D] in q's dtype. Each query row comes out bit for bit as from
// Attention() over the sequence's keys gathered into one tensor, and the same
// whether its sequence has one query in the batch or many; the whole batch
// shares one thread team.
Tensor PagedAttention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      std::span<const PagedSequence> sequences, float scale);

// cu_seqlens [0, n0, n0+n1, ...] -> segment id per token [total].
std::vector<int32_t> SegmentIdsFromCuSeqlens(std::span<const int32_t> cu_seqlens);

}  // namespace omni::ops
