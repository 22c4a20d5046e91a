#include "ops/norm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ops/test_util.h"

namespace omni::ops {
namespace {

using testing::RandomTensor;
using testing::RelError;
using testing::Tolerance;
using testing::ToDoubles;

TEST(NormTest, RmsAndLayerNorm) {
  const Shape shapes[] = {{1, 1}, {3, 7}, {2, 5, 257}};
  uint32_t seed = 1;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (const Shape& s : shapes) {
      const int64_t d = s.back(), rows = NumElements(s) / d;
      Tensor x = RandomTensor(s, dt, seed++, -3, 3);
      Tensor w = RandomTensor({d}, DType::kF32, seed++), b = RandomTensor({d}, DType::kBF16, seed++);
      std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w), bv = ToDoubles(b);
      std::vector<double> rms(xv.size()), rms1(xv.size()), ln(xv.size());
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0, sum = 0, var = 0;
        for (int64_t i = 0; i < d; ++i) ss += xv[r * d + i] * xv[r * d + i], sum += xv[r * d + i];
        const double mean = sum / d;
        for (int64_t i = 0; i < d; ++i) var += std::pow(xv[r * d + i] - mean, 2);
        for (int64_t i = 0; i < d; ++i) {
          const double n = xv[r * d + i] / std::sqrt(ss / d + 1e-6);
          rms[r * d + i] = n * wv[i];
          rms1[r * d + i] = n * (1 + wv[i]);
          ln[r * d + i] = (xv[r * d + i] - mean) / std::sqrt(var / d + 1e-5) * wv[i] + bv[i];
        }
      }
      EXPECT_LE(RelError(RmsNorm(x, w, 1e-6f), rms), Tolerance(dt)) << ShapeToString(s);
      EXPECT_LE(RelError(RmsNorm(x, w, 1e-6f, 1.f), rms1), Tolerance(dt));
      EXPECT_LE(RelError(LayerNorm(x, w, b, 1e-5f), ln), Tolerance(dt));
    }
}

TEST(NormTest, GroupNorm) {
  const std::pair<Shape, int64_t> cases[] = {{{1, 4, 1}, 2}, {{2, 6, 5, 3}, 3}, {{1, 8, 33}, 1}, {{2, 3, 7}, 3}};
  uint32_t seed = 20;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (const auto& [s, g] : cases) {
      Tensor x = RandomTensor(s, dt, seed++, -2, 3);
      const int64_t n = s[0], c = s[1], sp = NumElements(s) / (n * c), cg = c / g;
      Tensor w = RandomTensor({c}, DType::kF32, seed++), b = RandomTensor({c}, DType::kF32, seed++);
      std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w), bv = ToDoubles(b), ref(xv.size());
      for (int64_t in = 0; in < n; ++in)
        for (int64_t ig = 0; ig < g; ++ig) {
          const int64_t base = (in * c + ig * cg) * sp, len = cg * sp;
          double sum = 0, var = 0;
          for (int64_t i = 0; i < len; ++i) sum += xv[base + i];
          for (int64_t i = 0; i < len; ++i) var += std::pow(xv[base + i] - sum / len, 2);
          for (int64_t i = 0; i < len; ++i) {
            const int64_t ch = ig * cg + i / sp;
            ref[base + i] = (xv[base + i] - sum / len) / std::sqrt(var / len + 1e-5) * wv[ch] + bv[ch];
          }
        }
      EXPECT_LE(RelError(GroupNorm(x, g, w, b, 1e-5f), ref), Tolerance(dt)) << ShapeToString(s);
    }
}

TEST(NormTest, Softmax) {
  const Shape shapes[] = {{1}, {4, 3}, {2, 3, 1000}, {5, 17}};
  uint32_t seed = 40;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (const Shape& s : shapes) {
      Tensor x = RandomTensor(s, dt, seed++, -8, 8);
      const int64_t d = s.back(), rows = NumElements(s) / d;
      std::vector<double> xv = ToDoubles(x), ref(xv.size());
      for (int64_t r = 0; r < rows; ++r) {
        double mx = -INFINITY, sum = 0;
        for (int64_t i = 0; i < d; ++i) mx = std::max(mx, xv[r * d + i]);
        for (int64_t i = 0; i < d; ++i) sum += std::exp(xv[r * d + i] - mx);
        for (int64_t i = 0; i < d; ++i) ref[r * d + i] = std::exp(xv[r * d + i] - mx) / sum;
      }
      EXPECT_LE(RelError(Softmax(x), ref), Tolerance(dt)) << ShapeToString(s);
    }
}

}  // namespace
}  // namespace omni::ops
