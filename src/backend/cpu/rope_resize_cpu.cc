#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/elementwise_cpu.h"
#include "backend/cpu/parallel.h"

namespace omni::cpu {

void Rope(const Tensor& x, const std::vector<int64_t>& positions, int64_t axes, const std::vector<float>& inv_freq,
          const std::vector<int64_t>& sections, bool interleaved, float attention_scaling, const Tensor& out) {
  const int64_t t = x.dim(0), h = x.dim(1), d = x.dim(2), half = static_cast<int64_t>(inv_freq.size());
  std::vector<int> axis_of(half);
  for (int64_t a = 0, f = 0; a < axes; ++a)
    for (int64_t k = 0; k < sections[a]; ++k) axis_of[f++] = static_cast<int>(a);
  // Each thread's cos/sin pairs and head buffer.
  const int64_t per_thread = 2 * half + d;
  std::vector<float> scratch(static_cast<size_t>(NumThreads() * per_thread));
  ParallelFor(t, x.numel() > 16384, 0, [&](int64_t i, int thread) {
    float* cs = scratch.data() + thread * per_thread;
    float* buf = cs + 2 * half;
    // Angles in double: pos * inv_freq loses ~1e-4 rad in f32 at pos ~4k.
    for (int64_t f = 0; f < half; ++f) {
      const double ang = static_cast<double>(positions[axis_of[f] * t + i]) * inv_freq[f];
      cs[2 * f] = static_cast<float>(std::cos(ang) * attention_scaling);
      cs[2 * f + 1] = static_cast<float>(std::sin(ang) * attention_scaling);
    }
    for (int64_t hh = 0; hh < h; ++hh) {
      ToF32(AddElems(x.raw_data(), i * x.stride(0) + hh * x.stride(1), x.dtype()), x.dtype(), buf, d);
      for (int64_t f = 0; f < half; ++f) {
        // NeoX / HF rotate_half pairs (f, f + half); GPT-J pairs (2f, 2f + 1).
        const int64_t i0 = interleaved ? 2 * f : f, i1 = interleaved ? 2 * f + 1 : f + half;
        const float a = buf[i0], b = buf[i1], c = cs[2 * f], s = cs[2 * f + 1];
        buf[i0] = a * c - b * s;
        buf[i1] = b * c + a * s;
      }
      FromF32(buf, out.dtype(), AddElems(out.raw_data(), (i * h + hh) * d, out.dtype()), d);
    }
  });
}

namespace {

// PyTorch's source coordinate for align_corners=False with an explicit size.
inline double SourceCoord(int64_t dst, int64_t in, int64_t out) {
  return (dst + 0.5) * (static_cast<double>(in) / out) - 0.5;
}

// Keys' cubic convolution weights (A = -0.75, PyTorch's choice) for offset t.
inline void CubicWeights(double t, double w[4]) {
  constexpr double kA = -0.75;
  auto near = [](double x) { return ((kA + 2) * x - (kA + 3)) * x * x + 1; };
  auto far = [](double x) { return ((kA * x - 5 * kA) * x + 8 * kA) * x - 4 * kA; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

struct Taps {
  std::vector<int64_t> idx;  // [out, ntaps], clamped
  std::vector<float> w;
};

Taps MakeTaps(int64_t in, int64_t out, bool bicubic) {
  const int n = bicubic ? 4 : 2;
  Taps taps{std::vector<int64_t>(out * n), std::vector<float>(out * n)};
  for (int64_t o = 0; o < out; ++o) {
    double src = SourceCoord(o, in, out);
    if (!bicubic) src = std::max(src, 0.0);  // bilinear clamps negative coords to 0
    const int64_t base = static_cast<int64_t>(std::floor(src));
    const double t = src - base;
    double w[4];
    if (bicubic) {
      CubicWeights(t, w);
    } else {
      w[0] = 1 - t;
      w[1] = t;
    }
    const int64_t first = bicubic ? base - 1 : base;
    for (int k = 0; k < n; ++k) {
      taps.idx[o * n + k] = std::clamp<int64_t>(first + k, 0, in - 1);
      taps.w[o * n + k] = static_cast<float>(w[k]);
    }
  }
  return taps;
}

}  // namespace

void Resize(const Tensor& x, bool bicubic, const Tensor& out) {
  const int64_t planes = x.dim(0) * x.dim(1), ih = x.dim(2), iw = x.dim(3), oh = out.dim(2), ow = out.dim(3);
  const int n = bicubic ? 4 : 2;
  const Taps ty = MakeTaps(ih, oh, bicubic), tx = MakeTaps(iw, ow, bicubic);
#pragma omp parallel num_threads(NumThreads()) if (out.numel() > 16384)
  {
    std::vector<float> plane(ih * iw), row(ow), tmp(iw);
#pragma omp for
    for (int64_t p = 0; p < planes; ++p) {
      ToF32(AddElems(x.raw_data(), p * ih * iw, x.dtype()), x.dtype(), plane.data(), ih * iw);
      for (int64_t oy = 0; oy < oh; ++oy) {
        // Vertical pass into tmp, then horizontal taps; separable as in PyTorch.
        std::fill(tmp.begin(), tmp.end(), 0.f);
        for (int k = 0; k < n; ++k) {
          const float wy = ty.w[oy * n + k];
          const float* src = plane.data() + ty.idx[oy * n + k] * iw;
          for (int64_t ix = 0; ix < iw; ++ix) tmp[ix] += wy * src[ix];
        }
        for (int64_t ox = 0; ox < ow; ++ox) {
          float acc = 0;
          for (int k = 0; k < n; ++k) acc += tx.w[ox * n + k] * tmp[tx.idx[ox * n + k]];
          row[ox] = acc;
        }
        FromF32(row.data(), out.dtype(), AddElems(out.raw_data(), (p * oh + oy) * ow, out.dtype()), ow);
      }
    }
  }
}

namespace {

// PyTorch's nearest_idx (aten/src/ATen/native/UpSample.h) for an explicit
// output size: the identity and an exact x2 are special-cased there, anything
// else is floor(dst * scale) with the scale in float, clamped to the input.
int64_t NearestSource(int64_t dst, int64_t in, int64_t out) {
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(dst) * scale)), in - 1);
}

// T is the element's bit pattern: nearest copies values, so bf16 needs no
// conversion. Output rows reading the source row of the row above are a copy
// of it (every other row in an x2 upsample).
template <typename T>
void NearestPlanes(const T* x, T* out, int64_t planes, int64_t ih, int64_t iw, int64_t oh, int64_t ow) {
  std::vector<int64_t> sy(oh), sx(ow);
  for (int64_t o = 0; o < oh; ++o) sy[o] = NearestSource(o, ih, oh);
  for (int64_t o = 0; o < ow; ++o) sx[o] = NearestSource(o, iw, ow);
  const bool double_width = ow == 2 * iw;
#pragma omp parallel for num_threads(NumThreads()) if (planes * oh * ow > 16384)
  for (int64_t p = 0; p < planes; ++p) {
    const T* src_plane = x + p * ih * iw;
    T* dst_plane = out + p * oh * ow;
    for (int64_t oy = 0; oy < oh; ++oy) {
      T* dst = dst_plane + oy * ow;
      if (oy > 0 && sy[oy] == sy[oy - 1]) {
        std::memcpy(dst, dst - ow, static_cast<size_t>(ow) * sizeof(T));
        continue;
      }
      const T* src = src_plane + sy[oy] * iw;
      if (double_width) {
        for (int64_t ix = 0; ix < iw; ++ix) dst[2 * ix] = dst[2 * ix + 1] = src[ix];
      } else {
        for (int64_t ox = 0; ox < ow; ++ox) dst[ox] = src[sx[ox]];
      }
    }
  }
}

}  // namespace

void ResizeNearest(const Tensor& x, const Tensor& out) {
  const int64_t planes = x.dim(0) * x.dim(1), ih = x.dim(2), iw = x.dim(3), oh = out.dim(2), ow = out.dim(3);
  if (DTypeSize(x.dtype()) == 4) {
    NearestPlanes(static_cast<const uint32_t*>(x.raw_data()), static_cast<uint32_t*>(out.raw_data()), planes, ih, iw,
                  oh, ow);
  } else {
    NearestPlanes(static_cast<const uint16_t*>(x.raw_data()), static_cast<uint16_t*>(out.raw_data()), planes, ih, iw,
                  oh, ow);
  }
}

}  // namespace omni::cpu
