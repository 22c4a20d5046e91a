#include "backend/cpu/anti_alias_cpu.h"

#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/kernels.h"

namespace omni::cpu {

void AntiAliasedSnake(const Tensor& x, const float* alpha, const float* inv_beta, std::span<const float> filter,
                      std::span<const int64_t> lengths, const Tensor& out) {
  const int64_t batch = x.dim(0), channels = x.dim(1), t = x.dim(2);
  const float* src = x.data<float>();
  float* dst = out.data<float>();
  const float* f = filter.data();
  const auto row = Kernels().anti_aliased_snake_row;
#pragma omp parallel num_threads(NumThreads()) if (batch * channels * t > 16384)
  {
    std::vector<float> scratch(static_cast<size_t>(3 * t + 24));
#pragma omp for schedule(static)
    for (int64_t bc = 0; bc < batch * channels; ++bc) {
      const int64_t c = bc % channels, len = lengths.empty() ? t : lengths[bc / channels];
      if (len > 0) row(src + bc * t, len, alpha[c], inv_beta[c], f, dst + bc * t, scratch.data());
      std::fill(dst + bc * t + len, dst + (bc + 1) * t, 0.f);
    }
  }
}

}  // namespace omni::cpu
