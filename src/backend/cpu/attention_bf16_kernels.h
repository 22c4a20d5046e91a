// bf16 micro-kernels for attention_cpu.cc, using AVX512-BF16 vdpbf16ps
// (two bf16 products per f32 lane, twice the f32 FMA rate). Operands are
// "pair" layouts: a uint32 holds two bf16 values adjacent in the reduction
// dim (low half first), as vdpbf16ps expects. kBq, the query-tile width, is
// a multiple of 16 (one zmm of f32 per 16 queries). Included only by
// attention_cpu.cc.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/amx.h"
#include "backend/cpu/vec_math.h"

namespace omni::cpu::attention_bf16 {

inline __m512bh AsBh(__m512i v) { return (__m512bh)v; }

inline uint32_t LoadPair(const uint16_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// s[r][0..kBq) = scale * sum_c k[r][c] * q[.][c] for R keys; qt is the
// pair layout [d/2][kBq] of the query block; k rows are raw bf16.
// Each (key, query) lane accumulates over the pairs in the same order
// whatever R and kBq are.
template <int R, int kBq>
inline void ScoreRows(const uint16_t* k, int64_t k_stride, const uint32_t* qt, int64_t pairs, float scale,
                      float* s) {
  static_assert(kBq % 16 == 0);
  constexpr int kNq = kBq / 16;
  __m512 acc[R][kNq];
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < kNq; ++x) acc[r][x] = _mm512_setzero_ps();
  for (int64_t cp = 0; cp < pairs; ++cp) {
    const uint32_t* qrow = qt + cp * kBq;
    __m512bh q[kNq];
    for (int x = 0; x < kNq; ++x) q[x] = AsBh(_mm512_loadu_si512(qrow + 16 * x));
    for (int r = 0; r < R; ++r) {
      const __m512bh kb = AsBh(_mm512_set1_epi32(static_cast<int>(LoadPair(k + r * k_stride + 2 * cp))));
      for (int x = 0; x < kNq; ++x) acc[r][x] = _mm512_dpbf16_ps(acc[r][x], kb, q[x]);
    }
  }
  const __m512 sc = _mm512_set1_ps(scale);
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < kNq; ++x) _mm512_storeu_ps(s + r * kBq + 16 * x, _mm512_mul_ps(acc[r][x], sc));
}

// Two rows of 16 bf16 (b may be absent) -> 16 pairs (a[i], b[i]).
inline __m512i Interleave(__m256i a, __m256i b) {
  return _mm512_or_si512(_mm512_cvtepu16_epi32(a), _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}

// Probabilities st [kn][kBq] (f32) -> pairs pp [ceil(kn/2)][kBq] over keys.
template <int kBq>
inline void PackProbabilities(const float* st, int64_t kn, uint32_t* pp) {
  for (int64_t j = 0; j < kn; j += 2) {
    for (int q0 = 0; q0 < kBq; q0 += 16) {
      __m256bh a = _mm512_cvtneps_pbh(_mm512_loadu_ps(st + j * kBq + q0));
      __m256bh b = j + 1 < kn ? _mm512_cvtneps_pbh(_mm512_loadu_ps(st + (j + 1) * kBq + q0))
                              : (__m256bh)_mm256_setzero_si256();
      _mm512_storeu_si512(pp + (j / 2) * kBq + q0, Interleave((__m256i)a, (__m256i)b));
    }
  }
}

// V rows (raw bf16, row stride v_stride) -> pairs vp [ceil(kn/2)][dpad] over
// keys, dpad = d rounded up to 16, padding zero.
inline void PackValues(const uint16_t* v, int64_t v_stride, int64_t kn, int64_t d, int64_t dpad, uint32_t* vp) {
  for (int64_t j = 0; j < kn; j += 2) {
    const uint16_t* ra = v + j * v_stride;
    const uint16_t* rb = v + (j + 1) * v_stride;
    for (int64_t c0 = 0; c0 < dpad; c0 += 16) {
      const __mmask16 m = TailMask(d - c0);
      const __m256i a = _mm256_maskz_loadu_epi16(m, ra + c0);
      const __m256i b = j + 1 < kn ? _mm256_maskz_loadu_epi16(m, rb + c0) : _mm256_setzero_si256();
      _mm512_storeu_si512(vp + (j / 2) * dpad + c0, Interleave(a, b));
    }
  }
}

// o[r][0 .. 16*NV) += sum_jp pp[jp][r] . vp[jp][...] for R queries.
template <int R, int NV, int kBq>
inline void AccumulateRows(const uint32_t* pp, int64_t pairs, const uint32_t* vp, int64_t dpad, float* o, int64_t d,
                           __mmask16 tail) {
  __m512 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < NV; ++x)
      acc[r][x] = x == NV - 1 ? _mm512_maskz_loadu_ps(tail, o + r * d + 16 * x) : _mm512_loadu_ps(o + r * d + 16 * x);
  for (int64_t jp = 0; jp < pairs; ++jp) {
    const uint32_t* vrow = vp + jp * dpad;
    __m512bh vv[NV];
    for (int x = 0; x < NV; ++x) vv[x] = AsBh(_mm512_loadu_si512(vrow + 16 * x));
    for (int r = 0; r < R; ++r) {
      const __m512bh pb = AsBh(_mm512_set1_epi32(static_cast<int>(pp[jp * kBq + r])));
      for (int x = 0; x < NV; ++x) acc[r][x] = _mm512_dpbf16_ps(acc[r][x], pb, vv[x]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < NV; ++x) {
      if (x == NV - 1) {
        _mm512_mask_storeu_ps(o + r * d + 16 * x, tail, acc[r][x]);
      } else {
        _mm512_storeu_ps(o + r * d + 16 * x, acc[r][x]);
      }
    }
}

template <int NV, int kBq>
void AccumulateChunk(const uint32_t* pp, int64_t pairs, const uint32_t* vp, int64_t dpad, float* o, int64_t d,
                     int rows, __mmask16 tail) {
  int r = 0;
  for (; r + 2 <= rows; r += 2) AccumulateRows<2, NV, kBq>(pp + r, pairs, vp, dpad, o + r * d, d, tail);
  for (; r < rows; ++r) AccumulateRows<1, NV, kBq>(pp + r, pairs, vp, dpad, o + r * d, d, tail);
}

// O [rows][d] += P x V from the pair layouts, in chunks of 128 columns.
template <int kBq>
void AccumulatePV(const uint32_t* pp, int64_t pairs, const uint32_t* vp, int64_t dpad, float* o, int64_t d,
                  int rows) {
  for (int64_t c0 = 0; c0 < d; c0 += 128) {
    const int64_t width = std::min<int64_t>(128, d - c0);
    const int nv = static_cast<int>((width + 15) / 16);
    const __mmask16 tail = TailMask(width - 16 * (nv - 1));
    const uint32_t* vc = vp + c0;
    float* oc = o + c0;
    switch (nv) {
      case 1: AccumulateChunk<1, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 2: AccumulateChunk<2, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 3: AccumulateChunk<3, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 4: AccumulateChunk<4, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 5: AccumulateChunk<5, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 6: AccumulateChunk<6, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 7: AccumulateChunk<7, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      default: AccumulateChunk<8, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
    }
  }
}

#if OMNI_HAVE_AMX
// The same two products on AMX tiles (ConfigureTiles(16): tiles 0-3
// accumulate, 4 holds A, 5 B). Every output element is one row of A against
// one column of B, summed over the reduction dim in a fixed order, so a
// query's result does not depend on the other rows of its tile.

// s[j][0..kBq) = sum_c k[j][c] * q[.][c] (unscaled) for 16 keys: A is the
// key rows themselves (bf16, row stride k_stride, 32 of d per step), B the
// query pair layout qt [d/2][kBq]; d is a multiple of 32.
template <int kBq>
inline void ScoreKeysAmx(const uint16_t* k, int64_t k_stride, const uint32_t* qt, int64_t d, float* s) {
  static_assert(kBq == 16 || kBq == 64);
  _tile_zero(0);
  if constexpr (kBq == 64) {
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t c0 = 0; c0 < d; c0 += 32) {
    const uint32_t* b = qt + (c0 / 2) * kBq;
    OMNI_TILE_LOADD(4, k + c0, k_stride * 2);
    OMNI_TILE_LOADD(5, b, kBq * 4);
    _tile_dpbf16ps(0, 4, 5);
    if constexpr (kBq == 64) {
      OMNI_TILE_LOADD(5, b + 16, kBq * 4);
      _tile_dpbf16ps(1, 4, 5);
      OMNI_TILE_LOADD(5, b + 32, kBq * 4);
      _tile_dpbf16ps(2, 4, 5);
      OMNI_TILE_LOADD(5, b + 48, kBq * 4);
      _tile_dpbf16ps(3, 4, 5);
    }
  }
  _tile_stored(0, s, kBq * 4);
  if constexpr (kBq == 64) {
    _tile_stored(1, s + 16, kBq * 4);
    _tile_stored(2, s + 32, kBq * 4);
    _tile_stored(3, s + 48, kBq * 4);
  }
}

// dst[c][r] = src[r][c] for a 16 x 16 block of uint32 (strides in elements).
inline void Transpose16x16(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride) {
  __m512i r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(src + i * src_stride);
  // Within each 128-bit lane: interleave row pairs, then row quads.
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);      // column 4L + 0 of rows i..i+3
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);  // 4L + 1
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  // r[4g + c] lane L holds column 4L + c of rows 4g..4g+3; gather the four
  // row groups of one column into one register.
  for (int c = 0; c < 4; ++c) {
    const __m512i even_a = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x88);  // lanes 0, 2 of groups 0, 1
    const __m512i odd_a = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xDD);   // lanes 1, 3
    const __m512i even_b = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x88);
    const __m512i odd_b = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xDD);
    _mm512_storeu_si512(dst + (c + 0) * dst_stride, _mm512_shuffle_i32x4(even_a, even_b, 0x88));
    _mm512_storeu_si512(dst + (c + 8) * dst_stride, _mm512_shuffle_i32x4(even_a, even_b, 0xDD));
    _mm512_storeu_si512(dst + (c + 4) * dst_stride, _mm512_shuffle_i32x4(odd_a, odd_b, 0x88));
    _mm512_storeu_si512(dst + (c + 12) * dst_stride, _mm512_shuffle_i32x4(odd_a, odd_b, 0xDD));
  }
}

// O [rows][d] += P x V: pa [kBq][32] is P as rows of key pairs (A), vp
// [32][dpad] the value pairs (B, dpad == d, a multiple of 32); `steps` runs
// of 16 key pairs, rows past the tile's keys zero in both.
template <int kBq>
inline void AccumulatePVAmx(const uint32_t* pa, int64_t steps, const uint32_t* vp, float* o, int64_t d, int rows) {
  const int64_t o_stride = d * 4, v_stride = d * 4;
  for (int q0 = 0; q0 < rows; q0 += 16) {
    float* orow = o + q0 * d;
    const uint32_t* arow = pa + q0 * 32;
    for (int64_t c0 = 0; c0 < d; c0 += 32) {  // two 16-column accumulators at a time
      OMNI_TILE_LOADD(0, orow + c0, o_stride);
      OMNI_TILE_LOADD(1, orow + c0 + 16, o_stride);
      for (int64_t s = 0; s < steps; ++s) {
        OMNI_TILE_LOADD(4, arow + 16 * s, 32 * 4);
        OMNI_TILE_LOADD(5, vp + 16 * s * d + c0, v_stride);
        _tile_dpbf16ps(0, 4, 5);
        OMNI_TILE_LOADD(5, vp + 16 * s * d + c0 + 16, v_stride);
        _tile_dpbf16ps(1, 4, 5);
      }
      _tile_stored(0, orow + c0, o_stride);
      _tile_stored(1, orow + c0 + 16, o_stride);
    }
  }
}
#endif

}  // namespace omni::cpu::attention_bf16
