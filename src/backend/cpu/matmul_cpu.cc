#include "backend/cpu/matmul_cpu.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/dnnl_context.h"
#include "backend/cpu/huge_buffer.h"
#include "backend/cpu/parallel.h"
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

// Our own small-M kernel (kernels.h's packed_linear) on oneDNN's packed
// bf16 layout BA16a64b2a. oneDNN's brgemm spends M=1 far from memory
// bandwidth here (a 4096x4096 bf16 GEMV measured 12 GB/s on one core
// against 20+ for a plain stream); decode is all M=1. It reads the same
// packed weights, so there is still one copy. A batched decode step (up to
// 16 sequences) is still bound by the weight stream. Every row's sum runs
// over k in the same order whatever M is, so a sequence's logits do not
// depend on its batch. (kGemvMaxM, matmul_cpu.h.)

// The layout, described for the kernels; false if md is anything else.
bool DescribePackedBf16(const memory::desc& md, PackedBf16Layout* out) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.data_type != dnnl_bf16 || d.format_kind != dnnl_blocked || d.ndims != 2) return false;
  const auto& b = d.format_desc.blocking;
  if (b.inner_nblks != 3 || b.inner_blks[0] != 16 || b.inner_idxs[0] != 0 || b.inner_blks[1] != 64 ||
      b.inner_idxs[1] != 1 || b.inner_blks[2] != 2 || b.inner_idxs[2] != 0) {
    return false;
  }
  *out = {b.strides[0], b.strides[1], d.padded_dims[0], d.padded_dims[1]};
  // The kernels walk a column strip as one run: its (32 k x 64 n) blocks
  // must be adjacent, i.e. the k-blocks of one n-block are innermost.
  return d.offset0 == 0 && out->k_block == 32 * 64 && d.padded_dims[0] % 32 == 0;
}

// HF weights w [n][k] (bf16, contiguous) into the packed layout `l`
// describes, zero padding included: block (kb, nb) holds, for each of its 16
// k-pairs, the pair (w[n][k], w[n][k+1]) of its 64 columns n in order, so it
// is a 64 x 16 transpose of 32-bit pairs. Parallel over column blocks.
void PackBf16(const uint16_t* w, int64_t n, int64_t k, const PackedBf16Layout& l, uint16_t* out) {
  const int64_t n_blocks = l.n_padded / 64, k_blocks = l.k_padded / 32;
#pragma omp parallel for num_threads(NumThreads())
  for (int64_t nb = 0; nb < n_blocks; ++nb) {
    for (int64_t kb = 0; kb < k_blocks; ++kb) {
      uint32_t* blk = reinterpret_cast<uint32_t*>(out + nb * l.n_block + kb * l.k_block);
      for (int64_t c = 0; c < 64; ++c) {
        const int64_t row = nb * 64 + c;
        for (int64_t kp = 0; kp < 16; ++kp) {
          const int64_t k0 = kb * 32 + 2 * kp;
          const uint32_t lo = row < n && k0 < k ? w[row * k + k0] : 0;
          const uint32_t hi = row < n && k0 + 1 < k ? w[row * k + k0 + 1] : 0;
          blk[kp * 64 + c] = lo | (hi << 16);
        }
      }
    }
  }
}

}  // namespace

struct CpuLinear::Impl {
  struct Entry {
    dnnl::matmul prim;
    memory weights;  // packed_ unless this M wanted another layout
    // The primitive runs with a user scratchpad (UserScratchpadAttr): it is
    // shared by every thread that calls Forward.
    memory::desc scratchpad;
  };

  DType weight_dtype;
  int64_t n = 0, k = 0;
  HugeBuffer packed_storage;  // packed's bytes
  memory packed;
  // packed is BA16a64b2a bf16: our kernel takes M <= kGemvMaxM, or every
  // M where oneDNN has no bf16 matmul that reads this layout (below
  // avx512bf16 it has none or prefers a plain one).
  bool gemv = false;
  bool gemv_all_m = false;
  PackedBf16Layout layout;
  memory bias;  // f32 [1, N]; empty if none
  std::mutex mu;
  std::map<std::pair<int64_t, DType>, Entry> cache;  // guarded by mu; key (M, dst dtype)

  dnnl::matmul::primitive_desc MakePd(int64_t m, DType dst_dtype, memory::desc wei) const {
    memory::desc src({m, k}, DnnlType(weight_dtype), Tag::ab);
    memory::desc dst({m, n}, DnnlType(dst_dtype), Tag::ab);
    if (bias) {
      return {dnnl::matmul::desc(src, wei, bias.get_desc(), dst), UserScratchpadAttr(), DnnlEngine()};
    }
    return {dnnl::matmul::desc(src, wei, dst), UserScratchpadAttr(), DnnlEngine()};
  }
  memory::desc AnyWeights() const { return memory::desc({k, n}, DnnlType(weight_dtype), Tag::any); }

  const Entry& Get(int64_t m, DType dst_dtype) {
    std::lock_guard<std::mutex> lock(mu);
    auto key = std::make_pair(m, dst_dtype);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    auto pd = MakePd(m, dst_dtype, AnyWeights());
    Entry e{dnnl::matmul(pd), packed, pd.scratchpad_desc()};
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
    // oneDNN's preferred layout for this shape at this ISA level; for bf16
    // weights, if it is not the one our kernels read (or there is no bf16
    // matmul at all), pack to that one ourselves and run every M on them.
    memory::desc layout;
    try {
      layout = s.MakePd(kLayoutProbeM, DType::kF32, s.AnyWeights()).weights_desc();
    } catch (const dnnl::error&) {
      if (s.weight_dtype != DType::kBF16) throw;
    }
    if (s.weight_dtype == DType::kBF16 && !DescribePackedBf16(layout, &s.layout)) {
      layout = memory::desc({s.k, s.n}, memory::data_type::bf16, Tag::BA16a64b2a);
      s.gemv_all_m = true;
    }
    s.packed_storage = HugeBuffer(layout.get_size());
    s.packed = memory(layout, DnnlEngine(), s.packed_storage.data());
    s.gemv = DescribePackedBf16(s.packed.get_desc(), &s.layout);
    OMNI_CHECK(s.gemv || !s.gemv_all_m) << "linear " << s.n << "x" << s.k << ": packed bf16 layout not understood";
    if (s.gemv_all_m) {
      // Where we chose the layout, oneDNN's reorder into it is its scalar
      // reference code (13 s to load the 400 MiB `bench` model at avx2).
      PackBf16(static_cast<const uint16_t*>(weight.raw_data()), s.n, s.k, s.layout,
               static_cast<uint16_t*>(s.packed.get_data_handle()));
    } else {
      dnnl::reorder(user_mem, s.packed).execute(DnnlStream(), user_mem, s.packed);
      DnnlStream().wait();
    }
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
  OMNI_CHECK(out.dtype() == DType::kF32 || out.dtype() == DType::kBF16) << "linear output " << DTypeName(out.dtype());
  PackedLinearArgs args{.w = static_cast<const uint16_t*>(s.packed.get_data_handle()),
                        .layout = s.layout,
                        .x = xp.data(),
                        .m = m,
                        .n = s.n,
                        .bias = s.bias ? static_cast<const float*>(s.bias.get_data_handle()) : nullptr,
                        .out_bf16 = out.dtype() == DType::kBF16,
                        .out = out.raw_data(),
                        .threads = NumThreads()};
  Kernels().packed_linear(args);
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
    ParallelFor(rows, rows * k > (1 << 16), 0, [&](int64_t r, int) {
      float buf[1024];
      for (int64_t c = 0; c < k; c += 1024) {
        int64_t len = std::min<int64_t>(1024, k - c);
        ToF32(AddElems(x.raw_data(), r * k + c, x.dtype()), x.dtype(), buf, len);
        FromF32(buf, s.weight_dtype, AddElems(src.raw_data(), r * k + c, s.weight_dtype), len);
      }
    });
  }
  if (s.gemv && (m <= kGemvMaxM || s.gemv_all_m)) {
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
    if (memory scratch = DnnlScratchpad(e.scratchpad)) args.emplace(DNNL_ARG_SCRATCHPAD, scratch);
    e.prim.execute(DnnlStream(), args);
    DnnlStream().wait();
  } catch (const dnnl::error& e) {
    OMNI_CHECK(false) << "oneDNN linear failed: " << e.what();
  }
  if (dst.raw_data() != out.raw_data()) {
    FromF32(static_cast<const float*>(dst.raw_data()), out.dtype(), out.raw_data(), out.numel());
  }
}

namespace {

void DnnlMatMul(const Tensor& a, const Tensor& b, const Tensor& out) {
  const memory::data_type dt = DnnlType(a.dtype());
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
}

}  // namespace

void MatMul(const Tensor& a, const Tensor& b, const Tensor& out) {
  SyncOmpThreads();
  try {
    try {
      DnnlMatMul(a, b, out);
    } catch (const dnnl::error&) {
      if (a.dtype() != DType::kBF16) throw;
      // No bf16 matmul at this ISA level (below avx512): the same product
      // in f32 (bf16 widens exactly), rounded to the output dtype once.
      Tensor out32 = out.dtype() == DType::kF32 ? out : Tensor::Empty(out.shape(), DType::kF32);
      DnnlMatMul(a.To(DType::kF32), b.To(DType::kF32), out32);
      if (out32.raw_data() != out.raw_data()) FromF32(out32.data<float>(), out.dtype(), out.raw_data(), out.numel());
    }
  } catch (const dnnl::error& e) {
    OMNI_CHECK(false) << "oneDNN matmul failed: " << e.what();
  }
}

}  // namespace omni::cpu
