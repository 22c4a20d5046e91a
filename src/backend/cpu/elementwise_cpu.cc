#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/elementwise_cpu.h"
#include "backend/cpu/parallel.h"

namespace omni::cpu {
namespace {

constexpr int64_t kChunk = 1024;  // f32 scratch per thread: 4 KiB, L1-resident

inline float Sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

inline float Apply(UnaryKind kind, float x, float arg) {
  switch (kind) {
    case UnaryKind::kCopy: return x;
    case UnaryKind::kScale: return x * arg;
    case UnaryKind::kGeluErf: return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f));
    case UnaryKind::kGeluTanh: {
      const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.f + std::tanh(inner));
    }
    case UnaryKind::kSilu: return x * Sigmoid(x);
    case UnaryKind::kTanh: return std::tanh(x);
  }
  return x;
}

inline float Apply(BinaryKind kind, float a, float b) {
  switch (kind) {
    case BinaryKind::kAdd: return a + b;
    case BinaryKind::kSub: return a - b;
    case BinaryKind::kMul: return a * b;
    case BinaryKind::kDiv: return a / b;
    case BinaryKind::kSwiGlu: return a * Sigmoid(a) * b;
  }
  return a;
}

// a[i] = silu(a[i]) * (mul ? mul[i] : 1) over n floats (scalar expf was
// most of a decode step's SwiGLU).
void SiluRow(float* a, const float* mul, int64_t n) { Kernels().silu_row(a, mul, n); }

// Loads n elements at `stride` (0 = broadcast) as f32.
void LoadStrided(const void* src, DType dtype, int64_t stride, float* dst, int64_t n) {
  if (stride == 1) return ToF32(src, dtype, dst, n);
  if (stride == 0) {
    float v;
    ToF32(src, dtype, &v, 1);
    std::fill_n(dst, n, v);
    return;
  }
  for (int64_t i = 0; i < n; ++i) ToF32(AddElems(src, i * stride, dtype), dtype, dst + i, 1);
}

// Strides of `t` broadcast to `shape` (right-aligned; repeated dims get 0).
Shape BroadcastStrides(const Tensor& t, const Shape& shape) {
  Shape s(shape.size(), 0);
  const int off = static_cast<int>(shape.size()) - t.rank();
  for (int d = 0; d < t.rank(); ++d) s[off + d] = t.dim(d) == 1 ? 0 : t.stride(d);
  return s;
}

}  // namespace

double ExpShifted(std::span<float> v, float shift) {
  return Kernels().exp_shifted(v.data(), static_cast<int64_t>(v.size()), shift);
}

void Unary(UnaryKind kind, const Tensor& x, const Tensor& out, float arg) {
  const int64_t n = x.numel();
  ParallelFor((n + kChunk - 1) / kChunk, n > 4 * kChunk, 0, [&](int64_t chunk, int) {
    const int64_t c0 = chunk * kChunk;
    float buf[kChunk];
    const int64_t len = std::min(kChunk, n - c0);
    ToF32(AddElems(x.raw_data(), c0, x.dtype()), x.dtype(), buf, len);
    if (kind == UnaryKind::kSilu) {
      SiluRow(buf, nullptr, len);
    } else if (kind != UnaryKind::kCopy) {
      for (int64_t i = 0; i < len; ++i) buf[i] = Apply(kind, buf[i], arg);
    }
    FromF32(buf, out.dtype(), AddElems(out.raw_data(), c0, out.dtype()), len);
  });
}

void Binary(BinaryKind kind, const Tensor& a, const Tensor& b, const Tensor& out) {
  const Shape& shape = out.shape();
  if (out.numel() == 0) return;
  const Shape sa = BroadcastStrides(a, shape), sb = BroadcastStrides(b, shape);
  const int r = static_cast<int>(shape.size());
  const int64_t inner = r ? shape.back() : 1;
  const int64_t ia = r ? sa.back() : 0, ib = r ? sb.back() : 0;
  const int64_t rows = out.numel() / inner;
  ParallelFor(rows, out.numel() > 4 * kChunk, 0, [&](int64_t row, int) {
    int64_t oa = 0, ob = 0, rem = row;
    for (int d = r - 2; d >= 0; --d) {
      const int64_t idx = rem % shape[d];
      rem /= shape[d];
      oa += idx * sa[d];
      ob += idx * sb[d];
    }
    float fa[kChunk], fb[kChunk];
    for (int64_t c0 = 0; c0 < inner; c0 += kChunk) {
      const int64_t len = std::min(kChunk, inner - c0);
      LoadStrided(AddElems(a.raw_data(), oa + c0 * ia, a.dtype()), a.dtype(), ia, fa, len);
      LoadStrided(AddElems(b.raw_data(), ob + c0 * ib, b.dtype()), b.dtype(), ib, fb, len);
      if (kind == BinaryKind::kSwiGlu) {
        SiluRow(fa, fb, len);
      } else {
        for (int64_t i = 0; i < len; ++i) fa[i] = Apply(kind, fa[i], fb[i]);
      }
      FromF32(fa, out.dtype(), AddElems(out.raw_data(), row * inner + c0, out.dtype()), len);
    }
  });
}

void Snake(const Tensor& x, const Tensor& alpha, const Tensor& beta, bool log_scale, const Tensor& out) {
  const int64_t batch = x.dim(0), channels = x.dim(1), t = x.dim(2);
  const float* al = alpha.data<float>();
  const float* be = beta.defined() ? beta.data<float>() : nullptr;
#pragma omp parallel for num_threads(NumThreads()) if (x.numel() > 4 * kChunk)
  for (int64_t bc = 0; bc < batch * channels; ++bc) {
    const int64_t c = bc % channels;
    float a = al[c], bt = be ? be[c] : al[c];
    if (log_scale) {
      a = std::exp(a);
      bt = std::exp(bt);
    }
    // BigVGAN adds 1e-9 to the divisor so a zero parameter stays finite.
    const float inv = 1.f / (bt + 1e-9f);
    float buf[kChunk];
    for (int64_t c0 = 0; c0 < t; c0 += kChunk) {
      const int64_t len = std::min(kChunk, t - c0);
      ToF32(AddElems(x.raw_data(), bc * t + c0, x.dtype()), x.dtype(), buf, len);
      for (int64_t i = 0; i < len; ++i) {
        const float s = std::sin(a * buf[i]);
        buf[i] += inv * s * s;
      }
      FromF32(buf, out.dtype(), AddElems(out.raw_data(), bc * t + c0, out.dtype()), len);
    }
  }
}

void Embedding(const Tensor& table, std::span<const int64_t> ids, const Tensor& out) {
  const int64_t d = table.dim(1);
  const size_t row_bytes = static_cast<size_t>(d) * DTypeSize(table.dtype());
  const int64_t n = static_cast<int64_t>(ids.size());
  ParallelFor(n, n * d > 4 * kChunk, 0, [&](int64_t i, int) {
    std::memcpy(AddElems(out.raw_data(), i * d, out.dtype()), AddElems(table.raw_data(), ids[i] * d, table.dtype()),
                row_bytes);
  });
}

}  // namespace omni::cpu
