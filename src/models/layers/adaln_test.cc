#include "models/layers/adaln.h"

#include <gtest/gtest.h>

#include "models/layers/test_util.h"

namespace omni::models::layers {
namespace {

using namespace testing;

constexpr int64_t kBatch = 2, kTokens = 3, kCond = 12, kHidden = 8, kChunks = 6;

TEST(LayersAdaLnTest, ChunksAreLinearOfSiluOfTheCondition) {
  Weight w = RandomWeight({kChunks * kHidden, kCond}, 1), b = RandomWeight({kChunks * kHidden}, 2);
  Checkpoint ckpt =
      MakeCheckpoint({{"blocks.0.adaLN_modulation.1.weight", w.tensor}, {"blocks.0.adaLN_modulation.1.bias", b.tensor}});
  auto mod = AdaLnModulation::Load(ckpt, "blocks.0.adaLN_modulation.1",
                                   {.cond_dim = kCond, .hidden = kHidden, .num_chunks = kChunks});
  ASSERT_TRUE(mod.ok()) << mod.status().ToString();
  Tensor c = RandomTensor({kBatch, kCond}, DType::kF32, 3, -3.f, 3.f);
  Vec act = ToDoubles(c);
  for (double& v : act) v = NaiveSilu(v);
  const Vec all = NaiveLinear(act, kBatch, w.values, kChunks * kHidden, kCond, b.values);
  const std::vector<Tensor> chunks = mod->Forward(c);
  ASSERT_EQ(chunks.size(), static_cast<size_t>(kChunks));
  for (int64_t i = 0; i < kChunks; ++i) {
    EXPECT_EQ(chunks[i].shape(), (Shape{kBatch, kHidden}));
    EXPECT_LE(RelError(chunks[i], Head(all, kBatch, kChunks * kHidden, i, kHidden)), 5e-3) << "chunk " << i;
  }
}

TEST(LayersAdaLnTest, ModulateAndGatedResidualBroadcastPerBatchItem) {
  Tensor x = RandomTensor({kBatch, kTokens, kHidden}, DType::kF32, 4);
  Tensor shift = RandomTensor({kBatch, kHidden}, DType::kF32, 5);
  Tensor scale = RandomTensor({kBatch, kHidden}, DType::kF32, 6);
  Tensor gate = RandomTensor({kBatch, kHidden}, DType::kF32, 7);
  Tensor y = RandomTensor({kBatch, kTokens, kHidden}, DType::kF32, 8);
  const Vec xv = ToDoubles(x), sh = ToDoubles(shift), sc = ToDoubles(scale), g = ToDoubles(gate), yv = ToDoubles(y);
  Vec modulated(xv.size()), gated(xv.size());
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t t = 0; t < kTokens; ++t) {
      for (int64_t i = 0; i < kHidden; ++i) {
        const int64_t at = (b * kTokens + t) * kHidden + i, v = b * kHidden + i;
        modulated[at] = xv[at] * (1.0 + sc[v]) + sh[v];
        gated[at] = xv[at] + g[v] * yv[at];
      }
    }
  }
  EXPECT_LE(RelError(Modulate(x, shift, scale), modulated), 1e-6);
  EXPECT_LE(RelError(GatedResidual(x, gate, y), gated), 1e-6);

  // One sequence: x [T, hidden] with [hidden] vectors.
  Tensor x2 = x.Slice(0, 0, 1).Contiguous().Reshape({kTokens, kHidden});
  Tensor shift2 = shift.Slice(0, 0, 1).Contiguous().Reshape({kHidden});
  Tensor scale2 = scale.Slice(0, 0, 1).Contiguous().Reshape({kHidden});
  EXPECT_LE(RelError(Modulate(x2, shift2, scale2), Vec(modulated.begin(), modulated.begin() + kTokens * kHidden)),
            1e-6);
}

}  // namespace
}  // namespace omni::models::layers
