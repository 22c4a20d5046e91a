#include "models/layers/conv_stem.h"

#include <gtest/gtest.h>

#include "models/layers/test_util.h"

namespace omni::models::layers {
namespace {

using namespace testing;

// nn.Conv1d of x [C_in, T] with weight [O, C_in, k], the input rounded to bf16.
Vec NaiveConv1d(const Vec& x, int64_t c_in, int64_t t, const Vec& w, int64_t out_c, int64_t k, const Vec& b,
                int64_t stride, int64_t pad, int64_t* t_out) {
  *t_out = (t + 2 * pad - k) / stride + 1;
  Vec y(out_c * *t_out);
  for (int64_t o = 0; o < out_c; ++o) {
    for (int64_t i = 0; i < *t_out; ++i) {
      double acc = b[o];
      for (int64_t c = 0; c < c_in; ++c) {
        for (int64_t j = 0; j < k; ++j) {
          const int64_t src = i * stride - pad + j;
          if (src >= 0 && src < t) acc += Bf16(x[c * t + src]) * w[(o * c_in + c) * k + j];
        }
      }
      y[o * *t_out + i] = acc;
    }
  }
  return y;
}

// Whisper's front: Conv1d(k3, p1), GELU, Conv1d(k3, s2, p1), GELU.
TEST(LayersConvStemTest, Conv1dStackWithGelu) {
  constexpr int64_t kMel = 6, kT = 11, kWidth = 10;
  Weight w1 = RandomWeight({kWidth, kMel, 3}, 1), b1 = RandomWeight({kWidth}, 2);
  Weight w2 = RandomWeight({kWidth, kWidth, 3}, 3), b2 = RandomWeight({kWidth}, 4);
  Checkpoint ckpt = MakeCheckpoint({{"enc.conv1.weight", w1.tensor}, {"enc.conv1.bias", b1.tensor},
                                    {"enc.conv2.weight", w2.tensor}, {"enc.conv2.bias", b2.tensor}});
  const ConvStageSpec specs[] = {{.name = "conv1", .params = {.padding = {1}}},
                                 {.name = "conv2", .params = {.stride = {2}, .padding = {1}}}};
  auto stem = ConvStem::Load(ckpt, "enc", 1, specs);
  ASSERT_TRUE(stem.ok()) << stem.status().ToString();
  Tensor x = RandomTensor({1, kMel, kT}, DType::kF32, 5);
  int64_t t1 = 0, t2 = 0;
  Vec h = NaiveConv1d(ToDoubles(x), kMel, kT, w1.values, kWidth, 3, b1.values, 1, 1, &t1);
  for (double& v : h) v = NaiveGelu(v);
  Vec y = NaiveConv1d(h, kWidth, t1, w2.values, kWidth, 3, b2.values, 2, 1, &t2);
  for (double& v : y) v = NaiveGelu(v);
  Tensor got = stem->Forward(x);
  EXPECT_EQ(got.shape(), (Shape{1, kWidth, t2}));
  EXPECT_EQ(stem->OutputShape(x.shape()), got.shape());
  EXPECT_LE(RelError(got, y), 5e-3);
}

TEST(LayersConvStemTest, Conv2dStageWithSilu) {
  constexpr int64_t kCin = 2, kCout = 4, kH = 5, kW = 6;
  Weight w = RandomWeight({kCout, kCin, 3, 3}, 6), b = RandomWeight({kCout}, 7);
  Checkpoint ckpt = MakeCheckpoint({{"stem.weight", w.tensor}, {"stem.bias", b.tensor}});
  // An empty stage name reads "<prefix>.weight".
  const ConvStageSpec specs[] = {{.name = "", .params = {.stride = {2}}, .activation = Activation::kSilu}};
  auto stem = ConvStem::Load(ckpt, "stem", 2, specs);
  ASSERT_TRUE(stem.ok()) << stem.status().ToString();
  Tensor x = RandomTensor({1, kCin, kH, kW}, DType::kF32, 8);
  const Vec xv = ToDoubles(x);
  const int64_t oh = (kH - 3) / 2 + 1, ow = (kW - 3) / 2 + 1;
  Vec y(kCout * oh * ow);
  for (int64_t o = 0; o < kCout; ++o) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        double acc = b.values[o];
        for (int64_t c = 0; c < kCin; ++c) {
          for (int64_t ky = 0; ky < 3; ++ky) {
            for (int64_t kx = 0; kx < 3; ++kx) {
              acc += Bf16(xv[(c * kH + 2 * i + ky) * kW + 2 * j + kx]) * w.values[((o * kCin + c) * 3 + ky) * 3 + kx];
            }
          }
        }
        y[(o * oh + i) * ow + j] = NaiveSilu(acc);
      }
    }
  }
  EXPECT_LE(RelError(stem->Forward(x), y), 5e-3);
}

TEST(LayersConvStemTest, ChannelMismatchBetweenStagesIsAnError) {
  Checkpoint ckpt = MakeCheckpoint({{"s.a.weight", RandomWeight({8, 3, 3}, 1).tensor},
                                    {"s.b.weight", RandomWeight({8, 6, 3}, 2).tensor}});
  const ConvStageSpec specs[] = {{.name = "a", .bias = false}, {.name = "b", .bias = false}};
  EXPECT_FALSE(ConvStem::Load(ckpt, "s", 1, specs).ok());
}

}  // namespace
}  // namespace omni::models::layers
