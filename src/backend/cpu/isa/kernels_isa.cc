// The CPU kernels that differ by instruction-set level, compiled once per
// level (src/ops/CMakeLists.txt): generic (x86-64-v2), avx2 (x86-64-v3),
// avx512 (x86-64-v4) and avx512bf16 (x86-64-v4 + AVX512-BF16 + AMX). The
// same source gives each level its table; `#if` on the compiler's ISA
// macros picks the forms that need a level's own instructions (vdpbf16ps,
// AMX tiles), and simd.h's vector vocabulary serves the rest at every
// level.
//
// Everything here has internal linkage except the table function, and the
// file includes no project header with inline code (kernels.h is
// declarations only): an inline function compiled for AVX-512 and shared
// with the baseline could otherwise be the copy the linker keeps, and the
// binary would die on a CPU without AVX-512. The isa_symbols test checks
// the objects for such symbols.
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels.h"

#ifndef OMNI_ISA_TABLE
#error "OMNI_ISA_TABLE (the table function's name) is set per level by the build"
#endif

namespace omni::cpu {
namespace {

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
// Round to nearest even, NaN stays NaN (as tensor/dtype.h's F32ToBF16).
inline uint16_t RoundToBf16(float f) {
  uint32_t u = FloatToBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float Bf16Value(uint16_t h) { return BitsToFloat(uint32_t{h} << 16); }
inline int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }

#include "backend/cpu/isa/simd.h"

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

// ---------------------------------------------------------------------------
// Conversions and row math.

void Bf16ToF32(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(d + i, LoadBf16(s + i));
  for (; i < n; ++i) d[i] = Bf16Value(s[i]);
}

inline void F32ToBf16(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
#if OMNI_ISA_BF16
  for (; i + 16 <= n; i += 16) {
    __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(s + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), reinterpret_cast<__m256i&>(h));
  }
#else
  for (; i + kLanes <= n; i += kLanes) StoreBf16(d + i, Load(s + i));
#endif
  for (; i < n; ++i) d[i] = RoundToBf16(s[i]);
}

// x * sigmoid(x) = x / (1 + e^-x).
void SiluRow(float* a, const float* mul, int64_t n) {
  for (int64_t i = 0; i < n; i += kLanes) {
    const V x = LoadN(a + i, n - i);
    V y = Div(x, Add(Set1(1.f), Exp(Sub(Zero(), x))));
    if (mul) y = Mul(y, LoadN(mul + i, n - i));
    StoreN(a + i, y, n - i);
  }
}

double ExpShifted(float* v, int64_t n, float shift) {
  const V s = Set1(shift);
  DSum sum;
  for (int64_t i = 0; i < n; i += kLanes) {
    const V e = KeepFirstN(Exp(Sub(LoadN(v + i, n - i), s)), n - i);
    StoreN(v + i, e, n - i);
    sum.Add(e);
  }
  return sum.Total();
}

double SumSquares(const float* v, int64_t n) {
  DSum sum;
  for (int64_t i = 0; i < n; i += kLanes) sum.AddSquares(LoadN(v + i, n - i));
  return sum.Total();
}

uint64_t StreamRead(const void* p, int64_t bytes) {
  const char* b = static_cast<const char*>(p);
  constexpr int64_t kStep = sizeof(VI);
  VI s0 = ZeroI(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t i = 0; i + 4 * kStep <= bytes; i += 4 * kStep) {
    s0 = OrI(s0, LoadI(b + i));
    s1 = OrI(s1, LoadI(b + i + kStep));
    s2 = OrI(s2, LoadI(b + i + 2 * kStep));
    s3 = OrI(s3, LoadI(b + i + 3 * kStep));
  }
  return ReduceOr(OrI(OrI(s0, s1), OrI(s2, s3)));
}

// ---------------------------------------------------------------------------
// Linear over packed bf16 weights (see kernels.h). A decode step is bound by
// the weight stream: the kernels walk a 64-column strip once per group of
// rows, and the strip stays in L2 between the groups.

// Software prefetch distance in k-pairs (256 bytes each): 4 KiB ahead in the
// strip. Measured with ops_bench's BM_DecodeBandwidth against 0, 8, 24, 32.
constexpr int64_t kPrefetchPairs = 16;

// One row's 64 results (+ bias) to out, as f32 or bf16. Inlined into the
// kernels' epilogues (a call per row and block measured 3% of a 16-stream
// decode).
__attribute__((always_inline)) inline void StoreRow(float* row, const PackedLinearArgs& a, int64_t r, int64_t nb) {
  const int64_t cols = Min(64, a.n - nb * 64);
  if (a.bias) {
    for (int64_t c = 0; c < cols; c += kLanes) {
      StoreN(row + c, Add(LoadN(row + c, cols - c), LoadN(a.bias + nb * 64 + c, cols - c)), cols - c);
    }
  }
  const int64_t at = r * a.n + nb * 64;
  if (a.out_bf16) {
    F32ToBf16(row, static_cast<uint16_t*>(a.out) + at, cols);
  } else {
    std::memcpy(static_cast<float*>(a.out) + at, row, cols * 4);
  }
}

#if OMNI_ISA_BF16
// vdpbf16ps form: M <= 3 rows against block nb's strip. Two k-pairs per
// iteration, each into its own accumulators, so the dot-product chains do
// not serialize the loads; the two sets are added at the end, for every M
// alike.
constexpr int kGemvRows = 3;  // accumulators: 2 pairs x 3 rows x 4 zmm

template <int M>
void GemvRows(const PackedLinearArgs& a, const uint16_t* x, int64_t r0, int64_t nb) {
  const PackedBf16Layout& l = a.layout;
  const int64_t k_pairs_total = l.k_padded / 2;
  const uint16_t* strip = a.w + nb * l.n_block;
  __m512 acc[2][M][4];
  for (int u = 0; u < 2; ++u)
    for (int m = 0; m < M; ++m)
      for (int v = 0; v < 4; ++v) acc[u][m][v] = _mm512_setzero_ps();
  for (int64_t kp = 0; kp < k_pairs_total; kp += 2) {  // k_padded is a multiple of 32
    const uint16_t* blk = strip + kp * 128;
    for (int v = 0; v < 8; ++v) {
      _mm_prefetch(reinterpret_cast<const char*>(blk + kPrefetchPairs * 128 + 32 * v), _MM_HINT_T0);
    }
    for (int u = 0; u < 2; ++u) {
      __m512bh wv[4];
      for (int v = 0; v < 4; ++v) wv[v] = (__m512bh)_mm512_loadu_si512(blk + 128 * u + 32 * v);
      for (int m = 0; m < M; ++m) {
        uint32_t pair;
        std::memcpy(&pair, x + m * l.k_padded + 2 * (kp + u), 4);
        const __m512bh xb = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
        for (int v = 0; v < 4; ++v) acc[u][m][v] = _mm512_dpbf16_ps(acc[u][m][v], wv[v], xb);
      }
    }
  }
  for (int m = 0; m < M; ++m) {
    alignas(64) float row[64];
    for (int v = 0; v < 4; ++v) _mm512_store_ps(row + 16 * v, _mm512_add_ps(acc[0][m][v], acc[1][m][v]));
    StoreRow(row, a, r0 + m, nb);
  }
}

#else
// FMA form for levels without vdpbf16ps: a k-pair's weights are split into
// the even and odd k as f32 (a shift and a mask) and multiplied into R rows
// x CV vectors of columns from column c0 of the block. Every lane adds its
// two products for each k-pair in the same order whatever R and CV are.
template <int R, int CV>
void GemvCols(const PackedLinearArgs& a, const uint16_t* x, int64_t r0, int64_t nb, int c0, float (*rows)[64]) {
  const PackedBf16Layout& l = a.layout;
  const int64_t k_pairs_total = l.k_padded / 2;
  const uint32_t* strip = reinterpret_cast<const uint32_t*>(a.w + nb * l.n_block) + c0;
  V acc[R][CV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < CV; ++v) acc[r][v] = Zero();
  for (int64_t kp = 0; kp < k_pairs_total; ++kp) {
    const uint32_t* pairs = strip + kp * 64;
    const uint32_t* ahead = pairs - c0 + kPrefetchPairs * 64;  // the pair's four lines, 16 pairs on
    for (int i = 0; i < 4; ++i) __builtin_prefetch(ahead + 16 * i);
    V x0[R], x1[R];
    for (int r = 0; r < R; ++r) {
      x0[r] = Set1(Bf16Value(x[r * l.k_padded + 2 * kp]));
      x1[r] = Set1(Bf16Value(x[r * l.k_padded + 2 * kp + 1]));
    }
    for (int v = 0; v < CV; ++v) {
      const VI w = LoadI(pairs + v * kLanes);
      const V lo = PairLo(w), hi = PairHi(w);
      for (int r = 0; r < R; ++r) {
        acc[r][v] = MulAdd(lo, x0[r], acc[r][v]);
        acc[r][v] = MulAdd(hi, x1[r], acc[r][v]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < CV; ++v) Store(rows[r] + c0 + v * kLanes, acc[r][v]);
}

constexpr int kBlockVectors = 64 / kLanes;
// Rows per pass when more than one: as many as the registers hold with
// half a block's columns (AVX-512 has 32 vector registers, the others 16).
constexpr int kGemvRows = kLanes == 16 ? 3 : 2;
constexpr int kHalf = kBlockVectors / 2;

template <int R>
void GemvRows(const PackedLinearArgs& a, const uint16_t* xr, int64_t r0, int64_t nb) {
  alignas(64) float rows[R][64];
  if constexpr (R == 1) {
    GemvCols<1, kBlockVectors>(a, xr, r0, nb, 0, rows);  // one pass over the strip
  } else {
    GemvCols<R, kHalf>(a, xr, r0, nb, 0, rows);
    GemvCols<R, kHalf>(a, xr, r0, nb, kHalf * kLanes, rows);
  }
  for (int r = 0; r < R; ++r) StoreRow(rows[r], a, r0 + r, nb);
}

#endif

// Every row against block nb's strip, kGemvRows at a time (GemvRows<M> is
// the level's form above).
void GemvStrip(const PackedLinearArgs& a, int64_t nb) {
  for (int64_t m0 = 0; m0 < a.m; m0 += kGemvRows) {
    const uint16_t* xr = a.x + m0 * a.layout.k_padded;
    switch (Min(kGemvRows, a.m - m0)) {
      case 1: GemvRows<1>(a, xr, m0, nb); break;
      case 2: GemvRows<2>(a, xr, m0, nb); break;
      default: GemvRows<kGemvRows>(a, xr, m0, nb); break;
    }
  }
}

// All rows, parallel over 64-column blocks; adjacent blocks are adjacent
// strips of packed weights. A thread takes a run of blocks at a time (a
// quarter of its share), so it streams long contiguous runs the prefetchers
// can follow, yet when another process holds a core the other threads still
// take the runs that thread has not started. Runs of one block each
// measured 0.60-0.73 of the streaming bound, runs of 8-16 0.84-0.94.
void PackedGemv(const PackedLinearArgs& a) {
  const int64_t n_blocks = (a.n + 63) / 64;
  const int64_t run = n_blocks / (4 * a.threads) > 1 ? n_blocks / (4 * a.threads) : 1;
#pragma omp parallel for num_threads(a.threads) schedule(dynamic, run)
  for (int64_t nb = 0; nb < n_blocks; ++nb) GemvStrip(a, nb);
}

#if OMNI_ISA_BF16
// Many rows only where oneDNN cannot take them (an unexpected layout): the
// GEMV over row groups.
void PackedLinear(const PackedLinearArgs& a) { PackedGemv(a); }
#else
// Many rows (a prefill) at the FMA levels, where oneDNN has no bf16 matmul
// on these weights. Widening the weights for every row group (GemvCols)
// costs as much as the products, so each thread widens a strip to f32 once
// (wf [k_padded][64]), the rows are widened once per call (xf), and an f32
// micro-kernel takes kGemmRows rows at a time. Every lane still adds
// w[k] * x[k] for k ascending, one multiply-add each, exactly as GemvCols
// does: a row's result is the same bit for bit on either path.
constexpr int64_t kGemvMaxRows = 16;
constexpr int kGemmRows = 6;
constexpr int kGemmVectors = kLanes == 16 ? 4 : 2;  // 6 x 4 zmm or 6 x 2 ymm accumulators
constexpr int kGemmCols = kGemmVectors * kLanes;

template <int R>
void GemmTile(const float* wf, int64_t k_padded, const float* x, int c0, float (*rows)[64]) {
  V acc[R][kGemmVectors];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kGemmVectors; ++v) acc[r][v] = Zero();
  for (int64_t k = 0; k < k_padded; ++k) {
    V w[kGemmVectors];
    for (int v = 0; v < kGemmVectors; ++v) w[v] = Load(wf + k * 64 + c0 + v * kLanes);
    for (int r = 0; r < R; ++r) {
      const V xb = Set1(x[r * k_padded + k]);
      for (int v = 0; v < kGemmVectors; ++v) acc[r][v] = MulAdd(w[v], xb, acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kGemmVectors; ++v) Store(rows[r] + c0 + v * kLanes, acc[r][v]);
}

template <int R>
void GemmRows(const PackedLinearArgs& a, const float* wf, const float* x, int64_t r0, int64_t nb) {
  alignas(64) float rows[R][64];
  for (int c0 = 0; c0 < 64; c0 += kGemmCols) GemmTile<R>(wf, a.layout.k_padded, x, c0, rows);
  for (int r = 0; r < R; ++r) StoreRow(rows[r], a, r0 + r, nb);
}

void PackedGemm(const PackedLinearArgs& a) {
  const int64_t kp = a.layout.k_padded, n_blocks = (a.n + 63) / 64;
  float* xf = new float[a.m * kp];
#pragma omp parallel for num_threads(a.threads)
  for (int64_t r = 0; r < a.m; ++r) Bf16ToF32(a.x + r * kp, xf + r * kp, kp);
#pragma omp parallel num_threads(a.threads)
  {
    float* wf = new float[kp * 64];
#pragma omp for schedule(dynamic, 1)
    for (int64_t nb = 0; nb < n_blocks; ++nb) {
      const uint32_t* strip = reinterpret_cast<const uint32_t*>(a.w + nb * a.layout.n_block);
      for (int64_t p = 0; p < kp / 2; ++p)
        for (int v = 0; v < 64; v += kLanes) {
          const VI w = LoadI(strip + p * 64 + v);
          Store(wf + (2 * p) * 64 + v, PairLo(w));
          Store(wf + (2 * p + 1) * 64 + v, PairHi(w));
        }
      for (int64_t m0 = 0; m0 < a.m; m0 += kGemmRows) {
        const float* x = xf + m0 * kp;
        switch (Min(kGemmRows, a.m - m0)) {
          case 1: GemmRows<1>(a, wf, x, m0, nb); break;
          case 2: GemmRows<2>(a, wf, x, m0, nb); break;
          case 3: GemmRows<3>(a, wf, x, m0, nb); break;
          case 4: GemmRows<4>(a, wf, x, m0, nb); break;
          case 5: GemmRows<5>(a, wf, x, m0, nb); break;
          default: GemmRows<kGemmRows>(a, wf, x, m0, nb); break;
        }
      }
    }
    delete[] wf;
  }
  delete[] xf;
}

void PackedLinear(const PackedLinearArgs& a) {
  if (a.m > kGemvMaxRows) return PackedGemm(a);
  PackedGemv(a);
}
#endif

#if OMNI_ISA_AMX
// tileloadd that the compiler knows reads memory: GCC 12's _tile_loadd
// declares no memory operand, so stores the tile load depends on could be
// moved past it.
#define OMNI_TILE_LOADD(tile, base, stride)                                                            \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #tile ::"r"(static_cast<const void*>(base)),          \
                   "r"(static_cast<long>(stride))                                                      \
                   : "memory")

// The 64-byte operand of ldtilecfg, palette 1.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// All eight tiles 64 bytes wide; tiles 0-4 (accumulators and the A operand)
// `rows` rows tall, tiles 5-7 (B operands) 16.
void ConfigureTiles(int rows) {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.rows[t] = static_cast<uint8_t>(t < 5 ? rows : 16);
    c.bytes_per_row[t] = 64;
  }
  // Not _tile_loadconfig: GCC 12 declares it as reading 8 bytes, and the
  // stores of the rest of `c` were dropped.
  __asm__ volatile("ldtilecfg %0" ::"m"(c));
}

constexpr int64_t kAmxMaxRows = 16;

// The product on the AMX tile unit, which has the compute to keep all 16
// rows of a batched decode step on the weight stream. A (32 k x 64 n) block
// is four B tiles as stored: tile g is its 16 k-pairs (rows 256 bytes
// apart) x the 64 bytes of columns 16g..16g+15. The A tile is the M rows'
// 32 k of the block; C is four M x 16 f32 tiles. Each row's sum depends on
// that row alone, so M does not change any row's result. Tiles 0-3 hold C,
// 4 A, and 5-6 B, alternating so a load overlaps the previous product.
void GemvBlockAmx(const PackedLinearArgs& a, const uint16_t* x, int64_t r0, int64_t m, int64_t nb) {
  const PackedBf16Layout& l = a.layout;
  const uint16_t* strip = a.w + nb * l.n_block;
  const int64_t x_stride = l.k_padded * 2;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t k0 = 0; k0 < l.k_padded; k0 += 32) {
    const uint16_t* blk = strip + k0 * 64;  // 32 k x 64 n per block
    for (int v = 0; v < 64; ++v) {
      _mm_prefetch(reinterpret_cast<const char*>(blk + kPrefetchPairs * 128 + 32 * v), _MM_HINT_T0);
    }
    OMNI_TILE_LOADD(4, x + k0, x_stride);
    OMNI_TILE_LOADD(5, blk, 256);
    _tile_dpbf16ps(0, 4, 5);
    OMNI_TILE_LOADD(6, blk + 32, 256);
    _tile_dpbf16ps(1, 4, 6);
    OMNI_TILE_LOADD(5, blk + 64, 256);
    _tile_dpbf16ps(2, 4, 5);
    OMNI_TILE_LOADD(6, blk + 96, 256);
    _tile_dpbf16ps(3, 4, 6);
  }
  alignas(64) float rows[kAmxMaxRows][64];
  _tile_stored(0, &rows[0][0], sizeof(rows[0]));
  _tile_stored(1, &rows[0][16], sizeof(rows[0]));
  _tile_stored(2, &rows[0][32], sizeof(rows[0]));
  _tile_stored(3, &rows[0][48], sizeof(rows[0]));
  for (int64_t r = 0; r < m; ++r) StoreRow(rows[r], a, r0 + r, nb);
}

// Up to 16 rows per tile pass; more rows take more passes.
void PackedLinearAmx(const PackedLinearArgs& a) {
  const int64_t n_blocks = (a.n + 63) / 64;
  const int64_t run = n_blocks / (4 * a.threads) > 1 ? n_blocks / (4 * a.threads) : 1;
  for (int64_t r0 = 0; r0 < a.m; r0 += kAmxMaxRows) {
    const int64_t m = Min(kAmxMaxRows, a.m - r0);
    const uint16_t* x = a.x + r0 * a.layout.k_padded;
#pragma omp parallel num_threads(a.threads)
    {
      ConfigureTiles(static_cast<int>(m));
#pragma omp for schedule(dynamic, run) nowait
      for (int64_t nb = 0; nb < n_blocks; ++nb) GemvBlockAmx(a, x, r0, m, nb);
      _tile_release();
    }
  }
}
#endif

// ---------------------------------------------------------------------------
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
  k.f32_to_bf16 = F32ToBf16;
  k.silu_row = SiluRow;
  k.exp_shifted = ExpShifted;
  k.sum_squares = SumSquares;
  k.stream_read = StreamRead;
  k.packed_linear = PackedLinear;
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
