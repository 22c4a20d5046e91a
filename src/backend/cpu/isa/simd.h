// The vector vocabulary the per-level kernels (kernels_isa.cc) are written
// in: one f32 vector type V of kLanes lanes, for the level the including
// translation unit is compiled for (AVX-512, AVX2 + FMA, or plain C++).
// Included only by kernels_isa.cc, inside its per-level namespace, so every
// function here is a distinct symbol per level (no inline function is
// shared with, and possibly taken from, code built for another level).
//
// Every operation is lane-wise except the reductions, so a lane's result
// depends only on that lane's inputs: the kernels' batch invariance rests
// on it.

inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t FloatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Round to nearest even, NaN stays NaN: tensor/dtype.h's F32ToBF16, kept
// here because the per-level objects share no inline code with the rest.
inline uint16_t RoundToBf16(float f) {
  uint32_t u = FloatToBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float Bf16Value(uint16_t h) { return BitsToFloat(uint32_t{h} << 16); }

// The Taylor coefficients of e^r after the leading 1/5040, highest first.
constexpr float kExpTaylor[7] = {1.f / 720, 1.f / 120, 1.f / 24, 1.f / 6, 0.5f, 1.f, 1.f};

#if defined(__AVX512F__)

using V = __m512;
using VI = __m512i;
constexpr int kLanes = 16;

inline V Zero() { return _mm512_setzero_ps(); }
inline V Set1(float x) { return _mm512_set1_ps(x); }
inline V Load(const float* p) { return _mm512_loadu_ps(p); }
inline void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
inline __mmask16 FirstN(int64_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1); }
// Lanes [0, n) of p, the rest 0 (n may exceed kLanes).
inline V LoadN(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(FirstN(n), p); }
inline void StoreN(float* p, V v, int64_t n) { _mm512_mask_storeu_ps(p, FirstN(n), v); }
inline V KeepFirstN(V v, int64_t n) { return _mm512_maskz_mov_ps(FirstN(n), v); }
inline V Add(V a, V b) { return _mm512_add_ps(a, b); }
inline V Sub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V Div(V a, V b) { return _mm512_div_ps(a, b); }
inline V Max(V a, V b) { return _mm512_max_ps(a, b); }
inline V MulAdd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }  // a * b + c, one rounding
// 0 where v is -inf, v elsewhere.
inline V ZeroIfNegInf(V v) {
  return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, Set1(-__builtin_inff()), _CMP_EQ_OQ), Zero());
}

// Pairs of bf16 (low half first) as 32-bit lanes, and each half as f32.
inline VI LoadI(const void* p) { return _mm512_loadu_si512(p); }
inline V PairLo(VI w) { return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)); }
inline V PairHi(VI w) { return _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(int(0xffff0000u)))); }

inline VI ZeroI() { return _mm512_setzero_si512(); }
inline VI OrI(VI a, VI b) { return _mm512_or_si512(a, b); }
inline uint64_t ReduceOr(VI v) { return _mm512_reduce_or_epi64(v); }

// The steps of Exp below.
inline V Min(V a, V b) { return _mm512_min_ps(a, b); }
inline V RoundNearest(V x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline V NegMulAdd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a * b, one rounding
inline V Pow2Times(V p, V n) { return _mm512_scalef_ps(p, n); }          // p * 2^n, n integral
// v where x >= lo, else 0 (also where x is NaN).
inline V ZeroWhereBelow(V v, V x, float lo) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, Set1(lo), _CMP_GE_OQ), v); }

// Sums of f32 lanes kept in double.
struct DSum {
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  void Add(V x) {
    lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(x)));
    hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))));
  }
  void AddSquares(V x) {
    const __m512d a = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
    const __m512d b = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    lo = _mm512_fmadd_pd(a, a, lo);
    hi = _mm512_fmadd_pd(b, b, hi);
  }
  double Total() const { return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi)); }
};

// 16 bf16 -> 16 f32, and back with round-to-nearest-even (NaN stays NaN).
inline V LoadBf16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline void StoreBf16(uint16_t* p, V v) {
  const VI u = _mm512_castps_si512(v);
  const VI lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  VI r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
}

#elif defined(__AVX2__) && defined(__FMA__)

using V = __m256;
using VI = __m256i;
constexpr int kLanes = 8;

inline V Zero() { return _mm256_setzero_ps(); }
inline V Set1(float x) { return _mm256_set1_ps(x); }
inline V Load(const float* p) { return _mm256_loadu_ps(p); }
inline void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
inline __m256i FirstN(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n < 8 ? n : 8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline V LoadN(const float* p, int64_t n) { return _mm256_maskload_ps(p, FirstN(n)); }
inline void StoreN(float* p, V v, int64_t n) { _mm256_maskstore_ps(p, FirstN(n), v); }
inline V KeepFirstN(V v, int64_t n) { return _mm256_and_ps(v, _mm256_castsi256_ps(FirstN(n))); }
inline V Add(V a, V b) { return _mm256_add_ps(a, b); }
inline V Sub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V Div(V a, V b) { return _mm256_div_ps(a, b); }
inline V Max(V a, V b) { return _mm256_max_ps(a, b); }
inline V MulAdd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V ZeroIfNegInf(V v) { return _mm256_andnot_ps(_mm256_cmp_ps(v, Set1(-__builtin_inff()), _CMP_EQ_OQ), v); }

inline VI LoadI(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline V PairLo(VI w) { return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)); }
inline V PairHi(VI w) { return _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(int(0xffff0000u)))); }

inline VI ZeroI() { return _mm256_setzero_si256(); }
inline VI OrI(VI a, VI b) { return _mm256_or_si256(a, b); }
inline uint64_t ReduceOr(VI v) {
  alignas(32) uint64_t t[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(t), v);
  return t[0] | t[1] | t[2] | t[3];
}

inline V Min(V a, V b) { return _mm256_min_ps(a, b); }
inline V RoundNearest(V x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline V NegMulAdd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
// 2^n from its exponent bits: n is in [-126, 127] where Exp uses it, so
// 2^n is a normal float.
inline V Pow2Times(V p, V n) {
  return Mul(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)));
}
inline V ZeroWhereBelow(V v, V x, float lo) { return _mm256_and_ps(v, _mm256_cmp_ps(x, Set1(lo), _CMP_GE_OQ)); }

struct DSum {
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  void Add(V x) {
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
  }
  void AddSquares(V x) {
    const __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(x)), b = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
    lo = _mm256_fmadd_pd(a, a, lo);
    hi = _mm256_fmadd_pd(b, b, hi);
  }
  double Total() const {
    alignas(32) double t[4];
    _mm256_store_pd(t, _mm256_add_pd(lo, hi));
    return (t[0] + t[1]) + (t[2] + t[3]);
  }
};

inline V LoadBf16(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline void StoreBf16(uint16_t* p, V v) {
  const VI u = _mm256_castps_si256(v);
  const VI lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  VI r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  // |u| > inf as signed compare: both sides are below 2^31.
  const VI nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
  // Pack 8 x 32 -> 8 x 16 (values fit 16 bits unsigned).
  const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
}

#else  // plain C++: eight lanes as an array, lane by lane

constexpr int kLanes = 8;
struct V {
  float v[kLanes];
};
struct VI {
  uint32_t v[kLanes];
};


template <typename F>
inline V Map(F f) {
  V r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = f(i);
  return r;
}
inline V Zero() { return Map([](int) { return 0.f; }); }
inline V Set1(float x) { return Map([x](int) { return x; }); }
inline V Load(const float* p) { return Map([p](int i) { return p[i]; }); }
inline void Store(float* p, V v) {
  for (int i = 0; i < kLanes; ++i) p[i] = v.v[i];
}
inline V LoadN(const float* p, int64_t n) { return Map([p, n](int i) { return i < n ? p[i] : 0.f; }); }
inline void StoreN(float* p, V v, int64_t n) {
  for (int i = 0; i < kLanes && i < n; ++i) p[i] = v.v[i];
}
inline V KeepFirstN(V v, int64_t n) { return Map([&v, n](int i) { return i < n ? v.v[i] : 0.f; }); }
inline V Add(V a, V b) { return Map([&](int i) { return a.v[i] + b.v[i]; }); }
inline V Sub(V a, V b) { return Map([&](int i) { return a.v[i] - b.v[i]; }); }
inline V Mul(V a, V b) { return Map([&](int i) { return a.v[i] * b.v[i]; }); }
inline V Div(V a, V b) { return Map([&](int i) { return a.v[i] / b.v[i]; }); }
inline V Max(V a, V b) { return Map([&](int i) { return a.v[i] > b.v[i] ? a.v[i] : b.v[i]; }); }
// Two roundings (no FMA at this level; the compiler does not contract in
// ISO mode).
inline V MulAdd(V a, V b, V c) { return Map([&](int i) { return a.v[i] * b.v[i] + c.v[i]; }); }
inline V ZeroIfNegInf(V v) { return Map([&](int i) { return v.v[i] == -__builtin_inff() ? 0.f : v.v[i]; }); }

inline VI LoadI(const void* p) {
  VI r;
  std::memcpy(r.v, p, sizeof(r.v));
  return r;
}
inline V PairLo(VI w) { return Map([&](int i) { return BitsToFloat(w.v[i] << 16); }); }
inline V PairHi(VI w) { return Map([&](int i) { return BitsToFloat(w.v[i] & 0xffff0000u); }); }

inline VI ZeroI() {
  VI r;
  for (int i = 0; i < kLanes; ++i) r.v[i] = 0;
  return r;
}
inline VI OrI(VI a, VI b) {
  for (int i = 0; i < kLanes; ++i) a.v[i] |= b.v[i];
  return a;
}
inline uint64_t ReduceOr(VI v) {
  uint64_t r = 0;
  for (int i = 0; i < kLanes; ++i) r |= v.v[i];
  return r;
}

inline V Min(V a, V b) { return Map([&](int i) { return a.v[i] < b.v[i] ? a.v[i] : b.v[i]; }); }
inline V RoundNearest(V x) { return Map([&](int i) { return __builtin_nearbyintf(x.v[i]); }); }
inline V NegMulAdd(V a, V b, V c) { return Map([&](int i) { return c.v[i] - a.v[i] * b.v[i]; }); }
inline V Pow2Times(V p, V n) {
  return Map([&](int i) { return p.v[i] * BitsToFloat(static_cast<uint32_t>(static_cast<int32_t>(n.v[i]) + 127) << 23); });
}
inline V ZeroWhereBelow(V v, V x, float lo) { return Map([&](int i) { return x.v[i] >= lo ? v.v[i] : 0.f; }); }

struct DSum {
  double lane[kLanes] = {};
  void Add(V x) {
    for (int i = 0; i < kLanes; ++i) lane[i] += x.v[i];
  }
  void AddSquares(V x) {
    for (int i = 0; i < kLanes; ++i) lane[i] += static_cast<double>(x.v[i]) * x.v[i];
  }
  double Total() const {
    double t = 0;
    for (int i = 0; i < kLanes; ++i) t += lane[i];
    return t;
  }
};

inline V LoadBf16(const uint16_t* p) { return Map([p](int i) { return BitsToFloat(uint32_t{p[i]} << 16); }); }
inline void StoreBf16(uint16_t* p, V v) {
  for (int i = 0; i < kLanes; ++i) p[i] = RoundToBf16(v.v[i]);
}

#endif

// e^x, the same steps at every level: range reduction x = n ln2 + r,
// |r| <= ln2/2 (ln2 in two parts), a degree-7 Taylor polynomial (truncation
// error < 3e-9 relative) and the scaling by 2^n. Inputs below -87
// (including -inf, and NaN) give exactly 0.
inline V Exp(V x) {
  const V lo = Set1(-87.0f);
  const V xc = Min(Max(x, lo), Set1(88.0f));
  const V n = RoundNearest(Mul(xc, Set1(1.44269504088896341f)));
  V r = NegMulAdd(n, Set1(0.693145751953125f), xc);
  r = NegMulAdd(n, Set1(1.428606765330187e-06f), r);
  V p = Set1(1.f / 5040);
  for (float c : kExpTaylor) p = MulAdd(p, r, Set1(c));
  return ZeroWhereBelow(Pow2Times(p, n), x, -87.0f);
}
