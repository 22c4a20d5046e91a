// Helpers for the ops tests: seeded random tensors and error measures.
//
// Relative error used throughout: max_i |got_i - ref_i| / max(max_i |ref_i|, 1e-6),
// i.e. the worst absolute error scaled by the reference's magnitude, so one
// near-zero element does not blow the measure up.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>
#include <random>
#include <vector>

#include "tensor/tensor.h"

namespace omni::ops::testing {

// Runs `forward` `iters` times on each of `threads` threads at once and
// returns, per thread, how many results were not bit-identical to `want`
// (the serial result): a shared op must give every caller its own answer.
inline std::vector<int> ConcurrentMismatches(const std::function<std::vector<float>()>& forward,
                                             const std::vector<float>& want, int threads = 4, int iters = 24) {
  std::vector<int> mismatches(static_cast<size_t>(threads), 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < iters; ++i) {
        const std::vector<float> got = forward();
        if (got.size() != want.size() || std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0) {
          ++mismatches[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  return mismatches;
}

inline Tensor RandomTensor(const Shape& shape, DType dtype, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  for (float& x : v) x = dist(rng);
  return Tensor::FromFloats(v, shape, dtype);
}

// The values a test reference should see: exactly what the tensor holds
// (after any bf16 rounding), widened to double.
inline std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<float> f = t.ToFloats();
  return std::vector<double>(f.begin(), f.end());
}

inline double RelError(const Tensor& got, const std::vector<double>& ref) {
  std::vector<float> g = got.ToFloats();
  if (g.size() != ref.size()) return INFINITY;
  double max_err = 0, max_ref = 1e-6;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!std::isfinite(g[i])) return INFINITY;
    max_err = std::max(max_err, std::abs(g[i] - ref[i]));
    max_ref = std::max(max_ref, std::abs(ref[i]));
  }
  return max_err / max_ref;
}

inline double Tolerance(DType dtype) { return dtype == DType::kBF16 ? 1e-2 : 1e-5; }

}  // namespace omni::ops::testing
