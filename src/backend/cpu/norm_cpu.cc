// Row normalisations. Statistics accumulate in double: rows can be long
// (GroupNorm over a whole image group) and the cost is negligible next to
// the memory traffic once the sum is spread over vector lanes (RmsNorm sits
// twice in every decoder layer; a serial double chain cost it 4 cycles per
// element).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/elementwise_cpu.h"
#include "backend/cpu/parallel.h"

namespace omni::cpu {
namespace {

const float* OptionalF32(const Tensor& t) { return t.defined() && t.numel() > 0 ? t.data<float>() : nullptr; }

// sum of v[i]^2 in double over vector lanes, then a fixed reduction: the
// same for a row whatever the rest of the batch is.
double SumSquares(const float* v, int64_t n) { return Kernels().sum_squares(v, n); }

}  // namespace

void RmsNorm(const Tensor& x, const Tensor& weight, float eps, float weight_offset, const Tensor& out) {
  const int64_t rows = x.dim(0), d = x.dim(1);
  const float* w = OptionalF32(weight);
  // Each thread's row buffer.
  std::vector<float> scratch(static_cast<size_t>(NumThreads() * d));
  ParallelFor(rows, x.numel() > 16384, 0, [&](int64_t r, int thread) {
    float* buf = scratch.data() + thread * d;
    ToF32(AddElems(x.raw_data(), r * d, x.dtype()), x.dtype(), buf, d);
    const double ss = SumSquares(buf, d);
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / d + eps));
    for (int64_t i = 0; i < d; ++i) buf[i] = buf[i] * inv * (w ? w[i] + weight_offset : 1.f);
    FromF32(buf, out.dtype(), AddElems(out.raw_data(), r * d, out.dtype()), d);
  });
}

void LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, const Tensor& out) {
  const int64_t rows = x.dim(0), d = x.dim(1);
  const float* w = OptionalF32(weight);
  const float* b = OptionalF32(bias);
#pragma omp parallel num_threads(NumThreads()) if (x.numel() > 16384)
  {
    std::vector<float> buf(d);
#pragma omp for
    for (int64_t r = 0; r < rows; ++r) {
      ToF32(AddElems(x.raw_data(), r * d, x.dtype()), x.dtype(), buf.data(), d);
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < d; ++i) sum += buf[i];
      const double mean = sum / d;
      for (int64_t i = 0; i < d; ++i) sq += (buf[i] - mean) * (buf[i] - mean);
      const float inv = static_cast<float>(1.0 / std::sqrt(sq / d + eps));
      const float m = static_cast<float>(mean);
      for (int64_t i = 0; i < d; ++i) buf[i] = (buf[i] - m) * inv * (w ? w[i] : 1.f) + (b ? b[i] : 0.f);
      FromF32(buf.data(), out.dtype(), AddElems(out.raw_data(), r * d, out.dtype()), d);
    }
  }
}

void GroupNorm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, float eps,
               const Tensor& out) {
  const int64_t n = x.dim(0), c = x.dim(1), s = x.dim(2), cg = c / groups, len = cg * s;
  const float* w = OptionalF32(weight);
  const float* b = OptionalF32(bias);
#pragma omp parallel num_threads(NumThreads()) if (x.numel() > 16384)
  {
    std::vector<float> buf(len);
#pragma omp for
    for (int64_t ng = 0; ng < n * groups; ++ng) {
      const int64_t base = ng * len, g = ng % groups;
      ToF32(AddElems(x.raw_data(), base, x.dtype()), x.dtype(), buf.data(), len);
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < len; ++i) sum += buf[i];
      const double mean = sum / len;
      for (int64_t i = 0; i < len; ++i) sq += (buf[i] - mean) * (buf[i] - mean);
      const float inv = static_cast<float>(1.0 / std::sqrt(sq / len + eps));
      const float m = static_cast<float>(mean);
      for (int64_t ch = 0; ch < cg; ++ch) {
        const int64_t cc = g * cg + ch;
        const float scale = inv * (w ? w[cc] : 1.f), shift = b ? b[cc] : 0.f;
        float* row = buf.data() + ch * s;
        for (int64_t i = 0; i < s; ++i) row[i] = (row[i] - m) * scale + shift;
      }
      FromF32(buf.data(), out.dtype(), AddElems(out.raw_data(), base, out.dtype()), len);
    }
  }
}

void Softmax(const Tensor& x, const Tensor& out) {
  const int64_t rows = x.dim(0), d = x.dim(1);
#pragma omp parallel num_threads(NumThreads()) if (x.numel() > 16384)
  {
    std::vector<float> buf(d + 16);
#pragma omp for
    for (int64_t r = 0; r < rows; ++r) {
      ToF32(AddElems(x.raw_data(), r * d, x.dtype()), x.dtype(), buf.data(), d);
      float mx = -INFINITY;
      for (int64_t i = 0; i < d; ++i) mx = std::max(mx, buf[i]);
      if (mx == -INFINITY) mx = 0;  // all -inf: exp gives 0, the row becomes 0/0 = NaN as in PyTorch
      const float inv = static_cast<float>(1.0 / ExpShifted(std::span<float>(buf.data(), d), mx));
      for (int64_t i = 0; i < d; ++i) buf[i] *= inv;
      FromF32(buf.data(), out.dtype(), AddElems(out.raw_data(), r * d, out.dtype()), d);
    }
  }
}

}  // namespace omni::cpu
