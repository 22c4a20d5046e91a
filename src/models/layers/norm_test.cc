#include "models/layers/norm.h"

#include <gtest/gtest.h>

#include "models/layers/test_util.h"

namespace omni::models::layers {
namespace {

using namespace testing;

constexpr int64_t kRows = 5, kDim = 48;

TEST(LayersNormTest, RmsNormLoadsItsWeightAndNormalises) {
  Weight w = RandomWeight({kDim}, 1);
  Checkpoint ckpt = MakeCheckpoint({{"blk.norm.weight", w.tensor}});
  auto norm = RmsNorm::Load(ckpt, "blk.norm", kDim, 1e-5f);
  ASSERT_TRUE(norm.ok()) << norm.status().ToString();
  Tensor x = RandomTensor({kRows, kDim}, DType::kF32, 2, -2.f, 2.f);
  EXPECT_LE(RelError(norm->Forward(x), NaiveRmsNorm(ToDoubles(x), kDim, w.values, 1e-5)), 1e-5);
}

TEST(LayersNormTest, AddResidualAndNormUpdatesTheStreamAndNormsIt) {
  Weight w = RandomWeight({kDim}, 3);
  Checkpoint ckpt = MakeCheckpoint({{"n.weight", w.tensor}});
  auto norm = RmsNorm::Load(ckpt, "n", kDim, 1e-6f);
  ASSERT_TRUE(norm.ok());
  Tensor h = RandomTensor({kRows, kDim}, DType::kF32, 4);
  Tensor delta = RandomTensor({kRows, kDim}, DType::kF32, 5);
  Vec sum = ToDoubles(h);
  const Vec d = ToDoubles(delta);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += 0.7 * d[i];
  Tensor normed = norm->AddResidualAndNorm(&h, delta, 0.7);
  EXPECT_LE(RelError(h, sum), 1e-6);
  EXPECT_LE(RelError(normed, NaiveRmsNorm(sum, kDim, w.values, 1e-6)), 1e-5);
}

TEST(LayersNormTest, LayerNormWithAndWithoutAffine) {
  Weight w = RandomWeight({kDim}, 6), b = RandomWeight({kDim}, 7);
  Checkpoint ckpt = MakeCheckpoint({{"ln.weight", w.tensor}, {"ln.bias", b.tensor}});
  Tensor x = RandomTensor({kRows, kDim}, DType::kF32, 8, -3.f, 1.f);
  auto affine = LayerNorm::Load(ckpt, "ln", kDim, 1e-5f);
  ASSERT_TRUE(affine.ok()) << affine.status().ToString();
  EXPECT_LE(RelError(affine->Forward(x), NaiveLayerNorm(ToDoubles(x), kDim, w.values, b.values, 1e-5)), 1e-5);

  auto plain = LayerNorm::Load(ckpt, "absent", kDim, 1e-6f, {.affine = false});
  ASSERT_TRUE(plain.ok());
  EXPECT_LE(RelError(plain->Forward(x), NaiveLayerNorm(ToDoubles(x), kDim, {}, {}, 1e-6)), 1e-5);

  Tensor h = x.Copy();
  Tensor delta = RandomTensor({kRows, kDim}, DType::kF32, 9);
  Vec sum = ToDoubles(x);
  const Vec d = ToDoubles(delta);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += d[i];
  EXPECT_LE(RelError(affine->AddResidualAndNorm(&h, delta), NaiveLayerNorm(sum, kDim, w.values, b.values, 1e-5)),
            1e-5);
}

TEST(LayersNormTest, WrongShapeOrMissingWeightIsAnError) {
  Checkpoint ckpt = MakeCheckpoint({{"n.weight", RandomWeight({kDim + 1}, 10).tensor}});
  EXPECT_FALSE(RmsNorm::Load(ckpt, "n", kDim, 1e-6f).ok());
  EXPECT_FALSE(LayerNorm::Load(ckpt, "n", kDim + 1, 1e-6f).ok());  // no n.bias
}

}  // namespace
}  // namespace omni::models::layers
