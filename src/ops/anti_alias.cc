#include "ops/anti_alias.h"

#include <cmath>
#include <numbers>

#include "backend/cpu/anti_alias_cpu.h"
#include "core/check.h"

namespace omni::ops {
namespace {

// The zeroth-order modified Bessel function of the first kind (its power
// series; converges fast for the small arguments a Kaiser window uses).
double BesselI0(double x) {
  double sum = 1, term = 1;
  for (int k = 1; k < 64; ++k) {
    term *= (x / (2 * k)) * (x / (2 * k));
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

std::vector<float> F32Vector(const Tensor& t, int64_t size, const char* what) {
  OMNI_CHECK(t.defined() && t.rank() == 1 && t.dim(0) == size) << what << " must be [" << size << "]";
  Tensor f = t.To(DType::kF32);
  return std::vector<float>(f.data<float>(), f.data<float>() + size);
}

}  // namespace

std::vector<float> KaiserSincFilter(int kernel_size, double cutoff, double half_width) {
  OMNI_CHECK(kernel_size > 1 && cutoff > 0 && cutoff <= 0.5) << kernel_size << " taps, cutoff " << cutoff;
  const bool even = kernel_size % 2 == 0;
  const int half = kernel_size / 2;
  // Kaiser's formula for the window's beta from the attenuation A (dB).
  const double a = 2.285 * (half - 1) * std::numbers::pi * (4 * half_width) + 7.95;
  const double beta = a > 50 ? 0.1102 * (a - 8.7) : a >= 21 ? 0.5842 * std::pow(a - 21, 0.4) + 0.07886 * (a - 21) : 0;
  std::vector<double> taps(static_cast<size_t>(kernel_size));
  double sum = 0;
  for (int i = 0; i < kernel_size; ++i) {
    // torch.kaiser_window(periodic=False): I0(beta * sqrt(1 - (2i/(N-1) - 1)^2)) / I0(beta)
    const double r = 2.0 * i / (kernel_size - 1) - 1;
    const double window = BesselI0(beta * std::sqrt(std::max(0.0, 1 - r * r))) / BesselI0(beta);
    const double time = even ? (i - half) + 0.5 : i - half;
    const double arg = 2 * cutoff * time;
    const double sinc = arg == 0 ? 1 : std::sin(std::numbers::pi * arg) / (std::numbers::pi * arg);
    taps[i] = 2 * cutoff * window * sinc;
    sum += taps[i];
  }
  std::vector<float> out(taps.size());
  for (size_t i = 0; i < taps.size(); ++i) out[i] = static_cast<float>(taps[i] / sum);
  return out;
}

Tensor AntiAliasedSnake(const Tensor& x, const SnakeParams& params, std::span<const float> filter,
                        std::span<const int64_t> lengths) {
  OMNI_CHECK(x.rank() == 2 || x.rank() == 3) << "anti-aliased snake input [C, T] or [B, C, T]: " << x.DebugString();
  OMNI_CHECK(x.dtype() == DType::kF32 || x.dtype() == DType::kBF16) << x.DebugString();
  OMNI_CHECK(filter.size() == 12) << "the anti-aliased activation takes 12 filter taps, not " << filter.size();
  OMNI_CHECK(x.dim(-1) >= 1) << x.DebugString();
  const int64_t c = x.dim(-2);
  std::vector<float> alpha = F32Vector(params.alpha, c, "snake alpha");
  std::vector<float> beta = F32Vector(params.beta, c, "snake beta");
  for (int64_t i = 0; i < c; ++i) {
    if (params.log_scale) {
      alpha[i] = std::exp(alpha[i]);
      beta[i] = std::exp(beta[i]);
    }
    beta[i] = 1.f / (beta[i] + 1e-9f);  // BigVGAN's guard against a zero beta
  }
  const Tensor xf = x.dtype() == DType::kF32 ? x.Contiguous() : x.To(DType::kF32);
  Tensor x3 = xf.Reshape({x.rank() == 3 ? x.dim(0) : 1, c, x.dim(-1)});
  Tensor out = Tensor::Empty(x3.shape(), DType::kF32);
  OMNI_CHECK(lengths.empty() || static_cast<int64_t>(lengths.size()) == x3.dim(0)) << "one length per batch row";
  for (int64_t len : lengths) OMNI_CHECK(len >= 0 && len <= x3.dim(2)) << "row length " << len;
  cpu::AntiAliasedSnake(x3, alpha.data(), beta.data(), filter, lengths, out);
  out = out.Reshape(x.shape());
  return x.dtype() == DType::kF32 ? out : out.To(x.dtype());
}

}  // namespace omni::ops
