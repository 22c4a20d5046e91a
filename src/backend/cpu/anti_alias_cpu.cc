#include "backend/cpu/anti_alias_cpu.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_common.h"

namespace omni::cpu {
namespace {

constexpr int kTaps = 12;
// Upsampling: the input is replicate-padded by 3 on each side (all a 12-tap,
// stride-2 transposed filter reads); downsampling: the upsampled row is
// replicate-padded by 5 on the left and 6 on the right.
constexpr int kUpPad = 3;
constexpr int kDownLeft = 5, kDownRight = 6;

void Row(const float* in, int64_t t, float alpha, float inv_beta, const float* f, float* out, std::vector<float>& xp,
         std::vector<float>& up) {
  xp.resize(static_cast<size_t>(t + 2 * kUpPad));
  for (int64_t i = 0; i < t + 2 * kUpPad; ++i) xp[i] = in[std::clamp<int64_t>(i - kUpPad, 0, t - 1)];
  // up[2n] = 2 * sum_{d=-3..2} x[n+d] f[5-2d], up[2n+1] = 2 * sum_{d=-2..3} x[n+d] f[6-2d]
  // (PyTorch's conv_transpose1d with stride 2 over the padded row, cropped by 15 on each side).
  up.resize(static_cast<size_t>(2 * t + kDownLeft + kDownRight));
  float* u = up.data() + kDownLeft;
  for (int64_t n = 0; n < t; ++n) {
    const float* x = xp.data() + n + kUpPad;
    float even = 0, odd = 0;
    for (int d = -3; d <= 2; ++d) even += x[d] * f[5 - 2 * d];
    for (int d = -2; d <= 3; ++d) odd += x[d] * f[6 - 2 * d];
    u[2 * n] = 2 * even;
    u[2 * n + 1] = 2 * odd;
  }
  for (int64_t i = 0; i < 2 * t; ++i) {
    const float s = std::sin(alpha * u[i]);
    u[i] += inv_beta * s * s;
  }
  for (int i = 1; i <= kDownLeft; ++i) u[-i] = u[0];
  for (int i = 0; i < kDownRight; ++i) u[2 * t + i] = u[2 * t - 1];
  for (int64_t n = 0; n < t; ++n) {
    const float* p = u + 2 * n - kDownLeft;
    float acc = 0;
    for (int k = 0; k < kTaps; ++k) acc += p[k] * f[k];
    out[n] = acc;
  }
}

}  // namespace

void AntiAliasedSnake(const Tensor& x, const float* alpha, const float* inv_beta, std::span<const float> filter,
                      std::span<const int64_t> lengths, const Tensor& out) {
  const int64_t batch = x.dim(0), channels = x.dim(1), t = x.dim(2);
  const float* src = x.data<float>();
  float* dst = out.data<float>();
  const float* f = filter.data();
#pragma omp parallel num_threads(NumThreads()) if (batch * channels * t > 16384)
  {
    std::vector<float> xp, up;
#pragma omp for schedule(static)
    for (int64_t bc = 0; bc < batch * channels; ++bc) {
      const int64_t c = bc % channels, len = lengths.empty() ? t : lengths[bc / channels];
      if (len > 0) Row(src + bc * t, len, alpha[c], inv_beta[c], f, dst + bc * t, xp, up);
      std::fill(dst + bc * t + len, dst + (bc + 1) * t, 0.f);
    }
  }
}

}  // namespace omni::cpu
