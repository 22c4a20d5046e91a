// The CPU kernels that differ by instruction-set level, compiled once per
// level (src/ops/CMakeLists.txt): generic (x86-64-v2), avx2 (x86-64-v3),
// avx512 (x86-64-v4) and avx512bf16 (x86-64-v4 + AVX512-BF16 + AMX). The
// same source gives each level its table; `#if` on the compiler's ISA
// macros picks the forms that need a level's own instructions (vdpbf16ps,
// AMX tiles), and simd.h's vector vocabulary serves the rest at every
// level. The kernels themselves are in the -inl.h fragments included below,
// one per concern (rows, AMX tiles, linear, attention); this file makes
// them one translation unit per level and builds the tables.
//
// Everything here has internal linkage except the table function, and the
// file includes no project header with inline code (kernels.h is
// declarations only): an inline function compiled for AVX-512 and shared
// with the baseline could otherwise be the copy the linker keeps, and the
// binary would die on a CPU without AVX-512. The ctest
// isa_objects_export_only_tables checks the objects for such symbols.
#if defined(__x86_64__)
#include <immintrin.h>
#include <omp.h>
#endif

#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels.h"
#include "backend/cpu/spin_team.h"

#ifndef OMNI_ISA_TABLE
#error "OMNI_ISA_TABLE (the table function's name) is set per level by the build"
#endif

namespace omni::cpu {
namespace {

#include "backend/cpu/isa/simd.h"

inline int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }

#if defined(__AVX512BF16__)
#define OMNI_ISA_BF16 1
#else
#define OMNI_ISA_BF16 0
#endif
#if defined(__AVX512BF16__) && defined(__AMX_TILE__) && defined(__AMX_BF16__)
#define OMNI_ISA_AMX 1
#else
#define OMNI_ISA_AMX 0
#endif

#include "backend/cpu/isa/row_kernels-inl.h"
#include "backend/cpu/isa/anti_alias_kernels-inl.h"
#include "backend/cpu/isa/amx_tiles-inl.h"
#include "backend/cpu/isa/linear_kernels-inl.h"
#include "backend/cpu/isa/attention_kernels-inl.h"

constexpr CpuIsa kLevel =
#if OMNI_ISA_BF16
    CpuIsa::kAvx512Bf16;
#elif defined(__AVX512F__)
    CpuIsa::kAvx512;
#elif defined(__AVX2__)
    CpuIsa::kAvx2;
#else
    CpuIsa::kGeneric;
#endif

constexpr CpuKernels MakeTable() {
  CpuKernels k{};
  k.isa = kLevel;
  k.bf16_to_f32 = Bf16ToF32;
  k.bf16_rows_to_f32 = Bf16RowsToF32;
  k.f32_to_bf16 = F32ToBf16;
  k.silu_row = SiluRow;
  k.exp_shifted = ExpShifted;
  k.sum_squares = SumSquares;
  k.stream_read = StreamRead;
  k.packed_linear = PackedLinear;
  k.anti_aliased_snake_row = AntiAliasedSnakeRow;
  k.attention.score_f32 = ScoreF32;
  k.attention.softmax_tile = SoftmaxTile;
  k.attention.accumulate_pv_f32 = AccumulatePvF32;
#if OMNI_ISA_BF16
  k.attention.score_bf16 = ScoreBf16;
  k.attention.pack_values = PackValues;
  k.attention.pack_probabilities = PackProbabilities;
  k.attention.accumulate_pv_bf16 = AccumulatePvBf16;
#endif
  return k;
}

constexpr CpuKernels kTable = MakeTable();

#if OMNI_ISA_AMX
constexpr CpuKernels MakeAmxTable() {
  CpuKernels k = MakeTable();
  k.isa = CpuIsa::kAmx;
  k.packed_linear = PackedLinearAmx;
  k.attention.amx_begin = AmxBegin;
  k.attention.amx_end = AmxEnd;
  k.team_loops = false;
  k.attention.score_keys_amx = ScoreKeysAmx;
  k.attention.accumulate_pv_amx = AccumulatePvAmx;
  return k;
}
constexpr CpuKernels kAmxTable = MakeAmxTable();
#endif

}  // namespace

namespace isa {
// Named per level by the build (OMNI_ISA_TABLE); the AMX table, where
// compiled, comes with the avx512bf16 one.
const CpuKernels* OMNI_ISA_TABLE(bool amx) {
#if OMNI_ISA_AMX
  if (amx) return &kAmxTable;
#endif
  return amx ? nullptr : &kTable;
}
}  // namespace isa

}  // namespace omni::cpu
