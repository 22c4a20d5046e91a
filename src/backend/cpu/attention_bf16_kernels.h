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

}  // namespace omni::cpu::attention_bf16
