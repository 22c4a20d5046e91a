#include "models/audio_decoder/demo_audio_decoder.h"

#include <cmath>
#include <filesystem>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "modelfile/safetensors.h"
#include "models/demo_weights.h"
#include "ops/anti_alias.h"

namespace omni::models {
namespace {

// The ECAPA-TDNN under spk_emb. with OmniServe's module names: BatchNorms
// near identity (running variance about 1), convolutions scaled by their
// fan-in so the activations stay O(1).
template <typename Add>
void AddEcapaTensors(const DemoAudioDecoderSpec& s, Add& add) {
  const int64_t h = s.spk_hidden_dim, width = h / 8, bottleneck = 128, attention = 128;
  auto conv = [&](const std::string& name, int64_t out, int64_t in, int64_t k) {
    add(name + ".weight", {out, in, k}, 1.0 / std::sqrt(static_cast<double>(in * k)));
  };
  auto bn = [&](const std::string& name, int64_t c) {
    add(name + ".weight", {c}, 0.1, 1.0);
    add(name + ".bias", {c}, 0.1);
    add(name + ".running_mean", {c}, 0.1);
    add(name + ".running_var", {c}, 0.1, 1.0);
  };
  auto dense = [&](const std::string& name, int64_t out, int64_t in, bool conv_shaped) {
    add(name + ".weight", conv_shaped ? Shape{out, in, 1} : Shape{out, in}, 1.0 / std::sqrt(static_cast<double>(in)));
    add(name + ".bias", {out}, 0.05);
  };
  // The log-mel's values sit around -8 (ln of small magnitudes): the first
  // conv is scaled down by that much, so its output is O(1) too.
  add("spk_emb.layer1.conv.weight", {h, s.num_mels, 5}, 1.0 / (8.0 * std::sqrt(static_cast<double>(s.num_mels * 5))));
  bn("spk_emb.layer1.bn", h);
  for (int l = 2; l <= 4; ++l) {
    const std::string b = fmt::format("spk_emb.layer{}.", l);
    conv(b + "Conv1dReluBn1.conv", h, h, 1);
    bn(b + "Conv1dReluBn1.bn", h);
    for (int g = 0; g < 7; ++g) {
      conv(fmt::format("{}Res2Conv1dReluBn.convs.{}", b, g), width, width, 3);
      bn(fmt::format("{}Res2Conv1dReluBn.bns.{}", b, g), width);
    }
    conv(b + "Conv1dReluBn2.conv", h, h, 1);
    bn(b + "Conv1dReluBn2.bn", h);
    dense(b + "SE_Connect.linear1", bottleneck, h, false);
    dense(b + "SE_Connect.linear2", h, bottleneck, false);
  }
  dense("spk_emb.conv", 3 * h, 3 * h, true);
  dense("spk_emb.pooling.linear1", attention, (s.global_context_att ? 9 : 3) * h, true);
  dense("spk_emb.pooling.linear2", 3 * h, attention, true);
  bn("spk_emb.bn", 6 * h);
  dense("spk_emb.linear", s.spk_emb_dim, 6 * h, false);
  bn("spk_emb.bn_out", s.spk_emb_dim);
}

std::vector<NamedTensor> DemoTensors(const DemoAudioDecoderSpec& s) {
  std::vector<NamedTensor> out;
  auto add = [&](const std::string& name, const Shape& shape, double std, double offset = 0.0) {
    out.push_back({name, RandomBf16(s.seed, name, shape, std, offset)});
  };
  // Weight norm as torch.nn.utils.parametrizations.weight_norm stores it:
  // original0 = g [dim0, 1, 1], original1 = v. g is drawn near the scale the
  // folded weight should have, v at any scale (the fold divides it out).
  auto conv = [&](const std::string& name, const Shape& shape, int64_t fan_in, bool bias = true) {
    add(name + ".parametrizations.weight.original0", {shape[0], 1, 1}, 0.1,
        std::sqrt(static_cast<double>(shape[1] * shape[2]) / static_cast<double>(fan_in)));
    add(name + ".parametrizations.weight.original1", shape, 1.0);
    if (bias) add(name + ".bias", {shape[0]}, 0.02);
  };
  const std::vector<float> taps = ops::KaiserSincFilter(12, 0.25, 0.3);
  auto activation = [&](const std::string& name, int64_t channels) {
    add(name + ".act.alpha", {channels}, 0.3);
    add(name + ".act.beta", {channels}, 0.3);
    out.push_back({name + ".upsample.filter", Tensor::FromFloats(taps, {1, 1, 12})});
    out.push_back({name + ".downsample.lowpass.filter", Tensor::FromFloats(taps, {1, 1, 12})});
  };

  add("unit_emb.weight", {s.num_units, s.unit_emb_dim}, 1.0);
  if (s.zero_shot) {
    AddEcapaTensors(s, add);
  } else {
    add("spk_emb.weight", {static_cast<int64_t>(s.speakers.size()), s.spk_emb_dim}, 1.0);
  }
  const int64_t in0 = s.unit_emb_dim + s.spk_emb_dim;
  conv("conv_pre.conv", {s.upsample_initial_channel, in0, 7}, in0 * 7);
  const size_t kernels = s.resblock_kernel_sizes.size();
  int64_t ch = s.upsample_initial_channel;
  for (size_t i = 0; i < s.upsample_rates.size(); ++i) {
    const int64_t k = s.upsample_kernel_sizes[i];
    // A transposed conv's weight is [in, out, k], normed per input channel
    // (out * k values); each output sums in * k / rate products.
    const std::string up = fmt::format("ups.{}.0.deconv", i);
    add(up + ".parametrizations.weight.original0", {ch, 1, 1}, 0.1,
        std::sqrt(static_cast<double>(s.upsample_rates[i]) / 2.0));
    add(up + ".parametrizations.weight.original1", {ch, ch / 2, k}, 1.0);
    add(up + ".bias", {ch / 2}, 0.02);
    ch /= 2;
    for (size_t j = 0; j < kernels; ++j) {
      const std::string p = fmt::format("resblocks.{}", i * kernels + j);
      const int64_t rk = s.resblock_kernel_sizes[j];
      for (size_t n = 0; n < s.resblock_dilations.size(); ++n) {
        // Small residual branches, as a trained vocoder's are: the signal stays bounded over 18 blocks.
        conv(fmt::format("{}.convs1.{}.conv", p, n), {ch, ch, rk}, 4 * ch * rk);
        conv(fmt::format("{}.convs2.{}.conv", p, n), {ch, ch, rk}, 4 * ch * rk);
      }
      for (size_t a = 0; a < 2 * s.resblock_dilations.size(); ++a) activation(fmt::format("{}.activations.{}", p, a), ch);
    }
  }
  activation("activation_post", ch);
  // A quiet output (rms about 0.15), so the final clamp rarely bites.
  conv("conv_post.conv", {1, ch, 7}, ch * 7 * 16, /*bias=*/false);
  return out;
}

std::string ConfigJson(const DemoAudioDecoderSpec& s) {
  nlohmann::ordered_json j;
  j["resblock"] = "1";
  j["num_units"] = s.num_units;
  j["unit_emb_dim"] = s.unit_emb_dim;
  j["finetune"] = !s.zero_shot;
  if (!s.zero_shot) j["num_spk"] = static_cast<int64_t>(s.speakers.size());
  j["spk_emb_dim"] = s.spk_emb_dim;
  j["num_mels"] = s.num_mels;
  if (s.zero_shot) {
    j["spk_hidden_dim"] = s.spk_hidden_dim;
    j["global_context_att"] = s.global_context_att;
    j["n_fft"] = 1024;
    j["hop_size"] = 256;
    j["win_size"] = 1024;
    j["fmin"] = 0;
    j["fmax"] = 12000;
  }
  j["upsample_rates"] = s.upsample_rates;
  j["upsample_kernel_sizes"] = s.upsample_kernel_sizes;
  j["upsample_initial_channel"] = s.upsample_initial_channel;
  j["resblock_kernel_sizes"] = s.resblock_kernel_sizes;
  j["resblock_dilation_sizes"] = std::vector<std::vector<int64_t>>(s.resblock_kernel_sizes.size(), s.resblock_dilations);
  j["activation"] = "snakebeta";
  j["snake_logscale"] = true;
  j["causal"] = s.causal;
  j["use_bias_at_final"] = false;
  j["use_tanh_at_final"] = s.use_tanh_at_final;
  j["sampling_rate"] = 24000;
  return j.dump(2) + "\n";
}

// OmniServe's speaker_config.json: every age band and "default" map each
// gender to a speaker name (or a list to pick from).
std::string SpeakerConfigJson(const DemoAudioDecoderSpec& s) {
  auto pick = [&](char gender, size_t nth) {
    std::vector<std::string> matching;
    for (const std::string& name : s.speakers) {
      if (!name.empty() && name[0] == gender) matching.push_back(name);
    }
    return matching.empty() ? s.speakers[0] : matching[nth % matching.size()];
  };
  nlohmann::ordered_json map;
  map["default"] = {{"f", pick('f', 0)}, {"m", pick('m', 0)}};
  const char* ages[] = {"0-10", "10", "20-30", "40-50", "60-70"};
  for (size_t i = 0; i < 5; ++i) map[ages[i]] = {{"f", pick('f', i)}, {"m", pick('m', i)}};
  nlohmann::ordered_json j;
  j["audio_paths_or_urls_or_ids"] = map;
  return j.dump(2) + "\n";
}

}  // namespace

DemoAudioDecoderSpec BenchAudioDecoderSpec() {
  DemoAudioDecoderSpec s;
  s.unit_emb_dim = 512;
  s.spk_emb_dim = 256;
  s.upsample_initial_channel = 1536;
  s.spk_hidden_dim = 512;
  return s;
}

Status WriteDemoAudioDecoder(const DemoAudioDecoderSpec& spec, const std::string& out_dir) {
  if (spec.speakers.empty() || spec.upsample_rates.size() != spec.upsample_kernel_sizes.size() ||
      (spec.upsample_initial_channel >> spec.upsample_rates.size()) < 1) {
    return InvalidArgument("demo audio decoder spec: a speaker, one kernel per rate and channels for every stage");
  }
  const std::filesystem::path dir(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + out_dir + ": " + ec.message());
  OMNI_RETURN_IF_ERROR(WriteDemoTextFile((dir / "config.json").string(), ConfigJson(spec)));
  OMNI_RETURN_IF_ERROR(WriteSafetensors((dir / "model.safetensors").string(), DemoTensors(spec), {{"format", "pt"}}));
  if (spec.zero_shot) return Status::Ok();
  std::string names;
  for (const std::string& n : spec.speakers) names += n + "\n";
  OMNI_RETURN_IF_ERROR(WriteDemoTextFile((dir / "spk_list.txt").string(), names));
  OMNI_RETURN_IF_ERROR(WriteDemoTextFile((dir / "speaker_config.json").string(), SpeakerConfigJson(spec)));
  DemoAudioDecoderSpec zero_shot = spec;
  zero_shot.zero_shot = true;
  zero_shot.seed = spec.seed + 1;
  return WriteDemoAudioDecoder(zero_shot, (dir / "zeroshot").string());
}

}  // namespace omni::models
