#include "models/vision_decoder/vae_decoder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "modelfile/checkpoint.h"
#include "models/layers/attention_dense.h"
#include "models/layers/weights.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/norm.h"
#include "ops/resize.h"

namespace omni::models {
namespace {

using layers::LoadFloatWeight;
using layers::LoadVector;
using layers::ToBf16;

// diffusers builds every decoder GroupNorm with eps 1e-6 (resnet_eps, the
// attention's norm_eps, conv_norm_out).
constexpr float kNormEps = 1e-6f;

StatusOr<int64_t> IntAtLeast(const nlohmann::json& j, std::string_view source, const char* key, int64_t fallback,
                             int64_t min) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_number_integer() || j[key].get<int64_t>() < min) {
    return InvalidArgument(fmt::format("{}: {} must be an integer >= {}", source, key, min));
  }
  return j[key].get<int64_t>();
}

StatusOr<bool> Bool(const nlohmann::json& j, std::string_view source, const char* key, bool fallback) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_boolean()) return InvalidArgument(fmt::format("{}: {} must be true or false", source, key));
  return j[key].get<bool>();
}

// The keys that decide the decoder's structure: what it is and which blocks it has.
Status ParseStructure(const nlohmann::json& j, std::string_view source, VaeDecoderConfig* c) {
  if (j.contains("_class_name") && j["_class_name"] != "AutoencoderKL") {
    return InvalidArgument(fmt::format("{}: _class_name {} is not AutoencoderKL", source, j["_class_name"].dump()));
  }
  if (j.contains("act_fn") && j["act_fn"] != "silu") {
    return InvalidArgument(fmt::format("{}: act_fn {} is not supported (silu only)", source, j["act_fn"].dump()));
  }
  if (j.contains("block_out_channels")) {
    const nlohmann::json& ch = j["block_out_channels"];
    if (!ch.is_array() || ch.empty() ||
        !std::all_of(ch.begin(), ch.end(), [](const auto& v) { return v.is_number_integer() && v > 0; })) {
      return InvalidArgument(
          fmt::format("{}: block_out_channels must be a non-empty list of positive integers", source));
    }
    c->block_out_channels = ch.get<std::vector<int64_t>>();
  }
  // diffusers' default is one UpDecoderBlock2D; the decoder builds one up
  // block per entry, so the count must be the levels'.
  std::vector<std::string> up = {"UpDecoderBlock2D"};
  if (j.contains("up_block_types")) {
    const nlohmann::json& t = j["up_block_types"];
    if (!t.is_array() || !std::all_of(t.begin(), t.end(), [](const auto& v) { return v.is_string(); })) {
      return InvalidArgument(fmt::format("{}: up_block_types must be a list of strings", source));
    }
    up = t.get<std::vector<std::string>>();
  }
  for (const std::string& type : up) {
    if (type != "UpDecoderBlock2D") {
      return InvalidArgument(
          fmt::format("{}: up_block_types entry {} is not supported (UpDecoderBlock2D only)", source, type));
    }
  }
  if (up.size() != c->block_out_channels.size()) {
    return InvalidArgument(fmt::format("{}: {} up_block_types for {} block_out_channels", source, up.size(),
                                       c->block_out_channels.size()));
  }
  return Status::Ok();
}

struct GroupNormWeights {
  Tensor weight, bias;  // [C] f32
};

struct ResnetBlock {
  GroupNormWeights norm1, norm2;
  ops::Conv conv1, conv2;             // 3x3, padding 1
  std::optional<ops::Conv> shortcut;  // 1x1, when in != out channels
};

struct MidAttention {
  GroupNormWeights group_norm;
  layers::DenseAttention attention;  // one head of dim C over the H * W pixels
};

struct UpBlock {
  std::vector<ResnetBlock> resnets;    // layers_per_block + 1
  std::optional<ops::Conv> upsampler;  // 3x3 after nearest x2; all levels but the last
};

StatusOr<GroupNormWeights> LoadGroupNorm(const Checkpoint& ckpt, const std::string& name, int64_t channels) {
  GroupNormWeights n;
  OMNI_ASSIGN_OR_RETURN(n.weight, LoadVector(ckpt, name + ".weight", channels));
  OMNI_ASSIGN_OR_RETURN(n.bias, LoadVector(ckpt, name + ".bias", channels));
  return n;
}

// A k x k conv (k odd, "same" padding) with a bias, packed bf16.
StatusOr<ops::Conv> LoadConv(const Checkpoint& ckpt, const std::string& name, int64_t out, int64_t in, int64_t k) {
  OMNI_ASSIGN_OR_RETURN(Tensor w, LoadFloatWeight(ckpt, name + ".weight", {out, in, k, k}));
  OMNI_ASSIGN_OR_RETURN(Tensor b, LoadVector(ckpt, name + ".bias", out));
  ops::ConvParams p;
  p.padding = {k / 2};
  return ops::Conv(ToBf16(w), b, p);
}

StatusOr<ResnetBlock> LoadResnet(const Checkpoint& ckpt, const std::string& prefix, int64_t in, int64_t out) {
  ResnetBlock r;
  OMNI_ASSIGN_OR_RETURN(r.norm1, LoadGroupNorm(ckpt, prefix + ".norm1", in));
  OMNI_ASSIGN_OR_RETURN(r.conv1, LoadConv(ckpt, prefix + ".conv1", out, in, 3));
  OMNI_ASSIGN_OR_RETURN(r.norm2, LoadGroupNorm(ckpt, prefix + ".norm2", out));
  OMNI_ASSIGN_OR_RETURN(r.conv2, LoadConv(ckpt, prefix + ".conv2", out, out, 3));
  if (in != out) {
    OMNI_ASSIGN_OR_RETURN(r.shortcut, LoadConv(ckpt, prefix + ".conv_shortcut", out, in, 1));
  }
  return r;
}

StatusOr<MidAttention> LoadMidAttention(const Checkpoint& ckpt, const std::string& prefix, int64_t channels) {
  MidAttention a;
  OMNI_ASSIGN_OR_RETURN(a.group_norm, LoadGroupNorm(ckpt, prefix + ".group_norm", channels));
  layers::DenseAttentionConfig c;
  c.hidden = channels;
  c.num_heads = 1;
  c.head_dim = channels;
  c.qkv_names = {"to_q", "to_k", "to_v"};
  c.o_name = "to_out.0";
  OMNI_ASSIGN_OR_RETURN(a.attention, layers::DenseAttention::Load(ckpt, prefix, c));
  return a;
}

// silu(group_norm(x)), the pre-activation of every conv but conv_in and the
// upsamplers'. Two passes and two full-size tensors; a fused GroupNorm+SiLU
// kernel would save one pass over the largest activations.
Tensor NormSilu(const Tensor& x, const GroupNormWeights& n, int64_t groups) {
  return ops::Silu(ops::GroupNorm(x, groups, n.weight, n.bias, kNormEps));
}

// x [1, C_in, H, W] -> [1, C_out, H, W]. The residual add is a separate
// pass; oneDNN could fuse it into conv2 as a sum post-op if ops::Conv exposed one.
Tensor ResnetForward(const ResnetBlock& r, const Tensor& x, int64_t groups) {
  Tensor h = r.conv1.Forward(NormSilu(x, r.norm1, groups));
  h = r.conv2.Forward(NormSilu(h, r.norm2, groups));
  return ops::Add(r.shortcut ? r.shortcut->Forward(x) : x, h);
}

// x [1, C, H, W]: x + to_out(attention(group_norm(x) as H * W tokens of C)).
Tensor MidAttentionForward(const MidAttention& a, const Tensor& x, int64_t groups) {
  const int64_t c = x.dim(1), pixels = x.dim(2) * x.dim(3);
  Tensor hs = ops::GroupNorm(x, groups, a.group_norm.weight, a.group_norm.bias, kNormEps);
  // [C, H*W] -> [H*W, C] tokens: one transposing copy each way, at the
  // coarsest level only.
  Tensor tokens = hs.Reshape({c, pixels}).Transpose(0, 1).Contiguous();
  Tensor out = a.attention.Forward(tokens);  // [H*W, C]
  return ops::Add(x.Reshape({c, pixels}), out.Transpose(0, 1)).Reshape(x.shape());
}

}  // namespace

struct VaeDecoder::Weights {
  std::optional<ops::Conv> post_quant_conv;  // 1x1 latent -> latent
  ops::Conv conv_in;                         // latent -> block_out_channels.back()
  ResnetBlock mid_resnet0, mid_resnet1;
  std::optional<MidAttention> mid_attention;
  std::vector<UpBlock> up_blocks;  // coarsest first
  GroupNormWeights conv_norm_out;
  ops::Conv conv_out;  // block_out_channels.front() -> out_channels
};

StatusOr<VaeDecoderConfig> ParseVaeDecoderConfig(std::string_view json, std::string_view source) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(fmt::format("{}: not a JSON object", source));
  VaeDecoderConfig c;
  OMNI_RETURN_IF_ERROR(ParseStructure(j, source, &c));
  OMNI_ASSIGN_OR_RETURN(c.layers_per_block, IntAtLeast(j, source, "layers_per_block", c.layers_per_block, 0));
  OMNI_ASSIGN_OR_RETURN(c.norm_num_groups, IntAtLeast(j, source, "norm_num_groups", c.norm_num_groups, 1));
  OMNI_ASSIGN_OR_RETURN(c.latent_channels, IntAtLeast(j, source, "latent_channels", c.latent_channels, 1));
  OMNI_ASSIGN_OR_RETURN(c.out_channels, IntAtLeast(j, source, "out_channels", c.out_channels, 1));
  OMNI_ASSIGN_OR_RETURN(c.mid_block_add_attention,
                        Bool(j, source, "mid_block_add_attention", c.mid_block_add_attention));
  OMNI_ASSIGN_OR_RETURN(c.use_post_quant_conv, Bool(j, source, "use_post_quant_conv", c.use_post_quant_conv));
  if (j.contains("scaling_factor")) {
    if (!j["scaling_factor"].is_number() || !(j["scaling_factor"].get<double>() > 0)) {
      return InvalidArgument(fmt::format("{}: scaling_factor must be a positive number", source));
    }
    c.scaling_factor = j["scaling_factor"].get<double>();
  }
  if (j.contains("shift_factor") && !j["shift_factor"].is_null()) {
    if (!j["shift_factor"].is_number()) {
      return InvalidArgument(fmt::format("{}: shift_factor must be a number or null", source));
    }
    c.shift_factor = j["shift_factor"].get<double>();
  }
  for (int64_t ch : c.block_out_channels) {
    if (ch % c.norm_num_groups != 0) {
      return InvalidArgument(
          fmt::format("{}: norm_num_groups {} does not divide block_out_channels {}", source, c.norm_num_groups, ch));
    }
  }
  if (c.block_out_channels.size() > 16) {
    return InvalidArgument(fmt::format("{}: {} levels of block_out_channels", source, c.block_out_channels.size()));
  }
  return c;
}

VaeDecoder::VaeDecoder(VaeDecoderConfig config, std::unique_ptr<Weights> weights)
    : config_(std::move(config)), w_(std::move(weights)) {}
VaeDecoder::VaeDecoder(VaeDecoder&&) noexcept = default;
VaeDecoder& VaeDecoder::operator=(VaeDecoder&&) noexcept = default;
VaeDecoder::~VaeDecoder() = default;

StatusOr<VaeDecoder> VaeDecoder::Load(const std::string& vae_dir) {
  const std::filesystem::path root(vae_dir);
  const std::string config_path = (root / "config.json").string();
  std::ifstream in(config_path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read {}", config_path));
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  OMNI_ASSIGN_OR_RETURN(VaeDecoderConfig c, ParseVaeDecoderConfig(json, config_path));
  OMNI_ASSIGN_OR_RETURN(Checkpoint ckpt, Checkpoint::OpenFile((root / "diffusion_pytorch_model.safetensors").string()));

  auto w = std::make_unique<Weights>();
  const std::vector<int64_t>& ch = c.block_out_channels;
  const int64_t top = ch.back();
  if (c.use_post_quant_conv) {
    OMNI_ASSIGN_OR_RETURN(w->post_quant_conv,
                          LoadConv(ckpt, "post_quant_conv", c.latent_channels, c.latent_channels, 1));
  }
  OMNI_ASSIGN_OR_RETURN(w->conv_in, LoadConv(ckpt, "decoder.conv_in", top, c.latent_channels, 3));
  OMNI_ASSIGN_OR_RETURN(w->mid_resnet0, LoadResnet(ckpt, "decoder.mid_block.resnets.0", top, top));
  if (c.mid_block_add_attention) {
    OMNI_ASSIGN_OR_RETURN(w->mid_attention, LoadMidAttention(ckpt, "decoder.mid_block.attentions.0", top));
  }
  OMNI_ASSIGN_OR_RETURN(w->mid_resnet1, LoadResnet(ckpt, "decoder.mid_block.resnets.1", top, top));
  int64_t prev = top;
  const size_t levels = ch.size();
  for (size_t i = 0; i < levels; ++i) {
    const int64_t out = ch[levels - 1 - i];
    const std::string prefix = fmt::format("decoder.up_blocks.{}", i);
    UpBlock& block = w->up_blocks.emplace_back();
    for (int64_t r = 0; r <= c.layers_per_block; ++r) {
      OMNI_ASSIGN_OR_RETURN(ResnetBlock resnet,
                            LoadResnet(ckpt, fmt::format("{}.resnets.{}", prefix, r), r == 0 ? prev : out, out));
      block.resnets.push_back(std::move(resnet));
    }
    if (i + 1 < levels) {
      OMNI_ASSIGN_OR_RETURN(block.upsampler, LoadConv(ckpt, prefix + ".upsamplers.0.conv", out, out, 3));
    }
    prev = out;
  }
  OMNI_ASSIGN_OR_RETURN(w->conv_norm_out, LoadGroupNorm(ckpt, "decoder.conv_norm_out", ch.front()));
  OMNI_ASSIGN_OR_RETURN(w->conv_out, LoadConv(ckpt, "decoder.conv_out", c.out_channels, ch.front(), 3));
  return VaeDecoder(std::move(c), std::move(w));
}

Tensor VaeDecoder::Decode(const Tensor& latents, const ActivationCallback* on_activation) const {
  OMNI_CHECK(latents.rank() == 3 && latents.dim(0) == config_.latent_channels && latents.dtype() == DType::kF32)
      << "VAE latents [" << config_.latent_channels << ", h, w] f32: " << latents.DebugString();
  const int64_t groups = config_.norm_num_groups;
  auto emit = [&](std::string_view name, const Tensor& t) {
    if (on_activation != nullptr) (*on_activation)(name, t);
  };
  // The pipeline's unscaling, in f32 as PyTorch does it for an f32 tensor and
  // Python floats.
  const Tensor src = latents.Contiguous();
  Tensor h = Tensor::Empty({1, latents.dim(0), latents.dim(1), latents.dim(2)}, DType::kF32);
  {
    const float scale = static_cast<float>(config_.scaling_factor), shift = static_cast<float>(config_.shift_factor);
    const float* s = src.data<float>();
    float* z = h.data<float>();
    for (int64_t i = 0; i < h.numel(); ++i) z[i] = s[i] / scale + shift;
  }
  if (w_->post_quant_conv) h = w_->post_quant_conv->Forward(h);
  h = w_->conv_in.Forward(h);
  emit("conv_in", h);
  h = ResnetForward(w_->mid_resnet0, h, groups);
  if (w_->mid_attention) h = MidAttentionForward(*w_->mid_attention, h, groups);
  h = ResnetForward(w_->mid_resnet1, h, groups);
  emit("mid_block", h);
  for (size_t i = 0; i < w_->up_blocks.size(); ++i) {
    const UpBlock& block = w_->up_blocks[i];
    for (const ResnetBlock& r : block.resnets) h = ResnetForward(r, h, groups);
    if (block.upsampler) {
      // The x2 copy is materialised (4x the level's input) for oneDNN; a conv
      // reading the coarse grid directly would skip it.
      h = block.upsampler->Forward(ops::Resize(h, 2 * h.dim(2), 2 * h.dim(3), ops::ResizeMode::kNearest));
    }
    emit(fmt::format("up_blocks.{}", i), h);
  }
  h = w_->conv_out.Forward(NormSilu(h, w_->conv_norm_out, groups));
  emit("conv_out", h);
  return h.Reshape({h.dim(1), h.dim(2), h.dim(3)});
}

std::vector<uint8_t> ImageToRgb8(const Tensor& image) {
  OMNI_CHECK(image.rank() == 3 && image.dim(0) == 3 && image.dtype() == DType::kF32)
      << "image [3, H, W] f32: " << image.DebugString();
  const Tensor x = image.Contiguous();
  const int64_t pixels = x.dim(1) * x.dim(2);
  const float* p = x.data<float>();
  std::vector<uint8_t> rgb(static_cast<size_t>(pixels * 3));
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < pixels; ++i) {
      // NaN (a diverged sampler) becomes 0, as numpy's cast gives on x86.
      const float v = std::isnan(p[c * pixels + i]) ? -1.0f : std::clamp(p[c * pixels + i], -1.0f, 1.0f);
      rgb[static_cast<size_t>(i * 3 + c)] = static_cast<uint8_t>((v + 1.0f) / 2.0f * 255.0f);
    }
  }
  return rgb;
}

}  // namespace omni::models
