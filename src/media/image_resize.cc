#include "media/image_resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/check.h"

namespace omni::media {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // PIL's fixed point for 8-bit images

double Bicubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double Triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// For each output index: the first input index, how many inputs, and their
// fixed-point weights (ksize per output, zero-padded).
struct Coefficients {
  int ksize = 0;
  std::vector<int> first, count;  // [out]
  std::vector<int32_t> weights;   // [out][ksize]
};

Coefficients Precompute(int in_size, int out_size, ResampleFilter filter) {
  const double support_base = filter == ResampleFilter::kBicubic ? 2.0 : 1.0;
  double (*fn)(double) = filter == ResampleFilter::kBicubic ? Bicubic : Triangle;
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = support_base * filter_scale;
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.weights.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> k(c.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filter_scale;
    // PIL truncates toward zero, then clamps.
    int xmin = static_cast<int>(center - support + 0.5);
    xmin = std::max(xmin, 0);
    int xmax = static_cast<int>(center + support + 0.5);
    xmax = std::min(xmax, in_size) - xmin;
    double total = 0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = fn((x + xmin - center + 0.5) * ss);
      total += k[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double w = total != 0.0 ? k[x] / total : k[x];
      const double fixed = w * (1 << kPrecisionBits);
      c.weights[static_cast<size_t>(xx) * c.ksize + x] = static_cast<int32_t>(w < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    c.first[xx] = xmin;
    c.count[xx] = xmax;
  }
  return c;
}

uint8_t Clip8(int32_t v) {
  v >>= kPrecisionBits;  // arithmetic: negative sums clamp to 0
  return static_cast<uint8_t>(std::clamp(v, 0, 255));
}

// rows [row0, row0 + rows) of `in`, resampled across to c's output width.
Image Horizontal(const Image& in, int row0, int rows, const Coefficients& c, int out_width) {
  Image out;
  out.width = out_width;
  out.height = rows;
  out.rgb.resize(static_cast<size_t>(out_width) * rows * 3);
  for (int y = 0; y < rows; ++y) {
    const uint8_t* src = in.rgb.data() + static_cast<size_t>(row0 + y) * in.width * 3;
    uint8_t* dst = out.rgb.data() + static_cast<size_t>(y) * out_width * 3;
    for (int xx = 0; xx < out_width; ++xx) {
      const int32_t* k = &c.weights[static_cast<size_t>(xx) * c.ksize];
      const uint8_t* p = src + static_cast<size_t>(c.first[xx]) * 3;
      int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      for (int x = 0; x < c.count[xx]; ++x) {
        s0 += p[3 * x] * k[x];
        s1 += p[3 * x + 1] * k[x];
        s2 += p[3 * x + 2] * k[x];
      }
      dst[3 * xx] = Clip8(s0), dst[3 * xx + 1] = Clip8(s1), dst[3 * xx + 2] = Clip8(s2);
    }
  }
  return out;
}

// Down the columns; c's first indices are relative to in's first row.
Image Vertical(const Image& in, const Coefficients& c, int row_shift, int out_height) {
  Image out;
  out.width = in.width;
  out.height = out_height;
  out.rgb.resize(static_cast<size_t>(in.width) * out_height * 3);
  const size_t stride = static_cast<size_t>(in.width) * 3;
  for (int yy = 0; yy < out_height; ++yy) {
    const int32_t* k = &c.weights[static_cast<size_t>(yy) * c.ksize];
    const uint8_t* src = in.rgb.data() + static_cast<size_t>(c.first[yy] - row_shift) * stride;
    uint8_t* dst = out.rgb.data() + static_cast<size_t>(yy) * stride;
    for (size_t i = 0; i < stride; ++i) {
      int32_t s = 1 << (kPrecisionBits - 1);
      for (int y = 0; y < c.count[yy]; ++y) s += src[y * stride + i] * k[y];
      dst[i] = Clip8(s);
    }
  }
  return out;
}

}  // namespace

Image Resize(const Image& image, int width, int height, ResampleFilter filter) {
  OMNI_CHECK(width >= 1 && height >= 1 && image.width >= 1 && image.height >= 1)
      << "resize " << image.width << "x" << image.height << " to " << width << "x" << height;
  if (width == image.width && height == image.height) return image;  // PIL returns a copy
  const Coefficients horizontal = Precompute(image.width, width, filter);
  const Coefficients vertical = Precompute(image.height, height, filter);
  const bool need_horizontal = width != image.width, need_vertical = height != image.height;
  if (!need_horizontal) return Vertical(image, vertical, 0, height);
  // Only the source rows the vertical pass reads go through the horizontal one.
  const int first_row = vertical.first[0];
  const int last_row = vertical.first[height - 1] + vertical.count[height - 1];
  Image across = Horizontal(image, need_vertical ? first_row : 0, need_vertical ? last_row - first_row : image.height,
                            horizontal, width);
  if (!need_vertical) return across;
  return Vertical(across, vertical, first_row, height);
}

}  // namespace omni::media
