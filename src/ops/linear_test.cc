#include "ops/linear.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "ops/test_util.h"

namespace omni::ops {
namespace {

using testing::ConcurrentMismatches;
using testing::RandomTensor;
using testing::RelError;
using testing::ToDoubles;

// y[m, n] = sum_k x[m, k] * w[n, k] + b[n], with x rounded to the weight
// dtype first (the documented compute dtype).
std::vector<double> RefLinear(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor xr = x.To(w.dtype());
  std::vector<double> xv = ToDoubles(xr), wv = ToDoubles(w);
  std::vector<double> bv = b.defined() ? ToDoubles(b) : std::vector<double>();
  int64_t n = w.dim(0), k = w.dim(1), m = x.numel() / k;
  std::vector<double> y(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = bv.empty() ? 0 : bv[j];
      for (int64_t c = 0; c < k; ++c) s += xv[i * k + c] * wv[j * k + c];
      y[i * n + j] = s;
    }
  return y;
}

struct LinearCase {
  int64_t m, k, n;
  DType wdt, xdt;
  bool bias;
};

TEST(LinearTest, MatchesReference) {
  const LinearCase cases[] = {
      {1, 1, 1, DType::kF32, DType::kF32, false},     {1, 64, 32, DType::kF32, DType::kF32, true},
      {7, 33, 17, DType::kF32, DType::kF32, true},     {16, 128, 96, DType::kBF16, DType::kBF16, true},
      {5, 77, 65, DType::kBF16, DType::kF32, false},   {3, 48, 40, DType::kF32, DType::kBF16, true},
      {130, 64, 33, DType::kBF16, DType::kBF16, false}, {1, 300, 257, DType::kBF16, DType::kF32, true},
      // M <= 16 with bf16 weights takes the GEMV path on the packed layout.
      {2, 40, 70, DType::kBF16, DType::kBF16, true},    {1, 4096, 64, DType::kBF16, DType::kBF16, false},
  };
  uint32_t seed = 1;
  for (const LinearCase& c : cases) {
    Tensor w = RandomTensor({c.n, c.k}, c.wdt, seed++);
    Tensor b = c.bias ? RandomTensor({c.n}, DType::kF32, seed++) : Tensor();
    Tensor x = RandomTensor({c.m, c.k}, c.xdt, seed++);
    Linear lin(w, b);
    Tensor y = lin.Forward(x);
    ASSERT_EQ(y.shape(), (Shape{c.m, c.n}));
    EXPECT_EQ(y.dtype(), c.xdt);
    DType worst = (c.wdt == DType::kBF16 || c.xdt == DType::kBF16) ? DType::kBF16 : DType::kF32;
    EXPECT_LE(RelError(y, RefLinear(x, w, b)), testing::Tolerance(worst))
        << "m=" << c.m << " k=" << c.k << " n=" << c.n;
    // A second M reuses the packed weights with another cached primitive.
    Tensor x2 = RandomTensor({c.m + 2, c.k}, c.xdt, seed++);
    EXPECT_LE(RelError(lin.Forward(x2), RefLinear(x2, w, b)), testing::Tolerance(worst));
  }
}

TEST(LinearTest, LeadingDimsAndStridedWeight) {
  Tensor wt = RandomTensor({24, 10}, DType::kF32, 5);  // [in, out]; weight is its transpose view
  Tensor w = wt.Transpose(0, 1);
  Tensor x = RandomTensor({2, 3, 24}, DType::kF32, 6);
  Linear lin(w);
  Tensor y = lin.Forward(x);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 10}));
  EXPECT_LE(RelError(y, RefLinear(x, w.Contiguous(), Tensor())), 1e-5);
}

// A decode step batches up to 16 sequences into one bf16 GEMV; a row's
// result must not depend on which rows it was batched with, bit for bit
// (K spans several 32-wide k blocks of the packed layout and is not a
// multiple of 32).
TEST(LinearTest, SmallBatchRowsMatchSingleRows) {
  const int64_t k = 1000, n = 200;
  Tensor w = RandomTensor({n, k}, DType::kBF16, 21);
  Tensor b = RandomTensor({n}, DType::kF32, 22);
  Linear lin(w, b);
  for (int64_t m : {2, 4, 7, 16}) {
    Tensor x = RandomTensor({m, k}, DType::kF32, 23 + static_cast<uint32_t>(m));
    Tensor y = lin.Forward(x);
    EXPECT_LE(RelError(y, RefLinear(x, w, b)), testing::Tolerance(DType::kBF16)) << "m=" << m;
    for (int64_t r = 0; r < m; ++r) {
      Tensor one = lin.Forward(x.Slice(0, r, r + 1).Contiguous());
      ASSERT_EQ(std::memcmp(one.raw_data(), y.Slice(0, r, r + 1).Contiguous().raw_data(), n * sizeof(float)), 0)
          << "m=" << m << " row " << r;
    }
  }
}

// Forward(x, dtype) and ForwardInto take an output dtype other than x's:
// a bf16 activation into f32 (the residual stream) is the bf16 result
// before its final rounding.
TEST(LinearTest, OutputDtypeMayDifferFromInput) {
  const int64_t k = 96, n = 80;
  Tensor w = RandomTensor({n, k}, DType::kBF16, 41);
  Linear lin(w);
  for (int64_t m : {1, 5, 40}) {  // the small-M kernel and oneDNN
    Tensor x = RandomTensor({m, k}, DType::kBF16, 42 + static_cast<uint32_t>(m));
    Tensor wide = lin.Forward(x, DType::kF32);
    EXPECT_EQ(wide.dtype(), DType::kF32);
    EXPECT_LE(RelError(wide, RefLinear(x, w, Tensor())), 1e-5) << "m=" << m;
    EXPECT_EQ(wide.To(DType::kBF16).ToFloats(), lin.Forward(x).ToFloats()) << "m=" << m;
    Tensor xf = RandomTensor({m, k}, DType::kF32, 50 + static_cast<uint32_t>(m));
    EXPECT_EQ(lin.Forward(xf, DType::kBF16).ToFloats(), lin.Forward(xf).To(DType::kBF16).ToFloats()) << "m=" << m;
  }
}

// Forward is const and documented thread-safe: one Linear run from several
// threads at once (M > 16, so oneDNN's cached matmul primitive, not the
// small-M kernel) gives every thread the single-threaded result, bit for bit.
// oneDNN's library-managed scratchpad is per primitive, so a shared cached
// primitive must be given a per-call scratchpad.
TEST(LinearTest, ConcurrentForwardMatchesSerial) {
  for (DType wdt : {DType::kBF16, DType::kF32}) {
    const int64_t m = 256, k = 1024, n = 512;
    Tensor w = RandomTensor({n, k}, wdt, 61);
    Tensor b = RandomTensor({n}, DType::kF32, 62);
    Tensor x = RandomTensor({m, k}, wdt, 63);
    Linear lin(w, b);
    const std::vector<float> want = lin.Forward(x).ToFloats();
    const std::vector<int> mismatches = ConcurrentMismatches([&] { return lin.Forward(x).ToFloats(); }, want);
    for (size_t t = 0; t < mismatches.size(); ++t) {
      EXPECT_EQ(mismatches[t], 0) << DTypeName(wdt) << " thread " << t << ": " << mismatches[t]
                                  << " results differ from the serial one";
    }
  }
}

std::vector<double> RefMatMul(const Tensor& a, const Tensor& b) {
  std::vector<double> av = ToDoubles(a), bv = ToDoubles(b);
  int64_t m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
  int64_t batch = a.numel() / (m * k);
  bool bcast = b.numel() == k * n;
  std::vector<double> out(batch * m * n);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t c = 0; c < k; ++c) s += av[(p * m + i) * k + c] * bv[((bcast ? 0 : p) * k + c) * n + j];
        out[(p * m + i) * n + j] = s;
      }
  return out;
}

TEST(MatMulTest, BatchedBroadcastAndTransposed) {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    Tensor a = RandomTensor({3, 5, 7}, dt, 11);
    Tensor b = RandomTensor({3, 7, 9}, dt, 12);
    EXPECT_LE(RelError(MatMul(a, b), RefMatMul(a, b)), testing::Tolerance(dt));
    Tensor b2 = RandomTensor({7, 4}, dt, 13);
    EXPECT_LE(RelError(MatMul(a, b2), RefMatMul(a, b2)), testing::Tolerance(dt));
    Tensor bt = RandomTensor({3, 9, 7}, dt, 14).Transpose(1, 2);  // [3, 7, 9] view
    EXPECT_LE(RelError(MatMul(a, bt), RefMatMul(a, bt.Contiguous())), testing::Tolerance(dt));
    Tensor a1 = RandomTensor({1, 1}, dt, 15), b1 = RandomTensor({1, 1}, dt, 16);
    EXPECT_LE(RelError(MatMul(a1, b1), RefMatMul(a1, b1)), testing::Tolerance(dt));
  }
}

// MatMul creates its primitive per call (on the calling thread), so it too
// gives every thread the serial result.
TEST(MatMulTest, ConcurrentMatchesSerial) {
  for (DType dt : {DType::kBF16, DType::kF32}) {
    Tensor a = RandomTensor({4, 128, 256}, dt, 71), b = RandomTensor({4, 256, 128}, dt, 72);
    const std::vector<float> want = MatMul(a, b).ToFloats();
    const std::vector<int> mismatches = ConcurrentMismatches([&] { return MatMul(a, b).ToFloats(); }, want);
    for (size_t t = 0; t < mismatches.size(); ++t) EXPECT_EQ(mismatches[t], 0) << DTypeName(dt) << " thread " << t;
  }
}

}  // namespace
}  // namespace omni::ops
