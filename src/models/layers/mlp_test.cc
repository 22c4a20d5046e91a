#include "models/layers/mlp.h"

#include <gtest/gtest.h>

#include "models/layers/test_util.h"

namespace omni::models::layers {
namespace {

using namespace testing;

constexpr int64_t kTokens = 6, kHidden = 32, kInter = 80;

TEST(LayersMlpTest, GatedMlpIsDownOfSiluGateTimesUp) {
  Weight gate = RandomWeight({kInter, kHidden}, 1), up = RandomWeight({kInter, kHidden}, 2);
  Weight down = RandomWeight({kHidden, kInter}, 3);
  Checkpoint ckpt = MakeCheckpoint(
      {{"mlp.gate_proj.weight", gate.tensor}, {"mlp.up_proj.weight", up.tensor}, {"mlp.down_proj.weight", down.tensor}});
  auto mlp = GatedMlp::Load(ckpt, "mlp", {.hidden = kHidden, .intermediate = kInter});
  ASSERT_TRUE(mlp.ok()) << mlp.status().ToString();
  Tensor x = RandomTensor({kTokens, kHidden}, DType::kF32, 4);
  const Vec xv = ToDoubles(x);
  const Vec g = NaiveLinear(xv, kTokens, gate.values, kInter, kHidden);
  const Vec u = NaiveLinear(xv, kTokens, up.values, kInter, kHidden);
  Vec act(g.size());
  for (size_t i = 0; i < act.size(); ++i) act[i] = NaiveSilu(g[i]) * u[i];
  Tensor y = mlp->Forward(x);
  EXPECT_EQ(y.shape(), (Shape{kTokens, kHidden}));
  EXPECT_EQ(y.dtype(), DType::kF32);
  EXPECT_LE(RelError(y, NaiveLinear(act, kTokens, down.values, kHidden, kInter)), 5e-3);
}

TEST(LayersMlpTest, PlainMlpIsFc2OfGeluOfFc1WithBiases) {
  Weight w1 = RandomWeight({kInter, kHidden}, 5), b1 = RandomWeight({kInter}, 6);
  Weight w2 = RandomWeight({kHidden, kInter}, 7), b2 = RandomWeight({kHidden}, 8);
  Checkpoint ckpt = MakeCheckpoint({{"blk.mlp.fc1.weight", w1.tensor},
                                    {"blk.mlp.fc1.bias", b1.tensor},
                                    {"blk.mlp.fc2.weight", w2.tensor},
                                    {"blk.mlp.fc2.bias", b2.tensor}});
  auto mlp = Mlp::Load(ckpt, "blk.mlp", {.hidden = kHidden, .intermediate = kInter});
  ASSERT_TRUE(mlp.ok()) << mlp.status().ToString();
  Tensor x = RandomTensor({kTokens, kHidden}, DType::kF32, 9);
  Vec h = NaiveLinear(ToDoubles(x), kTokens, w1.values, kInter, kHidden, b1.values);
  for (double& v : h) v = NaiveGelu(v);
  EXPECT_LE(RelError(mlp->Forward(x), NaiveLinear(h, kTokens, w2.values, kHidden, kInter, b2.values)), 5e-3);
}

TEST(LayersMlpTest, MissingProjectionIsAnError) {
  Checkpoint ckpt = MakeCheckpoint({{"mlp.fc1.weight", RandomWeight({kInter, kHidden}, 1).tensor}});
  auto mlp = Mlp::Load(ckpt, "mlp", {.hidden = kHidden, .intermediate = kInter, .bias = false});
  EXPECT_FALSE(mlp.ok());
}

}  // namespace
}  // namespace omni::models::layers
