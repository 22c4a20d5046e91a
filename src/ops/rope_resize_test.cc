#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ops/resize.h"
#include "ops/rope.h"
#include "ops/test_util.h"

namespace omni::ops {
namespace {

using testing::RandomTensor;
using testing::RelError;
using testing::Tolerance;
using testing::ToDoubles;

// Reference RoPE written from the HF formulas: cos/sin of pos * inv_freq,
// rotate_half for NeoX, (x0, x1) pairs for GPT-J; axis_of maps pair -> axis.
std::vector<double> RefRope(const Tensor& x, const std::vector<std::vector<int64_t>>& pos,
                            const std::vector<int>& axis_of, const std::vector<double>& inv, bool interleaved,
                            double scaling) {
  const int64_t t = x.dim(0), h = x.dim(1), d = x.dim(2), half = static_cast<int64_t>(inv.size());
  std::vector<double> xv = ToDoubles(x), out = xv;
  for (int64_t i = 0; i < t; ++i)
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t f = 0; f < half; ++f) {
        const double ang = pos[axis_of[f]][i] * inv[f], c = std::cos(ang) * scaling, s = std::sin(ang) * scaling;
        const int64_t a = interleaved ? 2 * f : f, b = interleaved ? 2 * f + 1 : f + half;
        const double x0 = xv[(i * h + hh) * d + a], x1 = xv[(i * h + hh) * d + b];
        out[(i * h + hh) * d + a] = x0 * c - x1 * s;
        out[(i * h + hh) * d + b] = x1 * c + x0 * s;
      }
  return out;
}

TEST(RopeTest, OneAxisNeoxAndInterleaved) {
  struct Case { int64_t t, h, d, rot; };
  const Case cases[] = {{1, 1, 2, 2}, {5, 3, 64, 64}, {9, 2, 10, 6}, {33, 4, 128, 64}};
  uint32_t seed = 1;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (const Case& c : cases)
      for (bool inter : {false, true}) {
        Tensor x = RandomTensor({c.t, c.h, c.d}, dt, seed++);
        std::vector<float> posf(c.t);
        for (int64_t i = 0; i < c.t; ++i) posf[i] = static_cast<float>(i * 37 + 3);  // up to ~1200
        Tensor pos = Tensor::FromFloats(posf, {c.t}, DType::kI64);
        RopeParams p;
        p.inv_freq = RopeInvFreq(c.rot, 10000.0);
        p.style = inter ? RopeStyle::kInterleaved : RopeStyle::kNeox;
        p.attention_scaling = 1.25f;
        std::vector<int64_t> pv(posf.begin(), posf.end());
        std::vector<double> inv = ToDoubles(p.inv_freq);
        std::vector<int> axis_of(c.rot / 2, 0);
        EXPECT_LE(RelError(ApplyRope(x, pos, p), RefRope(x, {pv}, axis_of, inv, inter, 1.25)), Tolerance(dt))
            << c.t << " " << c.d << " " << inter;
      }
}

TEST(RopeTest, MultiAxisSections) {
  const int64_t t = 12, h = 2, d = 32;
  const std::vector<int64_t> sections = {4, 6, 6};  // Qwen2-VL style, rot/2 = 16
  Tensor x = RandomTensor({t, h, d}, DType::kF32, 9);
  std::vector<std::vector<int64_t>> pos(3, std::vector<int64_t>(t));
  std::vector<float> flat;
  for (int a = 0; a < 3; ++a)
    for (int64_t i = 0; i < t; ++i) pos[a][i] = a == 0 ? 5 : (a == 1 ? i / 4 : i % 4) + 5;
  for (int a = 0; a < 3; ++a) flat.insert(flat.end(), pos[a].begin(), pos[a].end());
  Tensor pt = Tensor::FromFloats(flat, {3, t}, DType::kI32);
  std::vector<int> axis_of;
  for (int a = 0; a < 3; ++a) axis_of.insert(axis_of.end(), sections[a], a);
  for (bool inter : {false, true}) {
    RopeParams p;
    p.inv_freq = RopeInvFreq(d, 1e6);
    p.style = inter ? RopeStyle::kInterleaved : RopeStyle::kNeox;
    EXPECT_LE(RelError(ApplyMultiAxisRope(x, pt, sections, p), RefRope(x, pos, axis_of, ToDoubles(p.inv_freq), inter, 1)),
              1e-5);
  }
}

// PyTorch's upsample kernels, restated: one output pixel at a time.
double RefPixel(const std::vector<double>& img, int64_t ih, int64_t iw, int64_t oy, int64_t ox, int64_t oh,
                int64_t ow, bool bicubic) {
  auto coord = [](int64_t o, int64_t in, int64_t out) { return (o + 0.5) * in / static_cast<double>(out) - 0.5; };
  auto at = [&](int64_t y, int64_t x) {
    y = std::min(std::max<int64_t>(y, 0), ih - 1);
    x = std::min(std::max<int64_t>(x, 0), iw - 1);
    return img[y * iw + x];
  };
  double sy = coord(oy, ih, oh), sx = coord(ox, iw, ow);
  if (!bicubic) {
    sy = std::max(sy, 0.0), sx = std::max(sx, 0.0);
    const int64_t y0 = static_cast<int64_t>(sy), x0 = static_cast<int64_t>(sx);
    const double ly = sy - y0, lx = sx - x0;
    return (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x0 + 1)) + ly * ((1 - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1));
  }
  auto cubic = [](double x) {
    const double a = -0.75;
    x = std::abs(x);
    if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
  };
  const int64_t y0 = static_cast<int64_t>(std::floor(sy)), x0 = static_cast<int64_t>(std::floor(sx));
  double acc = 0;
  for (int64_t j = -1; j <= 2; ++j)
    for (int64_t i = -1; i <= 2; ++i) acc += cubic(sy - (y0 + j)) * cubic(sx - (x0 + i)) * at(y0 + j, x0 + i);
  return acc;
}

TEST(ResizeTest, BilinearAndBicubicMatchPyTorchFormulas) {
  struct Case { int64_t n, c, ih, iw, oh, ow; };
  const Case cases[] = {{1, 1, 1, 1, 3, 2}, {1, 2, 5, 7, 10, 14}, {2, 3, 16, 9, 7, 4}, {1, 1, 4, 4, 4, 4}, {1, 3, 6, 11, 13, 5}};
  uint32_t seed = 60;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (const Case& c : cases)
      for (bool bicubic : {false, true}) {
        Tensor x = RandomTensor({c.n, c.c, c.ih, c.iw}, dt, seed++);
        std::vector<double> xv = ToDoubles(x), ref;
        for (int64_t p = 0; p < c.n * c.c; ++p) {
          std::vector<double> img(xv.begin() + p * c.ih * c.iw, xv.begin() + (p + 1) * c.ih * c.iw);
          for (int64_t oy = 0; oy < c.oh; ++oy)
            for (int64_t ox = 0; ox < c.ow; ++ox) ref.push_back(RefPixel(img, c.ih, c.iw, oy, ox, c.oh, c.ow, bicubic));
        }
        Tensor y = Resize(x, c.oh, c.ow, bicubic ? ResizeMode::kBicubic : ResizeMode::kBilinear);
        EXPECT_LE(RelError(y, ref), Tolerance(dt)) << c.ih << "x" << c.iw << " -> " << c.oh << "x" << c.ow;
      }
}

TEST(ResizeTest, NearestMatchesHandComputedPyTorchIndices) {
  // x2 (the VAE upsampler) on a 2x3 plane, in both dtypes: each value fills a 2x2 block.
  for (DType dt : {DType::kF32, DType::kBF16}) {
    Tensor x = Tensor::FromFloats(std::vector<float>{1, 2, 3, 4, 5, 6}, {1, 1, 2, 3}, dt);
    const std::vector<float> want = {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3,  //
                                     4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6};
    Tensor y = Resize(x, 4, 6, ResizeMode::kNearest);
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 6}));
    EXPECT_EQ(y.ToFloats(), want);
  }
  // Rows 3 -> 5 (scale 0.6: sources 0 0 1 1 2) and columns 5 -> 3 (scale
  // 5/3: sources 0 1 3), over two planes.
  std::vector<float> xv(2 * 3 * 5);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i);
  Tensor y = Resize(Tensor::FromFloats(xv, {1, 2, 3, 5}), 5, 3, ResizeMode::kNearest);
  std::vector<float> want;
  for (int p = 0; p < 2; ++p)
    for (int sy : {0, 0, 1, 1, 2})
      for (int sx : {0, 1, 3}) want.push_back(static_cast<float>(p * 15 + sy * 5 + sx));
  EXPECT_EQ(y.ToFloats(), want);
  // 2 -> 82: 41 * (2 / 82.f) is just below 1 in float, so PyTorch (and this
  // op) take source 0 for output 41, where exact arithmetic gives 1.
  Tensor z = Resize(Tensor::FromFloats(std::vector<float>{7, 9}, {1, 1, 1, 2}), 1, 82, ResizeMode::kNearest);
  std::vector<float> zv = z.ToFloats();
  EXPECT_EQ(zv[41], 7.f);
  EXPECT_EQ(std::count(zv.begin(), zv.end(), 7.f), 42);
  EXPECT_EQ(zv[42], 9.f);
}

}  // namespace
}  // namespace omni::ops
