// Tiled online-softmax attention on the CPU. Front end: ops/attention.h.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tensor/dtype.h"

namespace omni::cpu {

struct AttentionProblem {
  // q [sq, hq, d], k/v [skv, hkv, d], out [sq, hq, d] contiguous; the last
  // dim of q/k/v is contiguous, the others strided (in elements). Paged K/V
  // (kv_block_size > 0): key j is row kv_block_table[j / kv_block_size] *
  // kv_block_size + j % kv_block_size of k and v.
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  DType dtype = DType::kF32;      // of q, k, v
  DType out_dtype = DType::kF32;
  int64_t sq = 0, skv = 0, hq = 0, hkv = 0, d = 0;
  int64_t q_row = 0, q_head = 0, k_row = 0, k_head = 0, v_row = 0, v_head = 0;
  float scale = 1.f;
  // Visibility of key j to query i (all conditions must hold):
  bool causal = false;           // j <= q_offset + i
  int64_t q_offset = 0;
  int64_t window = 0;            // if > 0: (q_offset + i) - j < window
  const int32_t* q_segments = nullptr;   // [sq]; if set, same segment only
  const int32_t* kv_segments = nullptr;  // [skv]
  int64_t block_size = 0;                // if > 0: block_visible[(i/bs)*nkb + j/bs]
  const std::vector<uint8_t>* block_visible = nullptr;
  int64_t kv_block_size = 0;               // 0: k/v rows are keys 0 .. skv - 1; else even
  const int32_t* kv_block_table = nullptr;  // [ceil(skv / kv_block_size)] if paged
};

// Solves every problem (all of one head dim and dtype) with one thread team,
// so a batch of sequences costs one fork/join.
void Attention(std::span<const AttentionProblem> problems);

}  // namespace omni::cpu
