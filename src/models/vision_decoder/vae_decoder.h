// The vision decoder's VAE: the decoder half of diffusers' AutoencoderKL
// (0.32.2), from a `vae/` folder (config.json and
// diffusion_pytorch_model.safetensors, of which only `decoder.*` and
// `post_quant_conv.*` are read; the released file also holds the encoder).
// spec/omni-model.md, "Vision decoder details".
//
//   auto vae = VaeDecoder::Load(dir + "/vae");
//   Tensor image = vae->Decode(latents);           // [16, h, w] -> [3, 8h, 8w]
//   std::vector<uint8_t> rgb = ImageToRgb8(image);  // HWC bytes
//
// Forward: z = latents / scaling_factor + shift_factor; post_quant_conv (1x1,
// when the config has one); conv_in; mid block (resnet, attention, resnet);
// up blocks of layers_per_block + 1 resnets, each but the last followed by a
// nearest x2 upsample and a 3x3 conv; GroupNorm, SiLU, conv_out. Resnets are
// ResnetBlock2D (GroupNorm, SiLU, conv 3x3, twice; a 1x1 conv_shortcut when
// the channel count changes), every GroupNorm has eps 1e-6 and an affine.
// The mid attention is one head over all pixels, with a residual.
//
// Numerics: weights are packed bf16 at load; the input of every conv and
// linear is rounded to bf16 and accumulated in f32; norms, activations,
// attention and the activations between layers are f32.
//
// Thread-safety: immutable after Load; Decode is const and may run
// concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "models/activation_callback.h"
#include "tensor/tensor.h"

namespace omni::models {

// The decoder's part of a diffusers AutoencoderKL config.json. Absent keys
// take diffusers' defaults.
struct VaeDecoderConfig {
  std::vector<int64_t> block_out_channels = {64};  // per level, finest first
  int64_t layers_per_block = 1;                    // an up block has layers_per_block + 1 resnets
  int64_t norm_num_groups = 32;                    // divides every channel count
  int64_t latent_channels = 4;
  int64_t out_channels = 3;
  double scaling_factor = 0.18215;
  double shift_factor = 0.0;  // null in the file: 0
  bool mid_block_add_attention = true;
  bool use_post_quant_conv = true;

  // Output pixels per latent pixel along each side: 2^(levels - 1).
  int64_t upsampling_factor() const { return int64_t{1} << (block_out_channels.size() - 1); }
};

// Refuses (InvalidArgument naming `source` and the key) what this decoder
// does not implement: another _class_name, act_fn other than silu, an up
// block other than UpDecoderBlock2D, a count of up_block_types other than of
// block_out_channels, groups that do not divide a channel count, and
// non-positive sizes or scaling factor.
StatusOr<VaeDecoderConfig> ParseVaeDecoderConfig(std::string_view json, std::string_view source);

class VaeDecoder {
 public:
  // `vae_dir` holds config.json and diffusion_pytorch_model.safetensors.
  static StatusOr<VaeDecoder> Load(const std::string& vae_dir);
  VaeDecoder(VaeDecoder&&) noexcept;
  VaeDecoder& operator=(VaeDecoder&&) noexcept;
  ~VaeDecoder();

  // latents [latent_channels, h, w] f32 as the sampler leaves them (before
  // 1 / scaling_factor and the shift) -> image [out_channels, f h, f w] f32
  // with f = upsampling_factor(), nominally in [-1, 1] but not clamped.
  // `on_activation` sees "conv_in", "mid_block", "up_blocks.<i>" and
  // "conv_out" ([1, C, H, W]).
  Tensor Decode(const Tensor& latents, const ActivationCallback* on_activation = nullptr) const;

  const VaeDecoderConfig& config() const { return config_; }

 private:
  struct Weights;
  VaeDecoder(VaeDecoderConfig config, std::unique_ptr<Weights> weights);

  VaeDecoderConfig config_;
  std::unique_ptr<Weights> w_;
};

// image [3, H, W] f32 -> H * W * 3 bytes RGB (row-major HWC): clamp(x, -1, 1),
// (x + 1) / 2 * 255 in f32, truncated (numpy's astype(uint8)).
std::vector<uint8_t> ImageToRgb8(const Tensor& image);

}  // namespace omni::models
