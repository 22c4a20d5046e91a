#include "backend/cpu/matmul_cpu.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/cpu/amx.h"
#include "backend/cpu/cpu_common.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/huge_buffer.h"
#include "core/log.h"

namespace omni::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// M used to ask oneDNN for its preferred weight layout at construction. On
// this oneDNN (2.6, brgemm) the layout is the same for every M we tried
// (1, 3, 16, 512); Forward still checks and repacks if a shape disagrees.
constexpr int64_t kLayoutProbeM = 16;

memory::desc PlainDesc(const Tensor& t, memory::data_type dt) {
  memory::dims dims(t.shape().begin(), t.shape().end());
  memory::dims strides(t.strides().begin(), t.strides().end());
  return memory::desc(dims, dt, strides);
}

// Our own small-M kernel on oneDNN's packed bf16 layout. oneDNN's brgemm
// spends M=1 far from memory bandwidth here (a 4096x4096 bf16 GEMV measured
// 12 GB/s on one core against 20+ for a plain stream); decode is all M=1.
// It reads the same packed weights, so there is still one copy. A batched
// decode step (up to 16 sequences) is still bound by the weight stream: it
// takes the rows kGemvRows at a time against each weight block, which stays
// in L2 between the passes (where the CPU has AMX, GemvBlockAmx below takes
// all M rows in one pass instead). Every row's sum runs over k in the same
// order whatever M is, so a sequence's logits do not depend on its batch.
constexpr int64_t kGemvMaxM = 16;
constexpr int kGemvRows = 3;  // accumulators: 2 pairs x 3 rows x 4 zmm
// Software prefetch distance in k-pairs (256 bytes each): 4 KiB ahead in the
// strip. Measured with ops_bench's BM_DecodeBandwidth against 0, 8, 24, 32.
constexpr int64_t kPrefetchPairs = 16;

// Where the packed layout BA16a64b2a puts its blocks: weights [K, N] cut
// into (32 k x 64 n) blocks stored as [16 k-pairs][64 n][2]; `k_block` and
// `n_block` are the element strides between blocks. False if the layout is
// anything else, and then oneDNN does every M.
struct PackedBf16Layout {
  int64_t k_block = 0, n_block = 0, k_padded = 0, n_padded = 0;
};

bool DescribePackedBf16(const memory::desc& md, PackedBf16Layout* out) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.data_type != dnnl_bf16 || d.format_kind != dnnl_blocked || d.ndims != 2) return false;
  const auto& b = d.format_desc.blocking;
  if (b.inner_nblks != 3 || b.inner_blks[0] != 16 || b.inner_idxs[0] != 0 || b.inner_blks[1] != 64 ||
      b.inner_idxs[1] != 1 || b.inner_blks[2] != 2 || b.inner_idxs[2] != 0) {
    return false;
  }
  *out = {b.strides[0], b.strides[1], d.padded_dims[0], d.padded_dims[1]};
  // GemvBlock walks a column strip as one run: its (32 k x 64 n) blocks
  // must be adjacent, i.e. the k-blocks of one n-block are innermost.
  return d.offset0 == 0 && out->k_block == 32 * 64 && d.padded_dims[0] % 32 == 0;
}

// out[m][nb*64 ..][...] = sum_k x[m][k] w[k][n] (+ bias) for the 64 columns
// of block nb and m < M <= kGemvRows; x rows are bf16 padded to k_padded
// with zeros, out rows n apart.
template <int M>
void GemvBlock(const uint16_t* w, const PackedBf16Layout& l, const uint16_t* x, const float* bias, int64_t n,
               int64_t nb, DType out_dtype, void* out) {
#ifdef __AVX512BF16__
  const int64_t k_pairs_total = l.k_padded / 2;
  // The strip of block nb is contiguous: pair kp's 64 columns are the 128
  // bf16 at strip + 128 kp. Two pairs per iteration, each into its own
  // accumulators, so the dot-product chains do not serialize the loads.
  const uint16_t* strip = w + nb * l.n_block;
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
  const int64_t cols = std::min<int64_t>(64, n - nb * 64);
  for (int m = 0; m < M; ++m) {
    alignas(64) float row[64];
    for (int v = 0; v < 4; ++v) _mm512_store_ps(row + 16 * v, _mm512_add_ps(acc[0][m][v], acc[1][m][v]));
    if (bias) {
      for (int64_t c = 0; c < cols; ++c) row[c] += bias[nb * 64 + c];
    }
    FromF32(row, out_dtype, AddElems(out, m * n + nb * 64, out_dtype), cols);
  }
#endif
}

#if OMNI_HAVE_AMX
// The same product on the AMX tile unit, which has the compute to keep all
// 16 rows of a batched decode step on the weight stream (the AVX-512 form
// above is compute-bound past a few rows). A (32 k x 64 n) block is four B
// tiles as stored: tile g is its 16 k-pairs (rows 256 bytes apart) x the 64
// bytes of columns 16g..16g+15. The A tile is the M rows' 32 k of the
// block; C is four M x 16 f32 tiles. Each row's sum depends on that row
// alone, so M does not change any row's result. Tiles 0-3 hold C, 4 A, and
// 5-6 B, alternating so a load overlaps the previous product.
void GemvBlockAmx(const uint16_t* w, const PackedBf16Layout& l, const uint16_t* x, int64_t m, const float* bias,
                  int64_t n, int64_t nb, DType out_dtype, void* out) {
  const uint16_t* strip = w + nb * l.n_block;
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
  alignas(64) float rows[kGemvMaxM][64];
  _tile_stored(0, &rows[0][0], sizeof(rows[0]));
  _tile_stored(1, &rows[0][16], sizeof(rows[0]));
  _tile_stored(2, &rows[0][32], sizeof(rows[0]));
  _tile_stored(3, &rows[0][48], sizeof(rows[0]));
  const int64_t cols = std::min<int64_t>(64, n - nb * 64);
  for (int64_t r = 0; r < m; ++r) {
    if (bias) {
      for (int64_t c = 0; c < cols; ++c) rows[r][c] += bias[nb * 64 + c];
    }
    FromF32(rows[r], out_dtype, AddElems(out, r * n + nb * 64, out_dtype), cols);
  }
}

#endif

// All M <= kGemvMaxM rows, parallel over 64-column blocks; adjacent blocks
// are adjacent strips of packed weights. A thread takes a run of blocks at a
// time (a quarter of its share), so it streams long contiguous runs the
// prefetchers can follow, yet when another process holds a core the other
// threads still take the runs that thread has not started. Runs of one block
// each measured 0.60-0.73 of the streaming bound, runs of 8-16 0.84-0.94.
void GemvBlocks(const uint16_t* w, const PackedBf16Layout& l, const uint16_t* x, int64_t m, const float* bias,
                int64_t n, DType out_dtype, void* out) {
  const int64_t n_blocks = (n + 63) / 64;
  const int threads = NumThreads();
  const int64_t run = std::max<int64_t>(1, n_blocks / (4 * threads));
#if OMNI_HAVE_AMX
  if (AmxUsable()) {
#pragma omp parallel num_threads(threads)
    {
      ConfigureTiles(m);
#pragma omp for schedule(dynamic, run) nowait
      for (int64_t nb = 0; nb < n_blocks; ++nb) GemvBlockAmx(w, l, x, m, bias, n, nb, out_dtype, out);
      _tile_release();
    }
    return;
  }
#endif
#pragma omp parallel for num_threads(threads) schedule(dynamic, run)
  for (int64_t nb = 0; nb < n_blocks; ++nb) {
    for (int64_t m0 = 0; m0 < m; m0 += kGemvRows) {
      const uint16_t* xr = x + m0 * l.k_padded;
      void* o = AddElems(out, m0 * n, out_dtype);
      switch (std::min<int64_t>(kGemvRows, m - m0)) {
        case 1: GemvBlock<1>(w, l, xr, bias, n, nb, out_dtype, o); break;
        case 2: GemvBlock<2>(w, l, xr, bias, n, nb, out_dtype, o); break;
        case 3: GemvBlock<3>(w, l, xr, bias, n, nb, out_dtype, o); break;
        default: GemvBlock<4>(w, l, xr, bias, n, nb, out_dtype, o); break;
      }
    }
  }
}

}  // namespace

struct CpuLinear::Impl {
  struct Entry {
    dnnl::matmul prim;
    memory weights;  // packed_ unless this M wanted another layout
  };

  DType weight_dtype;
  int64_t n = 0, k = 0;
  HugeBuffer packed_storage;  // packed's bytes
  memory packed;
  bool gemv = false;  // packed is BA16a64b2a bf16 and the CPU has AVX512-BF16
  PackedBf16Layout layout;
  memory bias;  // f32 [1, N]; empty if none
  std::mutex mu;
  std::map<std::pair<int64_t, DType>, Entry> cache;  // guarded by mu; key (M, dst dtype)

  dnnl::matmul::primitive_desc MakePd(int64_t m, DType dst_dtype, memory::desc wei) const {
    memory::desc src({m, k}, DnnlType(weight_dtype), Tag::ab);
    memory::desc dst({m, n}, DnnlType(dst_dtype), Tag::ab);
    if (bias) {
      return {dnnl::matmul::desc(src, wei, bias.get_desc(), dst), DnnlEngine()};
    }
    return {dnnl::matmul::desc(src, wei, dst), DnnlEngine()};
  }
  memory::desc AnyWeights() const { return memory::desc({k, n}, DnnlType(weight_dtype), Tag::any); }

  const Entry& Get(int64_t m, DType dst_dtype) {
    std::lock_guard<std::mutex> lock(mu);
    auto key = std::make_pair(m, dst_dtype);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    auto pd = MakePd(m, dst_dtype, AnyWeights());
    Entry e{dnnl::matmul(pd), packed};
    if (pd.weights_desc() != packed.get_desc()) {
      OMNI_LOG(kDebug, "linear {}x{}: M={} prefers another weight layout; repacking", n, k, m);
      e.weights = memory(pd.weights_desc(), DnnlEngine());
      dnnl::reorder(packed, e.weights).execute(DnnlStream(), packed, e.weights);
      DnnlStream().wait();
    }
    return cache.emplace(key, std::move(e)).first->second;
  }
};

CpuLinear::CpuLinear(const Tensor& weight, const Tensor& bias) : impl_(std::make_unique<Impl>()) {
  SyncOmpThreads();
  Impl& s = *impl_;
  s.weight_dtype = weight.dtype();
  s.n = weight.dim(0);
  s.k = weight.dim(1);
  try {
    // HF [N, K] row-major is oneDNN's [K, N] weights in "ba" order.
    memory::desc user({s.k, s.n}, DnnlType(s.weight_dtype), Tag::ba);
    memory user_mem(user, DnnlEngine(), weight.raw_data());
    if (bias.defined() && bias.numel() > 0) {
      s.bias = memory(memory::desc({1, s.n}, memory::data_type::f32, Tag::ab), DnnlEngine());
      Tensor b = bias.To(DType::kF32);
      ToF32(b.raw_data(), DType::kF32, static_cast<float*>(s.bias.get_data_handle()), s.n);
    }
    auto pd = s.MakePd(kLayoutProbeM, DType::kF32, s.AnyWeights());
    s.packed_storage = HugeBuffer(pd.weights_desc().get_size());
    s.packed = memory(pd.weights_desc(), DnnlEngine(), s.packed_storage.data());
    dnnl::reorder(user_mem, s.packed).execute(DnnlStream(), user_mem, s.packed);
    DnnlStream().wait();
#ifdef __AVX512BF16__
    s.gemv = DescribePackedBf16(s.packed.get_desc(), &s.layout);
#endif
  } catch (const dnnl::error& e) {
    OMNI_CHECK(false) << "oneDNN linear setup failed: " << e.what();
  }
}

CpuLinear::~CpuLinear() = default;

void CpuLinear::SmallM(const Tensor& x, const Tensor& out) const {
  const Impl& s = *impl_;
  const int64_t m = x.dim(0);
  std::vector<uint16_t> xp(m * s.layout.k_padded, 0);
  for (int64_t r = 0; r < m; ++r) std::memcpy(&xp[r * s.layout.k_padded], AddElems(x.raw_data(), r * s.k, DType::kBF16), s.k * 2);
  const uint16_t* w = static_cast<const uint16_t*>(s.packed.get_data_handle());
  const float* bias = s.bias ? static_cast<const float*>(s.bias.get_data_handle()) : nullptr;
  GemvBlocks(w, s.layout, xp.data(), m, bias, s.n, out.dtype(), out.raw_data());
}

size_t CpuLinear::packed_bytes() const { return impl_->packed.get_desc().get_size(); }

void CpuLinear::Forward(const Tensor& x, const Tensor& out) const {
  SyncOmpThreads();
  Impl& s = *impl_;
  const int64_t m = x.dim(0);
  if (m == 0) return;
  // oneDNN computes in the weight dtype: activations are converted to it
  // (bf16 weights: f32 activations become bf16, as PyTorch autocast does).
  Tensor src = x;
  if (x.dtype() != s.weight_dtype) {
    src = Tensor::Empty(x.shape(), s.weight_dtype);
    const int64_t rows = m;
    const int64_t k = s.k;
#pragma omp parallel for num_threads(NumThreads()) if (rows * k > (1 << 16))
    for (int64_t r = 0; r < rows; ++r) {
      float buf[1024];
      for (int64_t c = 0; c < k; c += 1024) {
        int64_t len = std::min<int64_t>(1024, k - c);
        ToF32(AddElems(x.raw_data(), r * k + c, x.dtype()), x.dtype(), buf, len);
        FromF32(buf, s.weight_dtype, AddElems(src.raw_data(), r * k + c, s.weight_dtype), len);
      }
    }
  }
  if (s.gemv && m <= kGemvMaxM) {
    SmallM(src, out);
    return;
  }
  // f32 weights cannot write bf16 directly on every ISA; go through f32.
  DType dst_dtype = s.weight_dtype == DType::kF32 ? DType::kF32 : out.dtype();
  Tensor dst = dst_dtype == out.dtype() ? out : Tensor::Empty(out.shape(), dst_dtype);
  try {
    const Impl::Entry& e = s.Get(m, dst_dtype);
    memory src_mem({{m, s.k}, DnnlType(s.weight_dtype), Tag::ab}, DnnlEngine(), src.raw_data());
    memory dst_mem({{m, s.n}, DnnlType(dst_dtype), Tag::ab}, DnnlEngine(), dst.raw_data());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, e.weights}, {DNNL_ARG_DST, dst_mem}};
    if (s.bias) args.emplace(DNNL_ARG_BIAS, s.bias);
    e.prim.execute(DnnlStream(), args);
    DnnlStream().wait();
  } catch (const dnnl::error& e) {
    OMNI_CHECK(false) << "oneDNN linear failed: " << e.what();
  }
  if (dst.raw_data() != out.raw_data()) {
    FromF32(static_cast<const float*>(dst.raw_data()), out.dtype(), out.raw_data(), out.numel());
  }
}

void MatMul(const Tensor& a, const Tensor& b, const Tensor& out) {
  SyncOmpThreads();
  const memory::data_type dt = DnnlType(a.dtype());
  try {
    memory::desc a_md = PlainDesc(a, dt);
    memory::desc b_md = PlainDesc(b, dt);
    memory::desc o_md = PlainDesc(out, DnnlType(out.dtype()));
    if (b.dim(0) == 1 && a.dim(0) != 1) {
      // Broadcast over the batch: stride 0 is not allowed, use dim 1.
      b_md = memory::desc({1, b.dim(1), b.dim(2)}, dt, {b.dim(1) * b.dim(2), b.stride(1), b.stride(2)});
    }
    // oneDNN's own primitive cache makes re-creating the primitive cheap.
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, o_md), DnnlEngine());
    dnnl::matmul prim(pd);
    memory am(a_md, DnnlEngine(), a.raw_data());
    memory bm(b_md, DnnlEngine(), b.raw_data());
    memory om(o_md, DnnlEngine(), out.raw_data());
    prim.execute(DnnlStream(), {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, om}});
    DnnlStream().wait();
  } catch (const dnnl::error& e) {
    OMNI_CHECK(false) << "oneDNN matmul failed: " << e.what();
  }
}

}  // namespace omni::cpu
