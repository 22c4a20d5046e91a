#include "models/layers/patch_embed.h"

#include <gtest/gtest.h>

#include "models/layers/test_util.h"

namespace omni::models::layers {
namespace {

using namespace testing;

constexpr int64_t kC = 3, kH = 12, kW = 8, kP = 4, kHidden = 16;

// nn.Conv2d(kC, kHidden, kernel_size=kP, stride=kP) of image [C, H, W], as
// [patches in row-major order, hidden]; the input rounded to bf16 as the
// runtime's bf16 weights round it.
Vec NaivePatchConv(const Vec& image, const Vec& w, const Vec& b) {
  const int64_t rows = kH / kP, cols = kW / kP;
  Vec out(rows * cols * kHidden);
  for (int64_t py = 0; py < rows; ++py) {
    for (int64_t px = 0; px < cols; ++px) {
      for (int64_t o = 0; o < kHidden; ++o) {
        double acc = b[o];
        for (int64_t c = 0; c < kC; ++c) {
          for (int64_t ky = 0; ky < kP; ++ky) {
            for (int64_t kx = 0; kx < kP; ++kx) {
              const double pixel = image[(c * kH + py * kP + ky) * kW + px * kP + kx];
              acc += Bf16(pixel) * w[((o * kC + c) * kP + ky) * kP + kx];
            }
          }
        }
        out[(py * cols + px) * kHidden + o] = acc;
      }
    }
  }
  return out;
}

TEST(LayersPatchEmbeddingTest, OneGemmOverPatchesEqualsTheStridedConv) {
  Weight w = RandomWeight({kHidden, kC, kP, kP}, 1), b = RandomWeight({kHidden}, 2);
  Checkpoint ckpt = MakeCheckpoint({{"vit.patch_embed.proj.weight", w.tensor}, {"vit.patch_embed.proj.bias", b.tensor}});
  auto embed = PatchEmbedding::Load(ckpt, "vit.patch_embed",
                                    {.in_channels = kC, .patch_size = kP, .hidden = kHidden});
  ASSERT_TRUE(embed.ok()) << embed.status().ToString();
  EXPECT_EQ(embed->patch_dim, kC * kP * kP);
  Tensor image = RandomTensor({kC, kH, kW}, DType::kF32, 3);
  Tensor rows = PatchEmbedding::Patchify(image, kP);
  ASSERT_EQ(rows.shape(), (Shape{(kH / kP) * (kW / kP), kC * kP * kP}));
  Tensor tokens = embed->Forward(rows);
  EXPECT_EQ(tokens.shape(), (Shape{(kH / kP) * (kW / kP), kHidden}));
  EXPECT_LE(RelError(tokens, NaivePatchConv(ToDoubles(image), w.values, b.values)), 1e-4);
}

TEST(LayersPatchEmbeddingTest, PatchifyLaysOutChannelRowColumn) {
  std::vector<float> v(kC * kH * kW);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  Tensor rows = PatchEmbedding::Patchify(Tensor::FromFloats(v, {kC, kH, kW}), kP);
  const std::vector<float> got = rows.ToFloats();
  // Patch (1, 1), channel 2, pixel (3, 1) of the patch.
  const int64_t patch = 1 * (kW / kP) + 1, col = (2 * kP + 3) * kP + 1;
  EXPECT_EQ(got[patch * kC * kP * kP + col], static_cast<float>((2 * kH + kP + 3) * kW + kP + 1));
}

TEST(LayersPatchEmbeddingTest, FlatAndTemporalWeightsLoad) {
  Checkpoint ckpt = MakeCheckpoint({{"flat.proj.weight", RandomWeight({kHidden, kC * kP * kP}, 4).tensor},
                                    {"video.proj.weight", RandomWeight({kHidden, kC, 2, kP, kP}, 5).tensor}});
  auto flat = PatchEmbedding::Load(ckpt, "flat", {.in_channels = kC, .patch_size = kP, .hidden = kHidden, .bias = false});
  ASSERT_TRUE(flat.ok()) << flat.status().ToString();
  auto video = PatchEmbedding::Load(
      ckpt, "video", {.in_channels = kC, .patch_size = kP, .temporal_patch = 2, .hidden = kHidden, .bias = false});
  ASSERT_TRUE(video.ok()) << video.status().ToString();
  EXPECT_EQ(video->patch_dim, kC * 2 * kP * kP);
  EXPECT_FALSE(PatchEmbedding::Load(ckpt, "video", {.in_channels = kC, .patch_size = kP, .hidden = kHidden, .bias = false})
                   .ok());
}

}  // namespace
}  // namespace omni::models::layers
