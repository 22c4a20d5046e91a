// Resampling as PIL's Image.resize does it on 8-bit images, bit for bit:
// the processors of the reference models (Qwen2-VL's smart resize, TA-Tok's
// 384x384) resize with PIL, so matching its arithmetic is what makes our
// pixel values equal theirs.
//
// PIL's algorithm (Resample.c): separable convolution, horizontal pass first
// (over the source rows the vertical pass needs), then vertical; a filter
// widened by the scale when downsampling (antialiasing); per output pixel
// weights normalised to sum 1, then rounded to 22-bit fixed point; each pass
// rounds and clamps to 8 bits.
// Thread-safety: pure functions.
#pragma once

#include "media/image.h"

namespace omni::media {

enum class ResampleFilter {
  kBilinear,  // PIL's BILINEAR (triangle, support 1)
  kBicubic,   // PIL's BICUBIC (Keys cubic with a = -0.5, support 2), PIL's default
};

// `image` resized to width x height (both >= 1).
Image Resize(const Image& image, int width, int height, ResampleFilter filter = ResampleFilter::kBicubic);

}  // namespace omni::media
