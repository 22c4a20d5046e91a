#include "models/siglip_tatok/image_processor.h"

#include <array>

#include "media/image_resize.h"

namespace omni::models {

Tensor PreprocessTaTokImage(const media::Image& image, const TaTokImageProcessorConfig& config) {
  const int s = static_cast<int>(config.size);
  const media::Image resized = media::Resize(image, s, s);
  std::array<float, 256> lut;
  // As the reference: x / 255 in f32, then (x - mean) / std in f32.
  for (int v = 0; v < 256; ++v) lut[v] = (static_cast<float>(v) / 255.f - config.mean) / config.std;
  Tensor out = Tensor::Empty({3, config.size, config.size}, DType::kF32);
  float* dst = out.data<float>();
  const size_t plane = static_cast<size_t>(s) * s;
  for (size_t i = 0; i < plane; ++i)
    for (int c = 0; c < 3; ++c) dst[c * plane + i] = lut[resized.rgb[i * 3 + c]];
  return out;
}

}  // namespace omni::models
