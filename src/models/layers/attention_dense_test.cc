#include "models/layers/attention_dense.h"

#include <gtest/gtest.h>

#include "models/layers/test_util.h"
#include "ops/elementwise.h"

namespace omni::models::layers {
namespace {

using namespace testing;

constexpr int64_t kTokens = 7, kHidden = 32, kHeads = 4, kKvHeads = 2, kDim = 8;
constexpr int64_t kQkvWidth = (kHeads + 2 * kKvHeads) * kDim;

struct Reference {
  Vec qkv_w, qkv_b, o_w, o_b;
  Vec q_norm, k_norm;  // empty: no QK-norm
  double q_factor = 1.0;
  bool causal = false;
};

// The block's math in double, from x [T, hidden].
Vec NaiveDenseAttention(const Vec& x, const Reference& r) {
  const Vec qkv = NaiveLinear(x, kTokens, r.qkv_w, kQkvWidth, kHidden, r.qkv_b);
  Vec out(kTokens * kHeads * kDim);
  const double scale = 1.0 / std::sqrt(static_cast<double>(kDim));
  for (int64_t h = 0; h < kHeads; ++h) {
    const int64_t g = h / (kHeads / kKvHeads);
    Vec q = Head(qkv, kTokens, kQkvWidth, h, kDim);
    Vec k = Head(qkv, kTokens, kQkvWidth, kHeads + g, kDim);
    const Vec v = Head(qkv, kTokens, kQkvWidth, kHeads + kKvHeads + g, kDim);
    if (!r.q_norm.empty()) {
      q = NaiveRmsNorm(q, kDim, r.q_norm, 1e-6);
      k = NaiveRmsNorm(k, kDim, r.k_norm, 1e-6);
    }
    for (double& e : q) e *= r.q_factor;
    const bool causal = r.causal;
    SetHead(&out, kTokens, kHeads * kDim, h, kDim,
            NaiveHeadAttention(q, k, v, kTokens, kTokens, kDim, scale,
                               [causal](int64_t i, int64_t j) { return !causal || j <= i; }));
  }
  return NaiveLinear(out, kTokens, r.o_w, kHidden, kHeads * kDim, r.o_b);
}

Vec Concat(std::initializer_list<const Vec*> parts) {
  Vec out;
  for (const Vec* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

TEST(LayersDenseAttentionTest, SeparateProjectionsWithBiasesAndGqa) {
  Weight wq = RandomWeight({kHeads * kDim, kHidden}, 1), wk = RandomWeight({kKvHeads * kDim, kHidden}, 2);
  Weight wv = RandomWeight({kKvHeads * kDim, kHidden}, 3), wo = RandomWeight({kHidden, kHeads * kDim}, 4);
  Weight bq = RandomWeight({kHeads * kDim}, 5), bk = RandomWeight({kKvHeads * kDim}, 6);
  Weight bv = RandomWeight({kKvHeads * kDim}, 7), bo = RandomWeight({kHidden}, 8);
  Checkpoint ckpt = MakeCheckpoint({{"attn.q_proj.weight", wq.tensor}, {"attn.q_proj.bias", bq.tensor},
                                    {"attn.k_proj.weight", wk.tensor}, {"attn.k_proj.bias", bk.tensor},
                                    {"attn.v_proj.weight", wv.tensor}, {"attn.v_proj.bias", bv.tensor},
                                    {"attn.out_proj.weight", wo.tensor}, {"attn.out_proj.bias", bo.tensor}});
  auto attn = DenseAttention::Load(
      ckpt, "attn", {.hidden = kHidden, .num_heads = kHeads, .num_kv_heads = kKvHeads, .head_dim = kDim});
  ASSERT_TRUE(attn.ok()) << attn.status().ToString();
  Tensor x = RandomTensor({kTokens, kHidden}, DType::kF32, 9);
  Reference ref{.qkv_w = Concat({&wq.values, &wk.values, &wv.values}),
                .qkv_b = Concat({&bq.values, &bk.values, &bv.values}),
                .o_w = wo.values,
                .o_b = bo.values};
  Tensor y = attn->Forward(x);
  EXPECT_EQ(y.shape(), (Shape{kTokens, kHidden}));
  EXPECT_LE(RelError(y, NaiveDenseAttention(ToDoubles(x), ref)), 5e-3);
}

TEST(LayersDenseAttentionTest, FusedQkvWithRmsQkNormHookAndCausalMask) {
  Weight wqkv = RandomWeight({kQkvWidth, kHidden}, 11), wo = RandomWeight({kHidden, kHeads * kDim}, 12);
  Tensor qn = RandomTensor({kDim}, DType::kBF16, 13, 0.5f, 1.5f), kn = RandomTensor({kDim}, DType::kBF16, 14, 0.5f, 1.5f);
  Checkpoint ckpt = MakeCheckpoint({{"blk.qkv.weight", wqkv.tensor},
                                    {"blk.proj.weight", wo.tensor},
                                    {"blk.q_norm.weight", qn},
                                    {"blk.k_norm.weight", kn}});
  auto attn = DenseAttention::Load(ckpt, "blk",
                                   {.hidden = kHidden,
                                    .num_heads = kHeads,
                                    .num_kv_heads = kKvHeads,
                                    .head_dim = kDim,
                                    .bias = false,
                                    .qk_norm = QkNorm::kRmsNorm,
                                    .qkv_names = {"qkv"},
                                    .o_name = "proj"});
  ASSERT_TRUE(attn.ok()) << attn.status().ToString();
  DenseAttentionCall call;
  call.mask.causal = true;
  bool hook_saw_normed_heads = false;
  call.qk_hook = [&](Tensor* q, Tensor* k) {
    hook_saw_normed_heads = q->shape() == Shape{kTokens, kHeads, kDim} && k->shape() == Shape{kTokens, kKvHeads, kDim};
    *q = ops::Scale(*q, 0.5f);
  };
  Tensor x = RandomTensor({kTokens, kHidden}, DType::kF32, 15);
  Reference ref{.qkv_w = wqkv.values,
                .o_w = wo.values,
                .q_norm = ToDoubles(qn),
                .k_norm = ToDoubles(kn),
                .q_factor = 0.5,
                .causal = true};
  EXPECT_LE(RelError(attn->Forward(x, call), NaiveDenseAttention(ToDoubles(x), ref)), 5e-3);
  EXPECT_TRUE(hook_saw_normed_heads);
}

TEST(LayersDenseAttentionTest, BadHeadCountsAreAnError) {
  Checkpoint ckpt = MakeCheckpoint({{"a.qkv.weight", RandomWeight({kQkvWidth, kHidden}, 1).tensor}});
  EXPECT_FALSE(DenseAttention::Load(ckpt, "a", {.hidden = kHidden, .num_heads = 3, .num_kv_heads = 2, .head_dim = kDim})
                   .ok());
}

}  // namespace
}  // namespace omni::models::layers
