// The packed-bf16 linear per ISA level: the GEMV forms, the FMA levels' f32
// micro-kernel for many rows, and the AMX form.
// kernels_isa.cc includes this fragment once per ISA level, inside its
// anonymous namespace, after simd.h (the vector vocabulary) and its
// OMNI_ISA_BF16 / OMNI_ISA_AMX switches; it is not a header of its own.

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
// strips of packed weights. Guided scheduling hands each thread a large
// first run (half the blocks, then a quarter, ...), and a thread that
// finishes early takes the next run, which usually continues its own: each
// thread streams long contiguous runs the prefetchers can follow, yet when
// another process holds a core the others still take what it has not
// started. Runs of one block each measured 0.60-0.73 of the streaming
// bound, runs of 8-16 0.84-0.94; against fixed runs of a quarter of each
// thread's share, guided runs gave served batch-1 decode +4% (the bench
// model's 1024-wide matrices are only 16-24 blocks).
// On the spin team (spin_team.h) when it is free, which hands out runs the
// same way without OpenMP's two barriers and their system calls per call.
void PackedGemv(const PackedLinearArgs& a) {
  const int64_t n_blocks = (a.n + 63) / 64;
  auto strip = [](void* args, int64_t nb, int) { GemvStrip(*static_cast<const PackedLinearArgs*>(args), nb); };
  if (TeamFor(a.threads, n_blocks, strip, const_cast<PackedLinearArgs*>(&a))) return;
#pragma omp parallel for num_threads(a.threads) schedule(guided)
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

// One 64-column strip of the packed weights, widened to f32 in wf, against
// every row of xf.
void GemmStrip(const PackedLinearArgs& a, const float* xf, float* wf, int64_t nb) {
  const int64_t kp = a.layout.k_padded;
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

// On the spin team when it is free (the step's other loops are there too),
// else on OpenMP; both compute the same strips.
void PackedGemm(const PackedLinearArgs& a) {
  const int64_t kp = a.layout.k_padded, n_blocks = (a.n + 63) / 64;
  struct Gemm {
    const PackedLinearArgs& a;
    float* xf;
    float* wf;  // a strip's widened weights per thread: kp * 64 floats each
  } g{a, new float[a.m * kp], new float[a.threads * kp * 64]};
  auto widen = [](void* c, int64_t r, int) {
    const Gemm& g = *static_cast<const Gemm*>(c);
    const int64_t kp = g.a.layout.k_padded;
    Bf16ToF32(g.a.x + r * kp, g.xf + r * kp, kp);
  };
  auto strip = [](void* c, int64_t nb, int thread) {
    const Gemm& g = *static_cast<const Gemm*>(c);
    GemmStrip(g.a, g.xf, g.wf + thread * g.a.layout.k_padded * 64, nb);
  };
  if (!TeamFor(a.threads, a.m, widen, &g)) {
#pragma omp parallel for num_threads(a.threads)
    for (int64_t r = 0; r < a.m; ++r) widen(&g, r, 0);
  }
  if (!TeamFor(a.threads, n_blocks, strip, &g, /*max_run=*/1)) {
#pragma omp parallel for num_threads(a.threads) schedule(dynamic, 1)
    for (int64_t nb = 0; nb < n_blocks; ++nb) strip(&g, nb, omp_get_thread_num());
  }
  delete[] g.wf;
  delete[] g.xf;
}

void PackedLinear(const PackedLinearArgs& a) {
  if (a.m > kGemvMaxRows) return PackedGemm(a);
  PackedGemv(a);
}
#endif

#if OMNI_ISA_AMX
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
