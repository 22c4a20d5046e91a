#include "models/layers/attention_paged.h"

#include <gtest/gtest.h>

#include "models/kv_cache_view.h"
#include "models/layers/test_util.h"
#include "ops/rope.h"

namespace omni::models::layers {
namespace {

using namespace testing;

constexpr int64_t kHidden = 32, kHeads = 4, kKvHeads = 2, kDim = 8;
constexpr int64_t kQkvWidth = (kHeads + 2 * kKvHeads) * kDim;

// NeoX rotate-half RoPE of rows [n, d] at positions 0 .. n - 1.
Vec NaiveRope(const Vec& x, int64_t n, const std::vector<float>& inv_freq) {
  Vec y = x;
  const int64_t half = kDim / 2;
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const double a = p * static_cast<double>(inv_freq[i]);
      const double x1 = x[p * kDim + i], x2 = x[p * kDim + i + half];
      y[p * kDim + i] = x1 * std::cos(a) - x2 * std::sin(a);
      y[p * kDim + i + half] = x2 * std::cos(a) + x1 * std::sin(a);
    }
  }
  return y;
}

// Causal attention of a whole sequence x [n, hidden] from position 0.
Vec NaiveCausalSequence(const Vec& x, int64_t n, const Vec& qkv_w, const Vec& o_w, const std::vector<float>& inv_freq) {
  const Vec qkv = NaiveLinear(x, n, qkv_w, kQkvWidth, kHidden);
  Vec out(n * kHeads * kDim);
  for (int64_t h = 0; h < kHeads; ++h) {
    const int64_t g = h / (kHeads / kKvHeads);
    const Vec q = NaiveRope(Head(qkv, n, kQkvWidth, h, kDim), n, inv_freq);
    const Vec k = NaiveRope(Head(qkv, n, kQkvWidth, kHeads + g, kDim), n, inv_freq);
    const Vec v = Head(qkv, n, kQkvWidth, kHeads + kKvHeads + g, kDim);
    SetHead(&out, n, kHeads * kDim, h, kDim,
            NaiveHeadAttention(q, k, v, n, n, kDim, 0.3, [](int64_t i, int64_t j) { return j <= i; }));
  }
  return NaiveLinear(out, n, o_w, kHidden, kHeads * kDim);
}

Vec Rows(const Vec& x, int64_t begin, int64_t end) {
  return Vec(x.begin() + begin * kHidden, x.begin() + end * kHidden);
}

// Two sequences in one batch (one spanning two cache blocks), then a decode
// step of the longer one that reads its prefix back from the cache.
TEST(LayersPagedAttentionTest, BatchedPrefillThenDecodeMatchCausalAttention) {
  Weight wq = RandomWeight({kHeads * kDim, kHidden}, 1), wk = RandomWeight({kKvHeads * kDim, kHidden}, 2);
  Weight wv = RandomWeight({kKvHeads * kDim, kHidden}, 3), wo = RandomWeight({kHidden, kHeads * kDim}, 4);
  Checkpoint ckpt = MakeCheckpoint({{"sa.q_proj.weight", wq.tensor},
                                    {"sa.k_proj.weight", wk.tensor},
                                    {"sa.v_proj.weight", wv.tensor},
                                    {"sa.o_proj.weight", wo.tensor}});
  auto attn = PagedSelfAttention::Load(
      ckpt, "sa",
      {.hidden = kHidden, .num_heads = kHeads, .num_kv_heads = kKvHeads, .head_dim = kDim, .scale = 0.3f});
  ASSERT_TRUE(attn.ok()) << attn.status().ToString();
  ops::RopeParams rope{.inv_freq = ops::RopeInvFreq(kDim, 10000.0)};
  const std::vector<float> inv_freq = rope.inv_freq.ToFloats();
  KvCacheStorage cache = KvCacheStorage::Allocate(1, 4, kKvHeads, kDim, DType::kF32);

  constexpr int64_t kA = 5, kB = 18;
  Tensor xa = RandomTensor({kA, kHidden}, DType::kF32, 5), xb = RandomTensor({kB + 1, kHidden}, DType::kF32, 6);
  const Vec xav = ToDoubles(xa), xbv = ToDoubles(xb);
  const Vec qkv_w = [&] {
    Vec w = wq.values;
    w.insert(w.end(), wk.values.begin(), wk.values.end());
    w.insert(w.end(), wv.values.begin(), wv.values.end());
    return w;
  }();
  const int32_t table_a[] = {2}, table_b[] = {0, 3};

  // Step 1: a's 5 tokens and b's first 18, stacked.
  std::vector<float> rows = xa.ToFloats();
  const std::vector<float> b_rows = xb.Slice(0, 0, kB).ToFloats();
  rows.insert(rows.end(), b_rows.begin(), b_rows.end());
  Tensor x1 = Tensor::FromFloats(rows, {kA + kB, kHidden});
  Tensor pos1 = Tensor::Empty({kA + kB}, DType::kI32);
  for (int64_t i = 0; i < kA + kB; ++i) pos1.data<int32_t>()[i] = static_cast<int32_t>(i < kA ? i : i - kA);
  const ops::PagedSequence step1[] = {{.num_queries = kA, .start_position = 0, .block_table = table_a},
                                      {.num_queries = kB, .start_position = 0, .block_table = table_b}};
  Tensor y1 = attn->Forward(x1, {.positions = &pos1, .rope = &rope, .sequences = step1}, cache.view.k[0],
                            cache.view.v[0]);
  const Vec ref_a = NaiveCausalSequence(xav, kA, qkv_w, wo.values, inv_freq);
  const Vec ref_b = NaiveCausalSequence(xbv, kB + 1, qkv_w, wo.values, inv_freq);
  EXPECT_LE(RelError(y1.Slice(0, 0, kA), ref_a), 5e-3);
  EXPECT_LE(RelError(y1.Slice(0, kA, kA + kB), Rows(ref_b, 0, kB)), 5e-3);

  // Step 2: b's next token, its prefix read from the cache.
  Tensor pos2 = Tensor::Empty({1}, DType::kI32);
  pos2.data<int32_t>()[0] = static_cast<int32_t>(kB);
  const ops::PagedSequence step2[] = {{.num_queries = 1, .start_position = kB, .block_table = table_b}};
  Tensor y2 = attn->Forward(xb.Slice(0, kB, kB + 1).Contiguous(), {.positions = &pos2, .rope = &rope, .sequences = step2},
                            cache.view.k[0], cache.view.v[0]);
  EXPECT_LE(RelError(y2, Rows(ref_b, kB, kB + 1)), 5e-3);
}

}  // namespace
}  // namespace omni::models::layers
