#include "ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ops/test_util.h"
#include "ops/threading.h"

namespace omni::ops {
namespace {

using testing::RandomTensor;
using testing::RelError;
using testing::ToDoubles;
using testing::Tolerance;

// Dense reference: the full [Sq, Skv] score matrix per head, a plain softmax
// over visible keys, in double. Rows with no visible key are zero.
std::vector<double> RefAttention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionParams& p,
                                 const std::function<bool(int64_t, int64_t)>& visible) {
  std::vector<double> qv = ToDoubles(q), kv = ToDoubles(k), vv = ToDoubles(v);
  const int64_t sq = q.dim(0), hq = q.dim(1), d = q.dim(2), skv = k.dim(0), hkv = k.dim(1);
  std::vector<double> out(sq * hq * d, 0.0), scores(skv);
  for (int64_t h = 0; h < hq; ++h) {
    const int64_t g = h / (hq / hkv);
    for (int64_t i = 0; i < sq; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < skv; ++j) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c) s += qv[(i * hq + h) * d + c] * kv[(j * hkv + g) * d + c];
        scores[j] = visible(i, j) ? s * p.scale : -INFINITY;
        mx = std::max(mx, scores[j]);
      }
      if (mx == -INFINITY) continue;
      double sum = 0;
      for (int64_t j = 0; j < skv; ++j) sum += scores[j] = std::exp(scores[j] - mx);
      for (int64_t j = 0; j < skv; ++j)
        for (int64_t c = 0; c < d; ++c) out[(i * hq + h) * d + c] += scores[j] / sum * vv[(j * hkv + g) * d + c];
    }
  }
  return out;
}

struct Case {
  int64_t sq, skv, hq, hkv, d;
  bool causal;
  int64_t q_offset;
};

TEST(AttentionTest, CausalAndFullMatchDenseReference) {
  const Case cases[] = {
      {1, 1, 1, 1, 1, false, 0},     {5, 7, 2, 1, 3, false, 0},      {70, 70, 4, 2, 64, true, 0},
      {1, 130, 4, 1, 128, true, 129}, {3, 100, 2, 2, 33, true, 97},   {129, 129, 2, 1, 200, true, 0},
      {65, 200, 3, 3, 16, false, 0},  {64, 64, 1, 1, 17, true, 0},    {20, 90, 2, 1, 8, true, 70},
  };
  uint32_t seed = 100;
  for (DType dt : {DType::kF32, DType::kBF16}) {
    for (const Case& c : cases) {
      Tensor q = RandomTensor({c.sq, c.hq, c.d}, dt, seed++, -2, 2);
      Tensor k = RandomTensor({c.skv, c.hkv, c.d}, dt, seed++, -2, 2);
      Tensor v = RandomTensor({c.skv, c.hkv, c.d}, dt, seed++);
      AttentionParams p;
      p.scale = 0.7f / std::sqrt(static_cast<float>(c.d));
      p.mask.causal = c.causal;
      p.mask.q_offset = c.q_offset;
      Tensor o = Attention(q, k, v, p);
      ASSERT_EQ(o.shape(), q.shape());
      auto vis = [&](int64_t i, int64_t j) { return !c.causal || j <= c.q_offset + i; };
      EXPECT_LE(RelError(o, RefAttention(q, k, v, p, vis)), testing::Tolerance(dt))
          << "sq=" << c.sq << " skv=" << c.skv << " d=" << c.d << " dtype=" << DTypeName(dt);
    }
  }
}

// Up to 4 queries take the few-query (decode) kernel: check it under a
// sliding window with a KV prefix, under segments, and with a tile predicate.
TEST(AttentionTest, FewQueriesWithWindowSegmentsAndPredicate) {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    Tensor q = RandomTensor({3, 4, 48}, dt, 41, -2, 2);
    Tensor k = RandomTensor({90, 2, 48}, dt, 42, -2, 2);
    Tensor v = RandomTensor({90, 2, 48}, dt, 43);
    {
      AttentionParams p;
      p.scale = 0.2f;
      p.mask.causal = true;
      p.mask.q_offset = 87;
      p.mask.window = 20;
      auto vis = [&](int64_t i, int64_t j) { return j <= 87 + i && 87 + i - j < 20; };
      EXPECT_LE(RelError(Attention(q, k, v, p), RefAttention(q, k, v, p, vis)), Tolerance(dt)) << DTypeName(dt);
    }
    {
      std::vector<int32_t> qseg = {0, 1, 1}, kseg(90);
      for (int j = 0; j < 90; ++j) kseg[j] = j < 40 ? 0 : 1;
      AttentionParams p;
      p.scale = 0.2f;
      p.mask.q_segments = qseg;
      p.mask.kv_segments = kseg;
      auto vis = [&](int64_t i, int64_t j) { return qseg[i] == kseg[j]; };
      EXPECT_LE(RelError(Attention(q, k, v, p), RefAttention(q, k, v, p, vis)), Tolerance(dt)) << DTypeName(dt);
    }
    {
      AttentionParams p;
      p.scale = 0.2f;
      p.mask.block_size = 16;
      p.mask.block_visible = [](int64_t a, int64_t b) { return b % 2 == 1; };
      auto vis = [&](int64_t i, int64_t j) { return (j / 16) % 2 == 1; };
      EXPECT_LE(RelError(Attention(q, k, v, p), RefAttention(q, k, v, p, vis)), Tolerance(dt)) << DTypeName(dt);
    }
  }
}

TEST(AttentionTest, SegmentsWindowAndBlockPredicate) {
  const int32_t cu[] = {0, 3, 50, 51, 140};
  std::vector<int32_t> seg = SegmentIdsFromCuSeqlens(cu);
  ASSERT_EQ(seg.size(), 140u);
  Tensor q = RandomTensor({140, 4, 32}, DType::kF32, 7, -2, 2);
  Tensor k = RandomTensor({140, 2, 32}, DType::kF32, 8, -2, 2);
  Tensor v = RandomTensor({140, 2, 32}, DType::kF32, 9);
  for (bool causal : {false, true}) {
    AttentionParams p;
    p.scale = 0.3f;
    p.mask.causal = causal;
    p.mask.q_segments = seg;
    auto vis = [&](int64_t i, int64_t j) { return seg[i] == seg[j] && (!causal || j <= i); };
    EXPECT_LE(RelError(Attention(q, k, v, p), RefAttention(q, k, v, p, vis)), 1e-5) << causal;
  }
  {
    AttentionParams p;
    p.scale = 0.3f;
    p.mask.causal = true;
    p.mask.window = 37;
    auto vis = [&](int64_t i, int64_t j) { return j <= i && i - j < 37; };
    EXPECT_LE(RelError(Attention(q, k, v, p), RefAttention(q, k, v, p, vis)), 1e-5);
  }
  {
    // A tile predicate with some all-invisible query blocks (zero rows).
    AttentionParams p;
    p.scale = 0.3f;
    p.mask.block_size = 16;
    p.mask.block_visible = [](int64_t a, int64_t b) { return a != 3 && (a + b) % 3 != 0; };
    auto vis = [&](int64_t i, int64_t j) { return p.mask.block_visible(i / 16, j / 16); };
    EXPECT_LE(RelError(Attention(q, k, v, p), RefAttention(q, k, v, p, vis)), 1e-5);
  }
}

TEST(AttentionTest, StridedViewsOfFusedQkv) {
  // [T, (Hq + 2 Hkv) * D] as one projection output, split by views.
  const int64_t t = 37, hq = 4, hkv = 2, d = 24;
  Tensor qkv = RandomTensor({t, hq + 2 * hkv, d}, DType::kBF16, 21, -2, 2);
  Tensor q = qkv.Slice(1, 0, hq), k = qkv.Slice(1, hq, hq + hkv), v = qkv.Slice(1, hq + hkv, hq + 2 * hkv);
  AttentionParams p;
  p.scale = 0.2f;
  p.mask.causal = true;
  auto vis = [](int64_t i, int64_t j) { return j <= i; };
  EXPECT_LE(RelError(Attention(q, k, v, p), RefAttention(q.Contiguous(), k.Contiguous(), v.Contiguous(), p, vis)),
            1e-2);
}

}  // namespace
}  // namespace omni::ops

namespace omni::ops {
namespace {

TEST(AttentionTest, ThreadCountDoesNotChangeResults) {
  Tensor q = testing::RandomTensor({150, 4, 64}, DType::kBF16, 31, -2, 2);
  Tensor k = testing::RandomTensor({150, 2, 64}, DType::kBF16, 32, -2, 2);
  Tensor v = testing::RandomTensor({150, 2, 64}, DType::kBF16, 33);
  AttentionParams p;
  p.scale = 0.125f;
  p.mask.causal = true;
  const int before = NumThreads();
  SetNumThreads(1);
  EXPECT_EQ(NumThreads(), 1);
  std::vector<float> one = Attention(q, k, v, p).ToFloats();
  SetNumThreads(2);
  std::vector<float> two = Attention(q, k, v, p).ToFloats();
  SetNumThreads(before);
  EXPECT_EQ(one, two);
}

}  // namespace
}  // namespace omni::ops
