// The flash-attention tile kernels per ISA level: f32 operands at every
// level, bf16 pairs with vdpbf16ps, and AMX tiles.
// kernels_isa.cc includes this fragment once per ISA level, inside its
// anonymous namespace, after simd.h (the vector vocabulary) and its
// OMNI_ISA_BF16 / OMNI_ISA_AMX switches; it is not a header of its own.

// Attention tiles, f32 operands (every level).

// Rows per score pass: as many as half the vector registers hold.
template <int kBq>
constexpr int ScoreRowsPerPass() {
  constexpr int nq = kBq / kLanes, regs = kLanes == 16 ? 32 : 16;
  return regs / 2 / nq < 1 ? 1 : (regs / 2 / nq > 4 ? 4 : regs / 2 / nq);
}

// s[r][0..kBq) = sum_c k[r][c] * qt[c][0..kBq) for R keys.
template <int R, int kBq>
void ScoreRowsF32(const float* k, int64_t k_stride, const float* qt, int64_t d, float* s) {
  constexpr int kNq = kBq / kLanes;
  V acc[R][kNq];
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < kNq; ++x) acc[r][x] = Zero();
  for (int64_t c = 0; c < d; ++c) {
    V q[kNq];
    for (int x = 0; x < kNq; ++x) q[x] = Load(qt + c * kBq + x * kLanes);
    for (int r = 0; r < R; ++r) {
      const V kb = Set1(k[r * k_stride + c]);
      for (int x = 0; x < kNq; ++x) acc[r][x] = MulAdd(kb, q[x], acc[r][x]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < kNq; ++x) Store(s + r * kBq + x * kLanes, acc[r][x]);
}

template <int kBq>
void ScoreF32T(const float* k, int64_t k_stride, int64_t kn, const float* qt, int64_t d, float* st) {
  constexpr int R = ScoreRowsPerPass<kBq>();
  int64_t j = 0;
  for (; j + R <= kn; j += R) ScoreRowsF32<R, kBq>(k + j * k_stride, k_stride, qt, d, st + j * kBq);
  for (; j < kn; ++j) ScoreRowsF32<1, kBq>(k + j * k_stride, k_stride, qt, d, st + j * kBq);
}

void ScoreF32(const float* k, int64_t k_stride, int64_t kn, const float* qt, int64_t d, int bq, float* st) {
  if (bq == 16) return ScoreF32T<16>(k, k_stride, kn, qt, d, st);
  ScoreF32T<64>(k, k_stride, kn, qt, d, st);
}

void SoftmaxTile(float* st, int64_t kn, int bq, float* m, float* l, float* corr) {
  for (int q0 = 0; q0 < bq; q0 += kLanes) {
    V mx = Set1(-__builtin_inff());
    for (int64_t j = 0; j < kn; ++j) mx = Max(mx, Load(st + j * bq + q0));
    const V m_old = Load(m + q0);
    const V m_new = Max(m_old, mx);
    // A query that has seen no visible key yet keeps m = -inf; subtracting 0
    // instead keeps exp() at exactly 0 and avoids inf - inf.
    const V m_safe = ZeroIfNegInf(m_new);
    const V c = Exp(Sub(m_old, m_safe));
    V sum = Zero();
    for (int64_t j = 0; j < kn; ++j) {
      const V p = Exp(Sub(Load(st + j * bq + q0), m_safe));
      Store(st + j * bq + q0, p);
      sum = Add(sum, p);
    }
    Store(l + q0, MulAdd(Load(l + q0), c, sum));
    Store(m + q0, m_new);
    Store(corr + q0, c);
  }
}

// o[i][c0 .. c0 + kLanes * NV) += sum_j pt[j][i] * v[j][...] for R queries;
// the last vector holds `tail` columns.
template <int R, int NV, int kBq>
void AccumulateRowsF32(const float* pt, int64_t kn, const float* v, int64_t v_stride, float* o, int64_t d,
                       int64_t tail) {
  V acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < NV; ++x)
      acc[r][x] = x == NV - 1 ? LoadN(o + r * d + x * kLanes, tail) : Load(o + r * d + x * kLanes);
  for (int64_t j = 0; j < kn; ++j) {
    const float* vrow = v + j * v_stride;
    V vv[NV];
    for (int x = 0; x < NV; ++x) vv[x] = x == NV - 1 ? LoadN(vrow + x * kLanes, tail) : Load(vrow + x * kLanes);
    for (int r = 0; r < R; ++r) {
      const V pb = Set1(pt[j * kBq + r]);
      for (int x = 0; x < NV; ++x) acc[r][x] = MulAdd(pb, vv[x], acc[r][x]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < NV; ++x) {
      if (x == NV - 1) {
        StoreN(o + r * d + x * kLanes, acc[r][x], tail);
      } else {
        Store(o + r * d + x * kLanes, acc[r][x]);
      }
    }
}

template <int NV, int kBq>
void AccumulateChunkF32(const float* pt, int64_t kn, const float* v, int64_t v_stride, float* o, int64_t d, int rows,
                        int64_t tail) {
  int r = 0;
  for (; r + 2 <= rows; r += 2) AccumulateRowsF32<2, NV, kBq>(pt + r, kn, v, v_stride, o + r * d, d, tail);
  for (; r < rows; ++r) AccumulateRowsF32<1, NV, kBq>(pt + r, kn, v, v_stride, o + r * d, d, tail);
}

// Columns per chunk of O: 8 vectors where there are 32 registers, else 4.
constexpr int kPvVectors = kLanes == 16 ? 8 : 4;

template <int kBq>
void AccumulatePvF32T(const float* pt, int64_t kn, const float* v, int64_t v_stride, float* o, int64_t d, int rows) {
  for (int64_t c0 = 0; c0 < d; c0 += kPvVectors * kLanes) {
    const int64_t width = Min(kPvVectors * kLanes, d - c0);
    const int nv = static_cast<int>((width + kLanes - 1) / kLanes);
    const int64_t tail = width - kLanes * (nv - 1);
    const float* vc = v + c0;
    float* oc = o + c0;
    switch (nv) {
      case 1: AccumulateChunkF32<1, kBq>(pt, kn, vc, v_stride, oc, d, rows, tail); break;
      case 2: AccumulateChunkF32<2, kBq>(pt, kn, vc, v_stride, oc, d, rows, tail); break;
      case 3: AccumulateChunkF32<3, kBq>(pt, kn, vc, v_stride, oc, d, rows, tail); break;
#if defined(__AVX512F__)
      case 4: AccumulateChunkF32<4, kBq>(pt, kn, vc, v_stride, oc, d, rows, tail); break;
      case 5: AccumulateChunkF32<5, kBq>(pt, kn, vc, v_stride, oc, d, rows, tail); break;
      case 6: AccumulateChunkF32<6, kBq>(pt, kn, vc, v_stride, oc, d, rows, tail); break;
      case 7: AccumulateChunkF32<7, kBq>(pt, kn, vc, v_stride, oc, d, rows, tail); break;
#endif
      default: AccumulateChunkF32<kPvVectors, kBq>(pt, kn, vc, v_stride, oc, d, rows, tail); break;
    }
  }
}

void AccumulatePvF32(const float* st, int64_t kn, int bq, const float* v, int64_t v_stride, float* o, int64_t d,
                     int rows) {
  if (bq == 16) return AccumulatePvF32T<16>(st, kn, v, v_stride, o, d, rows);
  AccumulatePvF32T<64>(st, kn, v, v_stride, o, d, rows);
}

// ---------------------------------------------------------------------------
// Attention tiles on bf16 pairs with vdpbf16ps (two bf16 products per f32
// lane, twice the f32 FMA rate): a uint32 holds two bf16 values adjacent in
// the reduction dim (low half first), as vdpbf16ps expects.
#if OMNI_ISA_BF16
inline __m512bh AsBh(__m512i v) { return (__m512bh)v; }

inline uint32_t LoadPair(const uint16_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// s[r][0..kBq) = scale * sum_c k[r][c] * q[.][c] for R keys; qt is the
// pair layout [d/2][kBq] of the query block; k rows are raw bf16. Each
// (key, query) lane accumulates over the pairs in the same order whatever
// R and kBq are.
template <int R, int kBq>
void ScoreRowsBf16(const uint16_t* k, int64_t k_stride, const uint32_t* qt, int64_t pairs, float scale, float* s) {
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

template <int kBq>
void ScoreBf16T(const uint16_t* k, int64_t k_stride, int64_t kn, const uint32_t* qt, int64_t pairs, float scale,
                float* st) {
  int64_t r = 0;
  for (; r + 4 <= kn; r += 4) ScoreRowsBf16<4, kBq>(k + r * k_stride, k_stride, qt, pairs, scale, st + r * kBq);
  for (; r < kn; ++r) ScoreRowsBf16<1, kBq>(k + r * k_stride, k_stride, qt, pairs, scale, st + r * kBq);
}

void ScoreBf16(const uint16_t* k, int64_t k_stride, int64_t kn, const uint32_t* qt, int64_t pairs, float scale,
               int bq, float* st) {
  if (bq == 16) return ScoreBf16T<16>(k, k_stride, kn, qt, pairs, scale, st);
  ScoreBf16T<64>(k, k_stride, kn, qt, pairs, scale, st);
}

// Two rows of 16 bf16 (b may be absent) -> 16 pairs (a[i], b[i]).
inline __m512i Interleave(__m256i a, __m256i b) {
  return _mm512_or_si512(_mm512_cvtepu16_epi32(a), _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}

void PackProbabilities(const float* st, int64_t kn, int bq, uint32_t* pp) {
  for (int64_t j = 0; j < kn; j += 2) {
    for (int q0 = 0; q0 < bq; q0 += 16) {
      __m256bh a = _mm512_cvtneps_pbh(_mm512_loadu_ps(st + j * bq + q0));
      __m256bh b = j + 1 < kn ? _mm512_cvtneps_pbh(_mm512_loadu_ps(st + (j + 1) * bq + q0))
                              : (__m256bh)_mm256_setzero_si256();
      _mm512_storeu_si512(pp + (j / 2) * bq + q0, Interleave((__m256i)a, (__m256i)b));
    }
  }
}

void PackValues(const uint16_t* v, int64_t v_stride, int64_t kn, int64_t d, int64_t dpad, uint32_t* vp) {
  for (int64_t j = 0; j < kn; j += 2) {
    const uint16_t* ra = v + j * v_stride;
    const uint16_t* rb = v + (j + 1) * v_stride;
    for (int64_t c0 = 0; c0 < dpad; c0 += 16) {
      const __mmask16 m = FirstN(d - c0);
      const __m256i a = _mm256_maskz_loadu_epi16(m, ra + c0);
      const __m256i b = j + 1 < kn ? _mm256_maskz_loadu_epi16(m, rb + c0) : _mm256_setzero_si256();
      _mm512_storeu_si512(vp + (j / 2) * dpad + c0, Interleave(a, b));
    }
  }
}

// o[r][0 .. 16*NV) += sum_jp pp[jp][r] . vp[jp][...] for R queries.
template <int R, int NV, int kBq>
void AccumulateRowsBf16(const uint32_t* pp, int64_t pairs, const uint32_t* vp, int64_t dpad, float* o, int64_t d,
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
void AccumulateChunkBf16(const uint32_t* pp, int64_t pairs, const uint32_t* vp, int64_t dpad, float* o, int64_t d,
                         int rows, __mmask16 tail) {
  int r = 0;
  for (; r + 2 <= rows; r += 2) AccumulateRowsBf16<2, NV, kBq>(pp + r, pairs, vp, dpad, o + r * d, d, tail);
  for (; r < rows; ++r) AccumulateRowsBf16<1, NV, kBq>(pp + r, pairs, vp, dpad, o + r * d, d, tail);
}

// O [rows][d] += P x V from the pair layouts, in chunks of 128 columns.
template <int kBq>
void AccumulatePvBf16T(const uint32_t* pp, int64_t pairs, const uint32_t* vp, int64_t dpad, float* o, int64_t d,
                       int rows) {
  for (int64_t c0 = 0; c0 < d; c0 += 128) {
    const int64_t width = Min(128, d - c0);
    const int nv = static_cast<int>((width + 15) / 16);
    const __mmask16 tail = FirstN(width - 16 * (nv - 1));
    const uint32_t* vc = vp + c0;
    float* oc = o + c0;
    switch (nv) {
      case 1: AccumulateChunkBf16<1, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 2: AccumulateChunkBf16<2, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 3: AccumulateChunkBf16<3, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 4: AccumulateChunkBf16<4, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 5: AccumulateChunkBf16<5, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 6: AccumulateChunkBf16<6, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      case 7: AccumulateChunkBf16<7, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
      default: AccumulateChunkBf16<8, kBq>(pp, pairs, vc, dpad, oc, d, rows, tail); break;
    }
  }
}

void AccumulatePvBf16(const uint32_t* pp, int64_t pairs, int bq, const uint32_t* vp, int64_t dpad, float* o,
                      int64_t d, int rows) {
  if (bq == 16) return AccumulatePvBf16T<16>(pp, pairs, vp, dpad, o, d, rows);
  AccumulatePvBf16T<64>(pp, pairs, vp, dpad, o, d, rows);
}
#endif

#if OMNI_ISA_AMX
// The same two products on AMX tiles (ConfigureTiles(16): tiles 0-3
// accumulate, 4 holds A, 5 B). Every output element is one row of A against
// one column of B, summed over the reduction dim in a fixed order, so a
// query's result does not depend on the other rows of its tile.

void AmxBegin() { ConfigureTiles(16); }
void AmxEnd() { _tile_release(); }

// s[j][0..kBq) = scale * sum_c k[j][c] * q[.][c] for 16 keys: A is the key
// rows themselves (bf16, row stride k_stride, 32 of d per step), B the
// query pair layout qt [d/2][kBq]; d is a multiple of 32.
template <int kBq>
void ScoreKeysAmxT(const uint16_t* k, int64_t k_stride, const uint32_t* qt, int64_t d, float* s) {
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

void ScoreKeysAmx(const uint16_t* k, int64_t k_stride, const uint32_t* qt, int64_t d, int bq, float* s) {
  if (bq == 16) return ScoreKeysAmxT<16>(k, k_stride, qt, d, s);
  ScoreKeysAmxT<64>(k, k_stride, qt, d, s);
}

// dst[c][r] = src[r][c] for a 16 x 16 block of uint32 (strides in elements).
void Transpose16x16(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride) {
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
// [32][d] the value pairs (B, d a multiple of 32); `steps` runs of 16 key
// pairs, rows past the tile's keys zero in both.
template <int kBq>
void AccumulatePvAmxT(const uint32_t* pa, int64_t steps, const uint32_t* vp, float* o, int64_t d, int rows) {
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

// O += P x V on tiles from pp [pairs][bq] and vp [pairs][d] as packed by
// PackProbabilities/PackValues: key pairs past the tile's keys are zeroed
// up to a multiple of 16 and pp is transposed into rows of queries (pa).
void AccumulatePvAmx(uint32_t* pp, uint32_t* vp, uint32_t* pa, int64_t kn, int bq, float* o, int64_t d, int rows) {
  const int64_t pairs = (kn + 1) / 2, steps = (pairs + 15) / 16;
  std::memset(pp + pairs * bq, 0, (steps * 16 - pairs) * bq * 4);
  std::memset(vp + pairs * d, 0, (steps * 16 - pairs) * d * 4);
  for (int q0 = 0; q0 < rows; q0 += 16)
    for (int64_t s = 0; s < steps; ++s) Transpose16x16(pp + 16 * s * bq + q0, bq, pa + q0 * 32 + 16 * s, 32);
  if (bq == 16) return AccumulatePvAmxT<16>(pa, steps, vp, o, d, rows);
  AccumulatePvAmxT<64>(pa, steps, vp, o, d, rows);
}
#endif
