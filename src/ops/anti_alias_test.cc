// BigVGAN's anti-aliased SnakeBeta (ops/anti_alias.h) at the active ISA level
// (ops_test runs once per level) against the operation written out the way
// PyTorch's alias-free activation computes it, in double: replicate-pad 5,
// a stride-2 transposed convolution with the 12 taps, times 2, crop 15 per
// side; SnakeBeta; replicate-pad 5 / 6, a stride-2 convolution. Rows of any
// length, with per-row lengths, and a row's samples the same whatever its
// neighbours in the batch.
#include "ops/anti_alias.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace omni::ops {
namespace {

std::vector<double> Reference(const std::vector<float>& x, double alpha, double inv_beta, const std::vector<float>& f) {
  const int64_t t = std::ssize(x);
  std::vector<double> xp;
  for (int64_t i = -5; i < t + 5; ++i) xp.push_back(x[std::clamp<int64_t>(i, 0, t - 1)]);
  std::vector<double> y(static_cast<size_t>((std::ssize(xp) - 1) * 2 + 12), 0.0);
  for (size_t i = 0; i < xp.size(); ++i) {
    for (int k = 0; k < 12; ++k) y[2 * i + k] += xp[i] * f[k];
  }
  std::vector<double> u(y.begin() + 15, y.end() - 15);
  EXPECT_EQ(std::ssize(u), 2 * t);
  for (double& v : u) v = 2 * v + inv_beta * std::pow(std::sin(alpha * 2 * v), 2);
  std::vector<double> p;
  for (int64_t i = -5; i < 2 * t + 6; ++i) p.push_back(u[std::clamp<int64_t>(i, 0, 2 * t - 1)]);
  std::vector<double> out(static_cast<size_t>(t));
  for (int64_t n = 0; n < t; ++n) {
    for (int k = 0; k < 12; ++k) out[n] += p[2 * n + k] * f[k];
  }
  return out;
}

TEST(AntiAliasTest, MatchesTheTransposedConvolutionFormAtThisLevel) {
  const std::vector<float> f = KaiserSincFilter(12, 0.25, 0.3);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-6.f, 6.f), param(-1.f, 1.f);
  constexpr int64_t kChannels = 3;
  for (int64_t t : {1, 2, 5, 16, 17, 33, 100}) {
    SnakeParams p;
    std::vector<float> a(kChannels), b(kChannels);
    for (int64_t c = 0; c < kChannels; ++c) a[c] = param(rng), b[c] = param(rng);
    p.alpha = Tensor::FromFloats(a, {kChannels});
    p.beta = Tensor::FromFloats(b, {kChannels});
    p.log_scale = true;
    std::vector<float> x(static_cast<size_t>(2 * kChannels * t));
    for (float& v : x) v = value(rng);
    // Row 1's valid prefix ends early: it is processed as if the row ended there.
    const std::vector<int64_t> lengths = {t, std::max<int64_t>(1, t - 3)};
    const Tensor y = AntiAliasedSnake(Tensor::FromFloats(x, {2, kChannels, t}), p, f, lengths);
    for (int64_t r = 0; r < 2; ++r) {
      for (int64_t c = 0; c < kChannels; ++c) {
        const int64_t len = lengths[r];
        const float* row = x.data() + (r * kChannels + c) * t;
        const std::vector<double> want =
            Reference({row, row + len}, std::exp(a[c]), 1.0 / (std::exp(b[c]) + 1e-9), f);
        const float* got = y.data<float>() + (r * kChannels + c) * t;
        for (int64_t n = 0; n < t; ++n) {
          if (n < len) {
            EXPECT_NEAR(got[n], want[n], 2e-5 * (1 + std::abs(want[n]))) << "t " << t << " row " << r << " n " << n;
          } else {
            EXPECT_EQ(got[n], 0.f) << "past the row's length";
          }
        }
      }
    }
    // A row alone gives the same samples as in the batch.
    const Tensor alone = AntiAliasedSnake(Tensor::FromFloats({x.data(), x.data() + kChannels * t}, {1, kChannels, t}),
                                          p, f);
    for (int64_t i = 0; i < kChannels * t; ++i) ASSERT_EQ(alone.data<float>()[i], y.data<float>()[i]) << i;
  }
}

}  // namespace
}  // namespace omni::ops
