#include "models/layers/patch_embed.h"

#include <cstring>

#include "models/layers/weights.h"

namespace omni::models::layers {

StatusOr<PatchEmbedding> PatchEmbedding::Load(const Checkpoint& ckpt, std::string_view prefix,
                                              const PatchEmbeddingConfig& c) {
  if (c.in_channels <= 0 || c.patch_size <= 0 || c.temporal_patch <= 0 || c.hidden <= 0) {
    return InvalidArgument("patch embedding: sizes must be positive");
  }
  const int64_t p = c.patch_size, t = c.temporal_patch;
  const std::string name = WeightName(WeightName(prefix, c.name), "weight");
  const Shape conv_shape = t == 1 ? Shape{c.hidden, c.in_channels, p, p} : Shape{c.hidden, c.in_channels, t, p, p};
  PatchEmbedding embed;
  embed.patch_dim = c.in_channels * t * p * p;
  OMNI_ASSIGN_OR_RETURN(Tensor stored, ckpt.Get(name));
  const Shape flat_shape = {c.hidden, embed.patch_dim};
  const Shape& want = stored.rank() == 2 ? flat_shape : conv_shape;
  OMNI_ASSIGN_OR_RETURN(Tensor w, LoadFloatWeight(ckpt, name, want));
  Tensor bias;
  if (c.bias) {
    OMNI_ASSIGN_OR_RETURN(bias, LoadVector(ckpt, WeightName(WeightName(prefix, c.name), "bias"), c.hidden));
  }
  embed.proj = ops::Linear(ToBf16(w).Contiguous().Reshape(flat_shape), bias);
  return embed;
}

Tensor PatchEmbedding::Forward(const Tensor& patches) const {
  OMNI_CHECK(patches.rank() == 2 && patches.dim(1) == patch_dim)
      << "patches must be [N, " << patch_dim << "]: " << patches.DebugString();
  return proj.Forward(patches, DType::kF32);
}

Tensor PatchEmbedding::Patchify(const Tensor& image, int64_t patch_size) {
  const int64_t p = patch_size;
  OMNI_CHECK(image.rank() == 3 && p > 0 && image.dim(1) % p == 0 && image.dim(2) % p == 0)
      << "image [C, H, W] with H, W multiples of " << p << ": " << image.DebugString();
  const Tensor src = image.Contiguous();
  const int64_t c = src.dim(0), h = src.dim(1), w = src.dim(2);
  const int64_t rows = h / p, cols = w / p;
  Tensor out = Tensor::Empty({rows * cols, c * p * p}, src.dtype());
  const size_t elem = DTypeSize(src.dtype());
  const auto* from = static_cast<const uint8_t*>(src.raw_data());
  auto* to = static_cast<uint8_t*>(out.raw_data());
  // Each patch row is C * p runs of p adjacent pixels.
  for (int64_t py = 0; py < rows; ++py) {
    for (int64_t px = 0; px < cols; ++px) {
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t ky = 0; ky < p; ++ky) {
          const int64_t src_index = (ch * h + py * p + ky) * w + px * p;
          std::memcpy(to, from + src_index * elem, p * elem);
          to += p * elem;
        }
      }
    }
  }
  return out;
}

}  // namespace omni::models::layers
