#include "models/qwen25_vit/image_processor.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "media/image_resize.h"

namespace omni::models {
namespace {

int64_t RoundHalfEven(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

}  // namespace

StatusOr<Qwen2VlImageProcessorConfig> ParseQwen2VlImageProcessorConfig(std::string_view json,
                                                                       std::string_view source) {
  Qwen2VlImageProcessorConfig c;
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(fmt::format("{}: not a JSON object", source));
  auto get_int = [&](const nlohmann::json& obj, const char* key, int64_t* out) -> Status {
    if (!obj.contains(key) || obj[key].is_null()) return Status::Ok();
    if (!obj[key].is_number_integer() || obj[key].get<int64_t>() <= 0) {
      return InvalidArgument(fmt::format("{}: {} must be a positive integer", source, key));
    }
    *out = obj[key].get<int64_t>();
    return Status::Ok();
  };
  auto get_triple = [&](const char* key, std::array<float, 3>* out) -> Status {
    if (!j.contains(key)) return Status::Ok();
    const auto& v = j[key];
    if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() || !v[2].is_number()) {
      return InvalidArgument(fmt::format("{}: {} must be 3 numbers", source, key));
    }
    for (int i = 0; i < 3; ++i) (*out)[i] = v[i].get<float>();
    return Status::Ok();
  };
  if (j.contains("size") && j["size"].is_object()) {
    OMNI_RETURN_IF_ERROR(get_int(j["size"], "shortest_edge", &c.min_pixels));
    OMNI_RETURN_IF_ERROR(get_int(j["size"], "longest_edge", &c.max_pixels));
  }
  OMNI_RETURN_IF_ERROR(get_int(j, "min_pixels", &c.min_pixels));
  OMNI_RETURN_IF_ERROR(get_int(j, "max_pixels", &c.max_pixels));
  OMNI_RETURN_IF_ERROR(get_int(j, "patch_size", &c.patch_size));
  OMNI_RETURN_IF_ERROR(get_int(j, "temporal_patch_size", &c.temporal_patch_size));
  OMNI_RETURN_IF_ERROR(get_int(j, "merge_size", &c.merge_size));
  OMNI_RETURN_IF_ERROR(get_triple("image_mean", &c.image_mean));
  OMNI_RETURN_IF_ERROR(get_triple("image_std", &c.image_std));
  if (c.min_pixels > c.max_pixels) {
    return InvalidArgument(fmt::format("{}: min_pixels {} is over max_pixels {}", source, c.min_pixels, c.max_pixels));
  }
  return c;
}

StatusOr<std::pair<int64_t, int64_t>> SmartResize(int64_t height, int64_t width,
                                                   const Qwen2VlImageProcessorConfig& config) {
  constexpr double kMaxRatio = 200;
  const int64_t factor = config.patch_size * config.merge_size;
  if (height <= 0 || width <= 0) return InvalidArgument("an image needs at least one pixel");
  const double ratio = static_cast<double>(std::max(height, width)) / std::min(height, width);
  if (ratio > kMaxRatio) {
    return InvalidArgument(fmt::format("the image is {}x{} pixels: its aspect ratio {:.0f}:1 is over the limit of "
                                       "200:1",
                                       width, height, ratio));
  }
  const double h = static_cast<double>(height), w = static_cast<double>(width), f = static_cast<double>(factor);
  int64_t h_bar = std::max(factor, RoundHalfEven(h / f) * factor);
  int64_t w_bar = std::max(factor, RoundHalfEven(w / f) * factor);
  if (h_bar * w_bar > config.max_pixels) {
    const double beta = std::sqrt(h * w / static_cast<double>(config.max_pixels));
    h_bar = static_cast<int64_t>(std::floor(h / beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::floor(w / beta / f)) * factor;
  } else if (h_bar * w_bar < config.min_pixels) {
    const double beta = std::sqrt(static_cast<double>(config.min_pixels) / (h * w));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  return std::make_pair(std::max(factor, h_bar), std::max(factor, w_bar));
}

StatusOr<VisionPatches> PreprocessImage(const media::Image& image, const Qwen2VlImageProcessorConfig& config) {
  OMNI_ASSIGN_OR_RETURN(auto size, SmartResize(image.height, image.width, config));
  const auto [rh, rw] = size;
  const media::Image resized = media::Resize(image, static_cast<int>(rw), static_cast<int>(rh));
  const int64_t p = config.patch_size, tp = config.temporal_patch_size, m = config.merge_size;
  VisionPatches out;
  out.grid_h = rh / p;
  out.grid_w = rw / p;
  out.resized_height = rh;
  out.resized_width = rw;
  const int64_t row_size = 3 * tp * p * p;
  out.pixel_values = Tensor::Empty({out.grid_h * out.grid_w, row_size}, DType::kF32);
  // As the reference: x * (1/255) in double rounded to f32 (numpy's rescale),
  // then (x - mean) / std in f32.
  std::array<float, 256 * 3> lut;
  for (int c = 0; c < 3; ++c)
    for (int v = 0; v < 256; ++v) {
      const float x = static_cast<float>(v * (1.0 / 255.0));
      lut[c * 256 + v] = (x - config.image_mean[c]) / config.image_std[c];
    }
  float* dst = out.pixel_values.data<float>();
  int64_t row = 0;
  for (int64_t bh = 0; bh < out.grid_h / m; ++bh)
    for (int64_t bw = 0; bw < out.grid_w / m; ++bw)
      for (int64_t sh = 0; sh < m; ++sh)
        for (int64_t sw = 0; sw < m; ++sw, ++row) {
          const int64_t y0 = (bh * m + sh) * p, x0 = (bw * m + sw) * p;
          float* r = dst + row * row_size;
          for (int64_t c = 0; c < 3; ++c)
            for (int64_t t = 0; t < tp; ++t)  // one image: every frame of the patch is the same
              for (int64_t y = 0; y < p; ++y)
                for (int64_t x = 0; x < p; ++x)
                  *r++ = lut[c * 256 + resized.Pixel(static_cast<int>(x0 + x), static_cast<int>(y0 + y))[c]];
        }
  return out;
}

}  // namespace omni::models
