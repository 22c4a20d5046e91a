#include "models/qwen25_vit/video_processor.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/core.h>

#include "core/check.h"

namespace omni::models {
namespace {

// PyTorch's antialiased cubic filter (UpSampleKernel.cpp,
// HelperInterpCubic::aa_filter): Keys' cubic with a = -0.5, as PIL's, in the
// float arithmetic of the float kernel.
float CubicAa(float x) {
  constexpr float a = -0.5f;
  x = std::fabs(x);
  if (x < 1.0f) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2.0f) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0f;
}

// One output index's taps: source positions [first, first + weights.size()).
struct Taps {
  int64_t first = 0;
  std::vector<float> weights;
};

// _compute_indices_min_size_weights_aa for scalar_t = float, with its mixed
// float/double expressions kept: they decide the last bit of a weight.
std::vector<Taps> ComputeTaps(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float support = scale >= 1.0f ? static_cast<float>(2.0 * scale) : 2.0f;
  const int64_t max_taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  const float invscale = scale >= 1.0f ? static_cast<float>(1.0 / scale) : 1.0f;
  std::vector<Taps> taps(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float center = static_cast<float>(scale * (i + 0.5));
    const int64_t xmin = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t xsize =
        std::clamp<int64_t>(std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in) - xmin, 0, max_taps);
    // The support is at least 2 and the center inside [0, in]: never empty.
    OMNI_CHECK(xsize > 0) << "resampling " << in << " to " << out << " left output " << i << " no source";
    Taps& t = taps[static_cast<size_t>(i)];
    t.first = xmin;
    t.weights.resize(static_cast<size_t>(xsize));
    float total = 0.0f;
    for (int64_t j = 0; j < xsize; ++j) {
      const float offset = static_cast<float>(j + xmin) - center;
      const float w = CubicAa(static_cast<float>((offset + 0.5) * invscale));
      t.weights[static_cast<size_t>(j)] = w;
      total += w;
    }
    if (total != 0.0f) {
      for (float& w : t.weights) w /= total;
    }
  }
  return taps;
}

// The passes form each sum as the kernel does: the first product, then each
// further product added in order, in float.

// Along rows of interleaved RGB: `rows` rows of `in_width` pixels ->
// rows of taps.size() pixels.
void HorizontalPass(const float* src, int64_t rows, int64_t in_width, const std::vector<Taps>& taps, float* dst) {
  const int64_t out_width = std::ssize(taps);
  for (int64_t y = 0; y < rows; ++y) {
    const float* line = src + y * in_width * 3;
    float* out = dst + y * out_width * 3;
    for (const Taps& t : taps) {
      const float* p = line + t.first * 3;
      float r = p[0] * t.weights[0], g = p[1] * t.weights[0], b = p[2] * t.weights[0];
      for (size_t j = 1; j < t.weights.size(); ++j) {
        const float* q = p + j * 3;
        r += q[0] * t.weights[j];
        g += q[1] * t.weights[j];
        b += q[2] * t.weights[j];
      }
      *out++ = r;
      *out++ = g;
      *out++ = b;
    }
  }
}

// Along columns: each output row from the source rows of its taps, a whole
// row (`row_floats` values) at a time.
void VerticalPass(const float* src, int64_t row_floats, const std::vector<Taps>& taps, float* dst) {
  for (size_t i = 0; i < taps.size(); ++i) {
    const Taps& t = taps[i];
    float* out = dst + static_cast<int64_t>(i) * row_floats;
    const float* first = src + t.first * row_floats;
    for (int64_t x = 0; x < row_floats; ++x) out[x] = first[x] * t.weights[0];
    for (size_t j = 1; j < t.weights.size(); ++j) {
      const float* row = first + static_cast<int64_t>(j) * row_floats;
      const float w = t.weights[j];
      for (int64_t x = 0; x < row_floats; ++x) out[x] += row[x] * w;
    }
  }
}

}  // namespace

int64_t VideoFrameMaxPixels(int64_t num_frames, const Qwen2VlVideoProcessorConfig& video) {
  constexpr int64_t kFrameFactor = 2;  // FRAME_FACTOR
  const double frames = static_cast<double>(std::max<int64_t>(num_frames, 1));
  const double per_frame = static_cast<double>(video.total_pixels) / frames * kFrameFactor;
  const double floor_pixels = static_cast<double>(static_cast<int64_t>(static_cast<double>(video.min_pixels) * 1.05));
  const double bound = std::max(std::min(static_cast<double>(video.max_pixels), per_frame), floor_pixels);
  return static_cast<int64_t>(std::floor(std::min(static_cast<double>(video.requested_max_pixels), bound)));
}

StatusOr<std::pair<int64_t, int64_t>> VideoFrameSize(int64_t height, int64_t width, int64_t num_frames,
                                                      const Qwen2VlImageProcessorConfig& image,
                                                      const Qwen2VlVideoProcessorConfig& video) {
  Qwen2VlImageProcessorConfig bounds = image;
  bounds.min_pixels = video.min_pixels;
  bounds.max_pixels = VideoFrameMaxPixels(num_frames, video);
  return SmartResize(height, width, bounds);
}

media::Image ResizeBicubicAntialias(const media::Image& image, int width, int height) {
  OMNI_CHECK(width >= 1 && height >= 1 && image.width >= 1 && image.height >= 1) << "resize to an empty size";
  const int64_t iw = image.width, ih = image.height, ow = width, oh = height;
  // Each channel is resized on its own as the NCHW tensor's planes are; the
  // pixels stay interleaved here, which changes no sum.
  std::vector<float> pixels(image.rgb.begin(), image.rgb.end());  // [ih][iw][3]
  // The horizontal pass first, each pass only where the size changes.
  int64_t cw = iw;
  if (ow != iw) {
    std::vector<float> next(static_cast<size_t>(ih * ow * 3));
    HorizontalPass(pixels.data(), ih, iw, ComputeTaps(iw, ow), next.data());
    pixels = std::move(next);
    cw = ow;
  }
  if (oh != ih) {
    std::vector<float> next(static_cast<size_t>(oh * cw * 3));
    VerticalPass(pixels.data(), cw * 3, ComputeTaps(ih, oh), next.data());
    pixels = std::move(next);
  }
  // clamp(0, 255), torch.round (half to even), uint8.
  media::Image out{.width = width, .height = height, .rgb = std::vector<uint8_t>(pixels.size())};
  for (size_t i = 0; i < pixels.size(); ++i) {
    out.rgb[i] = static_cast<uint8_t>(std::nearbyint(std::clamp(pixels[i], 0.0f, 255.0f)));
  }
  return out;
}

StatusOr<VisionPatches> PatchifyVideoFrames(std::span<const media::Image> frames,
                                            const Qwen2VlImageProcessorConfig& config) {
  if (frames.empty()) return InvalidArgument("a video needs at least one frame");
  const int64_t p = config.patch_size, tp = config.temporal_patch_size, m = config.merge_size;
  const int64_t rh = frames[0].height, rw = frames[0].width;
  if (rh <= 0 || rw <= 0 || rh % (p * m) != 0 || rw % (p * m) != 0) {
    return InvalidArgument(fmt::format("video frames of {}x{} are not a multiple of {} on each side", rw, rh, p * m));
  }
  for (const media::Image& f : frames) {
    if (f.width != rw || f.height != rh) {
      return InvalidArgument(fmt::format("video frames differ in size ({}x{} and {}x{})", rw, rh, f.width, f.height));
    }
  }
  const int64_t n = std::ssize(frames);
  VisionPatches out;
  out.grid_t = (n + tp - 1) / tp;
  out.grid_h = rh / p;
  out.grid_w = rw / p;
  out.resized_height = rh;
  out.resized_width = rw;
  const int64_t row_size = 3 * tp * p * p;
  out.pixel_values = Tensor::Empty({out.grid_t * out.grid_h * out.grid_w, row_size}, DType::kF32);
  // transformers' fused rescale and normalise: (x - mean * 255) / (std * 255)
  // in f32, mean * (1 / rescale_factor) formed in f32 too.
  std::array<float, 256 * 3> lut;
  for (int c = 0; c < 3; ++c) {
    const float mean = config.image_mean[c] * 255.0f, std = config.image_std[c] * 255.0f;
    for (int v = 0; v < 256; ++v) lut[c * 256 + v] = (static_cast<float>(v) - mean) / std;
  }
  float* dst = out.pixel_values.data<float>();
  for (int64_t pair = 0; pair < out.grid_t; ++pair) {
    // The reference pads an odd count by repeating the last frame.
    std::vector<const media::Image*> group(static_cast<size_t>(tp));
    for (int64_t t = 0; t < tp; ++t) {
      group[static_cast<size_t>(t)] = &frames[static_cast<size_t>(std::min(pair * tp + t, n - 1))];
    }
    for (int64_t bh = 0; bh < out.grid_h / m; ++bh)
      for (int64_t bw = 0; bw < out.grid_w / m; ++bw)
        for (int64_t sh = 0; sh < m; ++sh)
          for (int64_t sw = 0; sw < m; ++sw) {
            const int64_t y0 = (bh * m + sh) * p, x0 = (bw * m + sw) * p;
            for (int64_t c = 0; c < 3; ++c)
              for (int64_t t = 0; t < tp; ++t)
                for (int64_t y = 0; y < p; ++y)
                  for (int64_t x = 0; x < p; ++x)
                    *dst++ = lut[c * 256 + group[static_cast<size_t>(t)]->Pixel(static_cast<int>(x0 + x),
                                                                                   static_cast<int>(y0 + y))[c]];
          }
  }
  return out;
}

}  // namespace omni::models
