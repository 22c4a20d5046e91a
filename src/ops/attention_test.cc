#include "ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>

#include "ops/shape_ops.h"
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

// A few queries per head take decode-shaped tiles (a KV head's query group
// in one 16-row tile): check them under a sliding window with a KV prefix,
// under segments, and with a tile predicate.
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

// Rows [row0, row0 + n) of a [T, H, D] tensor as one flat vector.
std::vector<float> Rows(const Tensor& t, int64_t row0, int64_t n) {
  return t.Slice(0, row0, row0 + n).Contiguous().ToFloats();
}

// Preemption recomputes a sequence's tokens in a prefill that were decoded
// one at a time before; the outputs must agree bit for bit, whatever the
// GQA group (which sets the decode tile) and across KV-tile boundaries.
TEST(AttentionTest, DecodedRowEqualsItsRowInPrefill) {
  struct Heads {
    int64_t hq, hkv;
  };
  for (DType dt : {DType::kBF16, DType::kF32}) {
    for (Heads h : {Heads{16, 4}, Heads{4, 4}, Heads{8, 1}, Heads{32, 1}}) {
      const int64_t n = 150, d = 64;
      Tensor q = RandomTensor({n, h.hq, d}, dt, 51, -2, 2);
      Tensor k = RandomTensor({n, h.hkv, d}, dt, 52, -2, 2);
      Tensor v = RandomTensor({n, h.hkv, d}, dt, 53);
      AttentionParams p;
      p.scale = 0.125f;
      p.mask.causal = true;
      Tensor prefill = Attention(q, k, v, p);
      for (int64_t i : {0, 1, 63, 64, 65, 127, 149}) {
        p.mask.q_offset = i;
        Tensor one = Attention(q.Slice(0, i, i + 1), k.Slice(0, 0, i + 1), v.Slice(0, 0, i + 1), p);
        EXPECT_EQ(Rows(one, 0, 1), Rows(prefill, i, 1)) << DTypeName(dt) << " hq=" << h.hq << " row " << i;
        if (i >= 2) {  // a 3-token step (chunked prefill or speculative decode)
          p.mask.q_offset = i - 2;
          Tensor three = Attention(q.Slice(0, i - 2, i + 1), k.Slice(0, 0, i + 1), v.Slice(0, 0, i + 1), p);
          EXPECT_EQ(Rows(three, 0, 3), Rows(prefill, i - 2, 3)) << DTypeName(dt) << " hq=" << h.hq << " row " << i;
        }
      }
    }
  }
}

// Scatters a [len, H, D] sequence into cache blocks of 16 positions.
void WriteBlocks(const Tensor& rows, const std::vector<int32_t>& table, Tensor* cache) {
  const int64_t row_bytes = rows.dim(1) * rows.dim(2) * DTypeSize(rows.dtype());
  Tensor src = rows.Contiguous();
  for (int64_t pos = 0; pos < rows.dim(0); ++pos) {
    std::memcpy(static_cast<uint8_t*>(cache->raw_data()) + (table[pos / 16] * 16 + pos % 16) * row_bytes,
                static_cast<const uint8_t*>(src.raw_data()) + pos * row_bytes, row_bytes);
  }
}

// A batch mixing decode steps and prefill chunks, read from shuffled cache
// blocks, gives each sequence exactly what Attention() gives on its own
// contiguous keys.
TEST(AttentionTest, PagedBatchMatchesContiguousPerSequence) {
  for (DType dt : {DType::kBF16, DType::kF32}) {
    const int64_t hq = 8, hkv = 2, d = 64, num_blocks = 40;
    Tensor k_cache = Tensor::Zeros({num_blocks, 16, hkv, d}, dt);
    Tensor v_cache = Tensor::Zeros({num_blocks, 16, hkv, d}, dt);
    struct Seq {
      int64_t start, n;
    };
    const Seq seqs[] = {{0, 1}, {40, 1}, {0, 70}, {100, 30}, {17, 1}};
    std::vector<std::vector<int32_t>> tables;
    std::vector<PagedSequence> paged;
    std::vector<Tensor> keys, values, queries;
    int32_t next_block = num_blocks - 1;  // hand out blocks from the top, out of order
    uint32_t seed = 60;
    for (const Seq& s : seqs) {
      const int64_t len = s.start + s.n;
      std::vector<int32_t> table;
      for (int64_t b = 0; b < (len + 15) / 16; ++b) table.push_back(next_block--);
      keys.push_back(RandomTensor({len, hkv, d}, dt, seed++, -2, 2));
      values.push_back(RandomTensor({len, hkv, d}, dt, seed++));
      queries.push_back(RandomTensor({s.n, hq, d}, dt, seed++, -2, 2));
      WriteBlocks(keys.back(), table, &k_cache);
      WriteBlocks(values.back(), table, &v_cache);
      tables.push_back(std::move(table));
    }
    for (size_t i = 0; i < std::size(seqs); ++i) {
      paged.push_back({.num_queries = seqs[i].n, .start_position = seqs[i].start, .block_table = tables[i]});
    }
    Tensor out = PagedAttention(Concat(queries, 0), k_cache, v_cache, paged, 0.125f);
    int64_t row = 0;
    for (size_t i = 0; i < std::size(seqs); ++i) {
      AttentionParams p;
      p.scale = 0.125f;
      p.mask.causal = true;
      p.mask.q_offset = seqs[i].start;
      EXPECT_EQ(Rows(out, row, seqs[i].n), Attention(queries[i], keys[i], values[i], p).ToFloats())
          << DTypeName(dt) << " sequence " << i;
      row += seqs[i].n;
    }
  }
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
