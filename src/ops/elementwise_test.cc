#include "ops/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ops/shape_ops.h"
#include "ops/test_util.h"

namespace omni::ops {
namespace {

using testing::RandomTensor;
using testing::RelError;
using testing::Tolerance;
using testing::ToDoubles;

std::vector<double> RefUnary(const Tensor& x, double (*f)(double)) {
  std::vector<double> v = ToDoubles(x);
  for (double& e : v) e = f(e);
  return v;
}

TEST(ElementwiseTest, Activations) {
  const Shape shapes[] = {{1}, {3, 5}, {2, 3, 1031}};
  uint32_t seed = 1;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (const Shape& s : shapes) {
      Tensor x = RandomTensor(s, dt, seed++, -4, 4);
      const double tol = Tolerance(dt);
      EXPECT_LE(RelError(Gelu(x), RefUnary(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); })),
                tol);
      EXPECT_LE(RelError(Gelu(x, GeluApprox::kTanh), RefUnary(x, [](double v) {
                           return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
                         })),
                tol);
      EXPECT_LE(RelError(Silu(x), RefUnary(x, [](double v) { return v / (1 + std::exp(-v)); })), tol);
      EXPECT_LE(RelError(Tanh(x), RefUnary(x, [](double v) { return std::tanh(v); })), tol);
      EXPECT_LE(RelError(Scale(x, 0.25f), RefUnary(x, [](double v) { return v * 0.25; })), tol);
      EXPECT_EQ(Gelu(x).dtype(), dt);
    }
}

// Reference broadcasting by explicit index arithmetic.
std::vector<double> RefBinary(const Tensor& a, const Tensor& b, const Shape& out, char op) {
  std::vector<double> av = ToDoubles(a), bv = ToDoubles(b), o(NumElements(out));
  auto offset = [&](const Shape& s, int64_t flat) {
    int64_t off = 0, stride = 1;
    for (int d = static_cast<int>(out.size()) - 1, sd = static_cast<int>(s.size()) - 1; d >= 0; --d, --sd) {
      const int64_t idx = flat % out[d];
      flat /= out[d];
      if (sd >= 0) {
        if (s[sd] != 1) off += idx * stride;
        stride *= s[sd];
      }
    }
    return off;
  };
  for (int64_t i = 0; i < static_cast<int64_t>(o.size()); ++i) {
    const double x = av[offset(a.shape(), i)], y = bv[offset(b.shape(), i)];
    o[i] = op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : x / y;
  }
  return o;
}

TEST(ElementwiseTest, BroadcastArithmetic) {
  const std::pair<Shape, Shape> cases[] = {
      {{4, 5}, {4, 5}}, {{4, 5}, {5}}, {{3, 1, 7}, {1, 6, 1}}, {{1}, {2, 3}}, {{2, 3, 4}, {3, 1}}, {{1}, {1}},
  };
  uint32_t seed = 50;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (const auto& [sa, sb] : cases) {
      Tensor a = RandomTensor(sa, dt, seed++), b = RandomTensor(sb, dt, seed++, 0.5f, 2.f);
      const Shape out = BroadcastShape(sa, sb);
      EXPECT_LE(RelError(Add(a, b), RefBinary(a, b, out, '+')), Tolerance(dt));
      EXPECT_LE(RelError(Sub(a, b), RefBinary(a, b, out, '-')), Tolerance(dt));
      EXPECT_LE(RelError(Mul(a, b), RefBinary(a, b, out, '*')), Tolerance(dt));
      EXPECT_LE(RelError(Div(a, b), RefBinary(a, b, out, '/')), Tolerance(dt));
      EXPECT_EQ(Add(a, b).shape(), out);
    }
  // A transposed (strided) operand.
  Tensor a = RandomTensor({5, 4}, DType::kF32, 3).Transpose(0, 1);
  Tensor b = RandomTensor({4, 5}, DType::kF32, 4);
  EXPECT_LE(RelError(Mul(a, b), RefBinary(a.Contiguous(), b, {4, 5}, '*')), 1e-5);
}

TEST(ElementwiseTest, SwiGluAndSnake) {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    Tensor g = RandomTensor({3, 37}, dt, 7, -3, 3), u = RandomTensor({3, 37}, dt, 8);
    std::vector<double> gv = ToDoubles(g), uv = ToDoubles(u), ref(gv.size());
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = gv[i] / (1 + std::exp(-gv[i])) * uv[i];
    EXPECT_LE(RelError(SwiGlu(g, u), ref), Tolerance(dt));

    for (bool log_scale : {false, true})
      for (bool with_beta : {false, true}) {
        Tensor x = RandomTensor({2, 3, 50}, dt, 9, -3, 3);
        SnakeParams p;
        p.log_scale = log_scale;
        p.alpha = RandomTensor({3}, DType::kF32, 10, log_scale ? -1.f : 0.2f, log_scale ? 1.f : 2.f);
        if (with_beta) p.beta = RandomTensor({3}, DType::kF32, 11, log_scale ? -1.f : 0.2f, log_scale ? 1.f : 2.f);
        std::vector<double> xv = ToDoubles(x), av = ToDoubles(p.alpha);
        std::vector<double> bv = with_beta ? ToDoubles(p.beta) : av, r(xv.size());
        for (size_t i = 0; i < r.size(); ++i) {
          const size_t c = (i / 50) % 3;
          const double a = log_scale ? std::exp(av[c]) : av[c], b = log_scale ? std::exp(bv[c]) : bv[c];
          r[i] = xv[i] + 1 / (b + 1e-9) * std::pow(std::sin(a * xv[i]), 2);
        }
        EXPECT_LE(RelError(Snake(x, p), r), Tolerance(dt)) << log_scale << with_beta;
      }
  }
}

// The bf16 forms a model uses to hand activations to a bf16 linear: the
// same values as computing in f32 and rounding once (Tensor::To's scalar
// round-to-nearest-even is the reference), including a strided input.
TEST(ElementwiseTest, CastAndSwiGluIntoBf16) {
  Tensor x = RandomTensor({5, 333}, DType::kF32, 12, -40, 40);
  Tensor to_bf16 = Cast(x, DType::kBF16);
  EXPECT_EQ(to_bf16.dtype(), DType::kBF16);
  EXPECT_EQ(to_bf16.ToFloats(), x.To(DType::kBF16).ToFloats());
  EXPECT_EQ(Cast(to_bf16, DType::kF32).ToFloats(), to_bf16.ToFloats());
  Tensor strided = x.Slice(1, 7, 300);
  EXPECT_EQ(Cast(strided, DType::kBF16).ToFloats(), strided.Contiguous().To(DType::kBF16).ToFloats());
  EXPECT_EQ(Cast(x, DType::kF32).raw_data(), x.raw_data());  // already f32: no copy

  Tensor gate_up = RandomTensor({4, 2 * 45}, DType::kF32, 13, -3, 3);
  Tensor g = gate_up.Slice(1, 0, 45), u = gate_up.Slice(1, 45, 90);
  Tensor bf = SwiGlu(g, u, DType::kBF16);
  EXPECT_EQ(bf.dtype(), DType::kBF16);
  EXPECT_EQ(bf.ToFloats(), SwiGlu(g, u).To(DType::kBF16).ToFloats());
}

TEST(ShapeOpsTest, EmbeddingConcatSplitPermute) {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    Tensor table = RandomTensor({10, 6}, dt, 30);
    Tensor ids = Tensor::FromFloats(std::vector<float>{3, 0, 9, 3}, {2, 2}, DType::kI64);
    Tensor e = Embedding(table, ids);
    ASSERT_EQ(e.shape(), (Shape{2, 2, 6}));
    std::vector<float> tv = table.ToFloats(), ev = e.ToFloats();
    const int rows[] = {3, 0, 9, 3};
    for (int i = 0; i < 4; ++i)
      for (int c = 0; c < 6; ++c) EXPECT_EQ(ev[i * 6 + c], tv[rows[i] * 6 + c]);
    Tensor e32 = Embedding(table, ids.To(DType::kI32));
    EXPECT_EQ(e32.ToFloats(), ev);
  }
  Tensor a = RandomTensor({2, 3, 4}, DType::kF32, 31), b = RandomTensor({2, 1, 4}, DType::kF32, 32);
  Tensor parts[] = {a, b};
  Tensor c = Concat(parts, 1);
  ASSERT_EQ(c.shape(), (Shape{2, 4, 4}));
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 4; ++k) {
        const float want = j < 3 ? a.GetFloat((n * 3 + j) * 4 + k) : b.GetFloat(n * 4 + k);
        EXPECT_EQ(c.GetFloat((n * 4 + j) * 4 + k), want);
      }
  const int64_t sizes[] = {3, 1};
  std::vector<Tensor> s = Split(c, sizes, 1);
  EXPECT_EQ(s[0].Copy().ToFloats(), a.ToFloats());
  EXPECT_EQ(s[1].Copy().ToFloats(), b.ToFloats());
  Tensor p = Permute(a, {2, 0, 1});
  ASSERT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_TRUE(p.is_contiguous());
  EXPECT_EQ(p.GetFloat((3 * 2 + 1) * 3 + 2), a.GetFloat((1 * 3 + 2) * 4 + 3));
}

// Against double-precision exp: values across the range, -inf, a tail
// that is not a multiple of 16, and the cut-off below e^-87.
TEST(ExpShiftedTest, MatchesStdExpAndSums) {
  std::vector<float> v;
  for (int i = 0; i < 1003; ++i) v.push_back(-100.f + 0.1f * static_cast<float>(i % 997));
  v.push_back(-std::numeric_limits<float>::infinity());
  v.push_back(5.f);
  const std::vector<float> in = v;
  const double sum = ExpShiftedInPlace(v, 5.f);
  double want_sum = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const float d = in[i] - 5.f;  // the shift is applied in float
    const double want = d < -87.f ? 0.0 : std::exp(static_cast<double>(d));
    want_sum += want;
    EXPECT_NEAR(v[i], want, 1e-6 * want) << "i=" << i << " x=" << in[i];
  }
  EXPECT_EQ(v.back(), 1.f);  // the shift itself: exactly e^0
  EXPECT_EQ(v[v.size() - 2], 0.f);
  EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum);
}

}  // namespace
}  // namespace omni::ops
