#include "backend/cpu/conv_cpu.h"

#include <map>
#include <mutex>
#include <optional>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/dnnl_context.h"
#include "core/log.h"

namespace omni::cpu {
namespace {

using dnnl::memory;

memory::desc Plain(const Shape& shape, memory::data_type dt) {
  memory::dims dims(shape.begin(), shape.end());
  Shape st = ContiguousStrides(shape);
  return memory::desc(dims, dt, memory::dims(st.begin(), st.end()));
}

memory::dims Dims(const std::vector<int64_t>& v, int64_t delta = 0) {
  memory::dims d;
  for (int64_t x : v) d.push_back(x + delta);
  return d;
}

}  // namespace

struct CpuConv::Impl {
  struct Entry {
    dnnl::primitive prim;
    memory::desc src, dst;  // the primitive's (possibly blocked) layouts
    memory weights;
    // The primitive runs with a user scratchpad (UserScratchpadAttr): it is
    // shared by every thread that calls Forward.
    memory::desc scratchpad;
  };

  ConvSpec spec;
  DType weight_dtype = DType::kF32;
  // What oneDNN computes in: the weight dtype, or f32 for bf16 weights at an
  // ISA level where oneDNN has no bf16 convolution (below avx512).
  DType compute_dtype = DType::kF32;
  std::vector<int64_t> ksize;  // kernel extent per spatial dim
  memory::dims wdims;          // oneDNN logical weight dims ([g,] O, I, k...)
  memory packed;
  memory bias;
  std::mutex mu;
  std::map<std::pair<Shape, DType>, Entry> cache;  // guarded by mu; key (input shape, pd dst dtype)

  // A primitive for in -> out with every layout left to oneDNN.
  Entry Make(const Shape& in, const Shape& out, DType dst_dtype) const {
    const auto wdt = DnnlType(compute_dtype);
    memory::desc src(memory::dims(in.begin(), in.end()), wdt, memory::format_tag::any);
    memory::desc dst(memory::dims(out.begin(), out.end()), DnnlType(dst_dtype), memory::format_tag::any);
    memory::desc wei(wdims, wdt, memory::format_tag::any);
    memory::desc bias_md = bias ? bias.get_desc() : memory::desc();
    const memory::dims strides = Dims(spec.stride), dil = Dims(spec.dilation, -1), pl = Dims(spec.padding);
    // oneDNN wants the right padding that makes its size formula exact.
    memory::dims pr(spec.spatial);
    for (int i = 0; i < spec.spatial; ++i) {
      const int64_t ext = (ksize[i] - 1) * spec.dilation[i] + 1;
      pr[i] = spec.transposed ? (in[2 + i] - 1) * spec.stride[i] + ext - pl[i] - out[2 + i]
                              : (out[2 + i] - 1) * spec.stride[i] + ext - in[2 + i] - pl[i];
    }
    const auto kind = dnnl::prop_kind::forward_inference;
    if (spec.transposed) {
      dnnl::deconvolution_forward::primitive_desc pd(
          dnnl::deconvolution_forward::desc(kind, dnnl::algorithm::deconvolution_direct, src, wei, bias_md, dst,
                                            strides, dil, pl, pr),
          UserScratchpadAttr(), DnnlEngine());
      return {dnnl::deconvolution_forward(pd), pd.src_desc(), pd.dst_desc(), memory(pd.weights_desc(), DnnlEngine()),
              pd.scratchpad_desc()};
    }
    dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(kind, dnnl::algorithm::convolution_direct, src, wei, bias_md, dst, strides,
                                        dil, pl, pr),
        UserScratchpadAttr(), DnnlEngine());
    return {dnnl::convolution_forward(pd), pd.src_desc(), pd.dst_desc(), memory(pd.weights_desc(), DnnlEngine()),
            pd.scratchpad_desc()};
  }

  // The cached entry for this shape; its weights share `packed` unless the
  // primitive wants another layout, then they are reordered from it once.
  const Entry& Get(const Shape& in, const Shape& out, DType dst_dtype) {
    std::lock_guard<std::mutex> lock(mu);
    auto key = std::make_pair(in, dst_dtype);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    Entry e = Make(in, out, dst_dtype);
    if (e.weights.get_desc() == packed.get_desc()) {
      e.weights = packed;
    } else {
      OMNI_LOG(kDebug, "conv: input {} prefers another weight layout; repacking", ShapeToString(in));
      dnnl::reorder(packed, e.weights).execute(DnnlStream(), packed, e.weights);
      DnnlStream().wait();
    }
    return cache.emplace(key, std::move(e)).first->second;
  }
};

CpuConv::CpuConv(const Tensor& weight, const Tensor& bias, const ConvSpec& spec) : impl_(std::make_unique<Impl>()) {
  SyncOmpThreads();
  Impl& s = *impl_;
  s.spec = spec;
  s.weight_dtype = weight.dtype();
  const int64_t g = spec.groups, a = weight.dim(0), b = weight.dim(1);
  int64_t kprod = 1;
  for (int i = 0; i < spec.spatial; ++i) {
    s.ksize.push_back(weight.dim(2 + i));
    kprod *= weight.dim(2 + i);
  }
  // Logical dims [g, O/g, I/g, k...] with strides describing PyTorch's layout:
  // conv [O, I/g, k...] (a = O, b = I/g); transposed [I, O/g, k...] (a = I, b = O/g).
  const int64_t og = spec.transposed ? b : a / g, ig = spec.transposed ? a / g : b;
  memory::dims dims = {g, og, ig}, strides;
  if (spec.transposed) {
    strides = {ig * og * kprod, kprod, og * kprod};
  } else {
    strides = {og * ig * kprod, ig * kprod, kprod};
  }
  Shape kst = ContiguousStrides(s.ksize);
  for (int i = 0; i < spec.spatial; ++i) {
    dims.push_back(s.ksize[i]);
    strides.push_back(kst[i]);
  }
  if (g == 1) {  // oneDNN's ungrouped form drops the leading g
    dims.erase(dims.begin());
    strides.erase(strides.begin());
  }
  s.wdims = dims;
  try {
    memory user(memory::desc(dims, DnnlType(s.weight_dtype), strides), DnnlEngine(), weight.raw_data());
    const int64_t out_ch = og * g;
    if (bias.defined() && bias.numel() > 0) {
      s.bias = memory(memory::desc({out_ch}, memory::data_type::f32, memory::format_tag::a), DnnlEngine());
      Tensor bf = bias.To(DType::kF32);
      ToF32(bf.raw_data(), DType::kF32, static_cast<float*>(s.bias.get_data_handle()), out_ch);
    }
    // Probe shape for the packed layout: one image of 16 (strided) steps per dim.
    Shape in = {1, ig * g}, out = {1, out_ch};
    for (int i = 0; i < spec.spatial; ++i) {
      const int64_t ext = (s.ksize[i] - 1) * spec.dilation[i] + 1;
      const int64_t n = 16;
      in.push_back(spec.transposed ? n : (n - 1) * spec.stride[i] + ext);
      out.push_back(spec.transposed ? (n - 1) * spec.stride[i] + ext - 2 * spec.padding[i] + spec.output_padding[i]
                                    : n + 2 * spec.padding[i] / spec.stride[i]);
    }
    if (!spec.transposed) {
      for (int i = 0; i < spec.spatial; ++i) {
        const int64_t ext = (s.ksize[i] - 1) * spec.dilation[i] + 1;
        out[2 + i] = (in[2 + i] + 2 * spec.padding[i] - ext) / spec.stride[i] + 1;
      }
    }
    s.compute_dtype = s.weight_dtype;
    std::optional<Impl::Entry> probe;
    try {
      probe = s.Make(in, out, DType::kF32);
    } catch (const dnnl::error&) {
      if (s.weight_dtype != DType::kBF16) throw;
      OMNI_LOG(kDebug, "conv: no bf16 convolution at this ISA level; computing in f32");
      s.compute_dtype = DType::kF32;
      probe = s.Make(in, out, DType::kF32);
    }
    s.packed = probe->weights;
    dnnl::reorder(user, s.packed).execute(DnnlStream(), user, s.packed);
    DnnlStream().wait();
  } catch (const dnnl::error& e) {
    OMNI_CHECK(false) << "oneDNN conv setup failed: " << e.what();
  }
}

CpuConv::~CpuConv() = default;

void CpuConv::Forward(const Tensor& x, const Tensor& out) const {
  SyncOmpThreads();
  Impl& s = *impl_;
  // f32 weights: compute and write f32, converting bf16 output in the last reorder.
  const DType dst_dtype = s.compute_dtype == DType::kF32 ? DType::kF32 : out.dtype();
  try {
    const Impl::Entry& e = s.Get(x.shape(), out.shape(), dst_dtype);
    dnnl::stream& stream = DnnlStream();
    memory user_src(Plain(x.shape(), DnnlType(x.dtype())), DnnlEngine(), x.raw_data());
    memory user_dst(Plain(out.shape(), DnnlType(out.dtype())), DnnlEngine(), out.raw_data());
    // Reorders convert both layout and dtype (activations to the weight dtype).
    memory src = user_src.get_desc() == e.src ? user_src : memory(e.src, DnnlEngine());
    if (src != user_src) dnnl::reorder(user_src, src).execute(stream, user_src, src);
    memory dst = user_dst.get_desc() == e.dst ? user_dst : memory(e.dst, DnnlEngine());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, e.weights}, {DNNL_ARG_DST, dst}};
    if (s.bias) args.emplace(DNNL_ARG_BIAS, s.bias);
    if (memory scratch = DnnlScratchpad(e.scratchpad)) args.emplace(DNNL_ARG_SCRATCHPAD, scratch);
    e.prim.execute(stream, args);
    if (dst != user_dst) dnnl::reorder(dst, user_dst).execute(stream, dst, user_dst);
    stream.wait();
  } catch (const dnnl::error& e) {
    OMNI_CHECK(false) << "oneDNN conv failed: " << e.what();
  }
}

}  // namespace omni::cpu
