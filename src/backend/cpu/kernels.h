// The table of CPU kernels that differ by instruction-set level. One table
// per level is compiled from isa/kernels_isa.cc; Kernels() returns the one
// chosen at start (cpu_isa.h). The rest of the backend calls the hot loops
// only through it, so it holds no x86 intrinsic and a new level (or another
// architecture) is a new table, not edits through the tree (docs/OPS.md).
//
// The header has plain declarations only: it is included by the per-level
// translation units, which must share no inline code with the rest.
#pragma once

#include <cstdint>

#include "backend/cpu/isa_level.h"

namespace omni::cpu {

// Where the packed bf16 weight layout (oneDNN's BA16a64b2a) puts its blocks:
// weights [K, N] cut into (32 k x 64 n) blocks stored as [16 k-pairs][64 n]
// [2]; `k_block` and `n_block` are the element strides between blocks, and
// the k-blocks of one n-block are adjacent (one strip per 64 columns).
struct PackedBf16Layout {
  int64_t k_block = 0, n_block = 0, k_padded = 0, n_padded = 0;
};

// out[r][0..n) = x[r] . W (+ bias) for r < m, over packed bf16 weights; x
// rows are bf16 padded with zeros to k_padded. Every row's sum runs over k
// in one order whatever m is (so a row's result does not depend on its
// batch). Runs on `threads` OpenMP threads.
struct PackedLinearArgs {
  const uint16_t* w = nullptr;
  PackedBf16Layout layout;
  const uint16_t* x = nullptr;
  int64_t m = 0, n = 0;
  const float* bias = nullptr;  // f32 [n] or null
  bool out_bf16 = false;        // else f32
  void* out = nullptr;          // [m][n]
  int threads = 1;
};

// The flash-attention tile kernels (attention_cpu.cc). `bq` is a tile's
// query count, 16 or 64; st is scores [kn keys][bq], qt queries [d][bq].
struct AttentionKernels {
  // f32 operands, any head dim d.
  void (*score_f32)(const float* k, int64_t k_stride, int64_t kn, const float* qt, int64_t d, int bq, float* st);
  // Online softmax of one tile: st scores in, probabilities out; running
  // max m, sum l, and the factor corr the output must be scaled by ([bq]).
  void (*softmax_tile)(float* st, int64_t kn, int bq, float* m, float* l, float* corr);
  // o [rows][d] += P (st as above) x V [kn][d] (rows v_stride apart).
  void (*accumulate_pv_f32)(const float* st, int64_t kn, int bq, const float* v, int64_t v_stride, float* o,
                            int64_t d, int rows);

  // bf16 pair operands (two bf16 adjacent in the reduction dim per uint32);
  // null below avx512bf16, where bf16 attention converts tiles to f32.
  // qt is [d/2][bq] pairs; scores are scaled by `scale`.
  void (*score_bf16)(const uint16_t* k, int64_t k_stride, int64_t kn, const uint32_t* qt, int64_t pairs,
                     float scale, int bq, float* st);
  // V rows -> vp [ceil(kn/2)][dpad] key pairs, dpad = d rounded up to 16.
  void (*pack_values)(const uint16_t* v, int64_t v_stride, int64_t kn, int64_t d, int64_t dpad, uint32_t* vp);
  // Probabilities st -> pp [ceil(kn/2)][bq] key pairs.
  void (*pack_probabilities)(const float* st, int64_t kn, int bq, uint32_t* pp);
  void (*accumulate_pv_bf16)(const uint32_t* pp, int64_t pairs, int bq, const uint32_t* vp, int64_t dpad, float* o,
                             int64_t d, int rows);

  // AMX tiles (null below amx): a thread's tile state around its tiles,
  // 16 keys' unscaled scores (d a multiple of 32), and O += P x V from pp
  // and vp as packed above (both zero-padded here; pa is scratch [bq][32]).
  void (*amx_begin)();
  void (*amx_end)();
  void (*score_keys_amx)(const uint16_t* k, int64_t k_stride, const uint32_t* qt, int64_t d, int bq, float* s);
  void (*accumulate_pv_amx)(uint32_t* pp, uint32_t* vp, uint32_t* pa, int64_t kn, int bq, float* o, int64_t d,
                            int rows);
};

struct CpuKernels {
  CpuIsa isa = CpuIsa::kGeneric;
  void (*bf16_to_f32)(const uint16_t* src, float* dst, int64_t n);
  // rows x n bf16 at src_stride elements apart -> dst [rows][n] f32.
  void (*bf16_rows_to_f32)(const uint16_t* src, int64_t src_stride, int64_t rows, int64_t n, float* dst);
  void (*f32_to_bf16)(const float* src, uint16_t* dst, int64_t n);
  // a[i] = silu(a[i]) * (mul ? mul[i] : 1).
  void (*silu_row)(float* a, const float* mul, int64_t n);
  // v[i] = exp(v[i] - shift); returns the sum (in double).
  double (*exp_shifted)(float* v, int64_t n, float shift);
  // sum of v[i]^2 in double, the same for a row whatever else is computed.
  double (*sum_squares)(const float* v, int64_t n);
  // Reads `bytes` (a multiple of 256, 64-byte aligned) as fast as this
  // level can: the streaming bandwidth benchmarks' bound.
  uint64_t (*stream_read)(const void* p, int64_t bytes);
  void (*packed_linear)(const PackedLinearArgs& a);
  // BigVGAN's anti-aliased SnakeBeta on one row (anti_alias_cpu.h): in [t]
  // -> out [t], 2x upsampled through the 12 taps f, u + inv_beta
  // sin^2(alpha u), downsampled through f. scratch: 3 t + 24 floats.
  void (*anti_aliased_snake_row)(const float* in, int64_t t, float alpha, float inv_beta, const float* f, float* out,
                                 float* scratch);
  AttentionKernels attention;
  // Parallel loops run on the spin team (spin_team.h); false at AMX, whose
  // tiles need OpenMP's per-thread setup, so a step there is all OpenMP.
  bool team_loops = true;
};

// The table of the active level (ActiveIsa()).
const CpuKernels& Kernels();

// Each level's table; null where this build has none. For tests and
// benchmarks that compare levels; the engine uses Kernels().
const CpuKernels* KernelsFor(CpuIsa isa);

}  // namespace omni::cpu
