#include "models/audio_decoder/unit_bigvgan.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <fmt/core.h>

#include "core/check.h"
#include "models/audio_decoder/ecapa_tdnn.h"
#include "models/audio_decoder/speaker_reference.h"
#include "models/layers/weights.h"
#include "ops/anti_alias.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"

namespace omni::models {
namespace {

using layers::WeightName;

// A weight-normed convolution's folded weight, f32: the plain ".weight", or
// g * v / |v| with the norm over every dim but the first (PyTorch's
// weight_norm(dim=0)), from the parametrization names or the old ones.
StatusOr<Tensor> LoadWeightNormed(const Checkpoint& ckpt, const std::string& prefix, const Shape& shape) {
  if (ckpt.Contains(prefix + ".weight")) {
    OMNI_ASSIGN_OR_RETURN(Tensor w, layers::LoadFloatWeight(ckpt, prefix + ".weight", shape));
    return w.To(DType::kF32);
  }
  std::string g_name = prefix + ".parametrizations.weight.original0", v_name = prefix + ".parametrizations.weight.original1";
  if (!ckpt.Contains(g_name)) {
    g_name = prefix + ".weight_g";
    v_name = prefix + ".weight_v";
  }
  if (!ckpt.Contains(g_name)) {
    return NotFound(fmt::format("{}: no weight for {} (looked for .weight, .parametrizations.weight.original0/1 "
                                "and .weight_g/.weight_v)", ckpt.dir(), prefix));
  }
  Shape g_shape(shape.size(), 1);
  g_shape[0] = shape[0];
  OMNI_ASSIGN_OR_RETURN(Tensor g, layers::LoadFloatWeight(ckpt, g_name, g_shape));
  OMNI_ASSIGN_OR_RETURN(Tensor v, layers::LoadFloatWeight(ckpt, v_name, shape));
  Tensor gf = g.To(DType::kF32), w = v.To(DType::kF32);
  const int64_t rows = shape[0], cols = w.numel() / rows;
  float* p = w.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < cols; ++i) sum += static_cast<double>(p[r * cols + i]) * p[r * cols + i];
    const double scale = sum > 0 ? gf.data<float>()[r] / std::sqrt(sum) : 0.0;
    for (int64_t i = 0; i < cols; ++i) p[r * cols + i] = static_cast<float>(p[r * cols + i] * scale);
  }
  return w;
}

// x [B, C, T] f32 with `left` samples prepended: zeros, or copies of the first.
Tensor PadLeft(const Tensor& x, int64_t left, bool replicate) {
  if (left == 0) return x;
  const int64_t rows = x.dim(0) * x.dim(1), t = x.dim(2);
  Tensor out = Tensor::Empty({x.dim(0), x.dim(1), t + left}, DType::kF32);
  const Tensor xc = x.Contiguous();
  const float* src = xc.data<float>();
  float* dst = out.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * t;
    float* d = dst + r * (t + left);
    std::fill(d, d + left, replicate ? s[0] : 0.f);
    std::copy(s, s + t, d + left);
  }
  return out;
}

// One weight-normed Conv1d or ConvTranspose1d with BigVGAN's causal or
// centred padding; output length T (conv) or T * stride (transposed).
struct WnConv {
  ops::Conv conv;
  int64_t kernel = 1, dilation = 1, stride = 1;
  bool transposed = false, causal = false;

  static StatusOr<WnConv> Load(const Checkpoint& ckpt, const std::string& prefix, int64_t in, int64_t out,
                               int64_t kernel, int64_t dilation, int64_t stride, bool transposed, bool causal,
                               bool bias) {
    WnConv c;
    c.kernel = kernel;
    c.dilation = dilation;
    c.stride = stride;
    c.transposed = transposed;
    c.causal = causal;
    const Shape shape = transposed ? Shape{in, out, kernel} : Shape{out, in, kernel};
    OMNI_ASSIGN_OR_RETURN(Tensor w, LoadWeightNormed(ckpt, prefix, shape));
    Tensor b;
    if (bias) {
      OMNI_ASSIGN_OR_RETURN(b, layers::LoadVector(ckpt, prefix + ".bias", out));
    }
    ops::ConvParams p;
    p.dilation = {dilation};
    p.transposed = transposed;
    if (transposed) {
      p.stride = {stride};
      p.padding = {causal ? 0 : (kernel - stride + 1) / 2};
      p.output_padding = {causal ? 0 : (kernel - stride) % 2};
    } else {
      p.padding = {causal ? 0 : (kernel * dilation - dilation) / 2};
    }
    c.conv = ops::Conv(w, b, p);
    return c;
  }

  Tensor Forward(const Tensor& x) const {
    if (!causal) return conv.Forward(x);
    if (!transposed) return conv.Forward(PadLeft(x, (kernel - 1) * dilation, false));
    // Replicate ceil(k/u) - 1 inputs on the left, drop u outputs per side.
    const Tensor y = conv.Forward(PadLeft(x, (kernel + stride - 1) / stride - 1, true));
    return y.Slice(2, stride, y.dim(2) - stride).Contiguous();
  }
};

// BigVGAN's anti-aliased SnakeBeta with its parameters.
struct Activation {
  ops::SnakeParams snake;

  static StatusOr<Activation> Load(const Checkpoint& ckpt, const std::string& prefix, int64_t channels,
                                   bool log_scale, std::span<const float> filter) {
    Activation a;
    OMNI_ASSIGN_OR_RETURN(a.snake.alpha, layers::LoadVector(ckpt, prefix + ".act.alpha", channels));
    OMNI_ASSIGN_OR_RETURN(a.snake.beta, layers::LoadVector(ckpt, prefix + ".act.beta", channels));
    a.snake.log_scale = log_scale;
    // The filters are buffers computed from the formula; a checkpoint that
    // stores different ones was made with other resampling settings.
    for (const char* name : {".upsample.filter", ".downsample.lowpass.filter"}) {
      if (!ckpt.Contains(prefix + name)) continue;
      OMNI_ASSIGN_OR_RETURN(Tensor f, layers::LoadFloatWeight(ckpt, prefix + name, {1, 1, 12}));
      const Tensor ff = f.To(DType::kF32);
      for (int i = 0; i < 12; ++i) {
        if (std::abs(ff.data<float>()[i] - filter[i]) > 1e-6f) {
          return InvalidArgument(fmt::format("{}: {}{} is not the 12-tap Kaiser-sinc filter of 2x resampling",
                                             ckpt.dir(), prefix, name));
        }
      }
    }
    return a;
  }
};

struct AmpBlock {
  std::vector<WnConv> convs1, convs2;
  std::vector<Activation> acts;  // 2 per dilation: before convs1[n], before convs2[n]

  Tensor Forward(Tensor x, std::span<const float> filter, std::span<const int64_t> lengths) const {
    for (size_t n = 0; n < convs1.size(); ++n) {
      Tensor t = ops::AntiAliasedSnake(x, acts[2 * n].snake, filter, lengths);
      t = convs1[n].Forward(t);
      t = ops::AntiAliasedSnake(t, acts[2 * n + 1].snake, filter, lengths);
      t = convs2[n].Forward(t);
      x = ops::Add(x, t);
    }
    return x;
  }
};

Status ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read {}", path));
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return Status::Ok();
}

// How far (in units, rounded up) an output sample can depend on units
// before and after its own: every layer's reach in its own samples, over
// the samples per unit at its rate. An anti-aliased activation reads 3
// samples each way to upsample and 3 (at its own rate) to downsample; a
// transposed convolution reads ceil(k / u) inputs each way (left only when
// causal); a convolution (k - 1) * d / 2 each way, or (k - 1) * d to the
// left when causal. A stage's AMP blocks run side by side: the widest counts.
UnitBigVgan::Context ReceptiveField(const UnitBigVganConfig& c) {
  double left = 0, right = 0, rate = 1;
  auto conv = [&](int64_t k, int64_t d) {
    const double reach = static_cast<double>((k - 1) * d);
    left += (c.causal ? reach : reach / 2) / rate;
    right += (c.causal ? 0 : reach / 2) / rate;
  };
  auto activation = [&] {
    left += 6 / rate;
    right += 6 / rate;
  };
  conv(7, 1);
  for (size_t i = 0; i < c.upsample_rates.size(); ++i) {
    const int64_t u = c.upsample_rates[i], k = c.upsample_kernel_sizes[i];
    const double reach = static_cast<double>((k + u - 1) / u);
    left += reach / rate;
    right += (c.causal ? 0 : reach) / rate;
    rate *= static_cast<double>(u);
    double widest_left = 0, widest_right = 0;
    const double base_left = left, base_right = right;
    for (size_t j = 0; j < c.resblock_kernel_sizes.size(); ++j) {
      left = base_left;
      right = base_right;
      for (int64_t d : c.resblock_dilation_sizes[j]) {
        activation();
        conv(c.resblock_kernel_sizes[j], d);
        activation();
        conv(c.resblock_kernel_sizes[j], 1);
      }
      widest_left = std::max(widest_left, left);
      widest_right = std::max(widest_right, right);
    }
    left = widest_left;
    right = widest_right;
  }
  activation();
  conv(7, 1);
  return {static_cast<int64_t>(std::ceil(left)) + 1, static_cast<int64_t>(std::ceil(right)) + 1};
}

}  // namespace

struct UnitBigVgan::Impl {
  std::vector<float> filter;
  Tensor unit_emb;  // [num_units, unit_emb_dim] f32
  Tensor spk_emb;   // [num_spk, spk_emb_dim] f32 (finetune)
  std::unique_ptr<EcapaTdnn> speaker_encoder;   // zero-shot
  std::unique_ptr<ReferenceMel> reference_mel;  // zero-shot
  WnConv conv_pre, conv_post;
  std::vector<WnConv> ups;
  std::vector<AmpBlock> resblocks;  // stage i's blocks at [i * kernels, (i + 1) * kernels)
  Activation activation_post;
};

UnitBigVgan::UnitBigVgan(UnitBigVganConfig config)
    : config_(std::move(config)), context_(ReceptiveField(config_)), impl_(std::make_unique<Impl>()) {}
UnitBigVgan::~UnitBigVgan() = default;

StatusOr<std::unique_ptr<UnitBigVgan>> UnitBigVgan::Load(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  std::string text;
  OMNI_RETURN_IF_ERROR(ReadFile(path, &text));
  OMNI_ASSIGN_OR_RETURN(UnitBigVganConfig config, ParseUnitBigVganConfig(text, path));
  OMNI_ASSIGN_OR_RETURN(Checkpoint ckpt, Checkpoint::Open(dir));
  return Load(ckpt, config);
}

StatusOr<std::unique_ptr<UnitBigVgan>> UnitBigVgan::Load(const Checkpoint& ckpt, const UnitBigVganConfig& c) {
  std::unique_ptr<UnitBigVgan> model(new UnitBigVgan(c));
  Impl& m = *model->impl_;
  m.filter = ops::KaiserSincFilter(12, 0.25, 0.3);
  OMNI_ASSIGN_OR_RETURN(Tensor units, layers::LoadFloatWeight(ckpt, "unit_emb.weight", {c.num_units, c.unit_emb_dim}));
  m.unit_emb = units.To(DType::kF32);
  if (c.finetune) {
    OMNI_ASSIGN_OR_RETURN(Tensor spk, layers::LoadFloatWeight(ckpt, "spk_emb.weight", {c.num_spk, c.spk_emb_dim}));
    m.spk_emb = spk.To(DType::kF32);
  } else {
    OMNI_ASSIGN_OR_RETURN(m.speaker_encoder, EcapaTdnn::Load(ckpt, "spk_emb.", {.num_mels = c.num_mels,
                                                                                .global_context_att = c.global_context_att}));
    if (m.speaker_encoder->emb_dim() != c.spk_emb_dim || m.speaker_encoder->hidden() != c.spk_hidden_dim) {
      return InvalidArgument(fmt::format("{}: the speaker encoder gives {} values from {} channels; config.json says "
                                         "spk_emb_dim {}, spk_hidden_dim {}", ckpt.dir(), m.speaker_encoder->emb_dim(),
                                         m.speaker_encoder->hidden(), c.spk_emb_dim, c.spk_hidden_dim));
    }
    m.reference_mel = std::make_unique<ReferenceMel>(ReferenceMelConfig{
        .sample_rate = c.sampling_rate,
        .n_fft = static_cast<int>(c.n_fft),
        .hop_size = static_cast<int>(c.hop_size),
        .win_size = static_cast<int>(c.win_size),
        .num_mels = static_cast<int>(c.num_mels),
        .fmin = c.fmin,
        .fmax = c.fmax});
  }
  OMNI_ASSIGN_OR_RETURN(m.conv_pre, WnConv::Load(ckpt, "conv_pre.conv", c.unit_emb_dim + c.spk_emb_dim,
                                                 c.upsample_initial_channel, 7, 1, 1, false, c.causal, true));
  const size_t kernels = c.resblock_kernel_sizes.size();
  for (size_t i = 0; i < c.upsample_rates.size(); ++i) {
    const int64_t in = c.upsample_initial_channel >> i, ch = c.stage_channels(i);
    OMNI_ASSIGN_OR_RETURN(WnConv up, WnConv::Load(ckpt, fmt::format("ups.{}.0.deconv", i), in, ch,
                                                  c.upsample_kernel_sizes[i], 1, c.upsample_rates[i], true, c.causal,
                                                  true));
    m.ups.push_back(std::move(up));
    for (size_t j = 0; j < kernels; ++j) {
      const std::string p = fmt::format("resblocks.{}", i * kernels + j);
      const int64_t k = c.resblock_kernel_sizes[j];
      AmpBlock block;
      const std::vector<int64_t>& dilations = c.resblock_dilation_sizes[j];
      for (size_t n = 0; n < dilations.size(); ++n) {
        OMNI_ASSIGN_OR_RETURN(WnConv c1, WnConv::Load(ckpt, fmt::format("{}.convs1.{}.conv", p, n), ch, ch, k,
                                                      dilations[n], 1, false, c.causal, true));
        OMNI_ASSIGN_OR_RETURN(WnConv c2, WnConv::Load(ckpt, fmt::format("{}.convs2.{}.conv", p, n), ch, ch, k, 1, 1,
                                                      false, c.causal, true));
        block.convs1.push_back(std::move(c1));
        block.convs2.push_back(std::move(c2));
      }
      for (size_t a = 0; a < 2 * dilations.size(); ++a) {
        OMNI_ASSIGN_OR_RETURN(Activation act, Activation::Load(ckpt, fmt::format("{}.activations.{}", p, a), ch,
                                                               c.snake_logscale, m.filter));
        block.acts.push_back(std::move(act));
      }
      m.resblocks.push_back(std::move(block));
    }
  }
  const int64_t last = c.stage_channels(c.upsample_rates.size() - 1);
  OMNI_ASSIGN_OR_RETURN(m.activation_post,
                        Activation::Load(ckpt, "activation_post", last, c.snake_logscale, m.filter));
  OMNI_ASSIGN_OR_RETURN(m.conv_post, WnConv::Load(ckpt, "conv_post.conv", last, 1, 7, 1, 1, false, c.causal,
                                                  c.use_bias_at_final));
  return model;
}

StatusOr<Tensor> UnitBigVgan::SpeakerRow(int64_t index) const {
  if (index < 0 || index >= config_.num_spk) {
    return InvalidArgument(fmt::format("speaker index {} is outside the table of {}", index, config_.num_spk));
  }
  return impl_->spk_emb.Slice(0, index, index + 1).Reshape({config_.spk_emb_dim}).Copy();
}

StatusOr<Tensor> UnitBigVgan::SpeakerFromClip(std::span<const float> samples,
                                              const ActivationCallback* callback) const {
  if (!zero_shot()) {
    return FailedPrecondition("this vocoder has a speaker table, not a speaker encoder for reference clips");
  }
  OMNI_ASSIGN_OR_RETURN(std::vector<float> clip, NormalizeReferenceClip(samples, config_.sampling_rate));
  if (callback != nullptr) (*callback)("normalized", Tensor::FromFloats(clip, {std::ssize(clip)}));
  OMNI_ASSIGN_OR_RETURN(Tensor mel, impl_->reference_mel->Compute(clip));
  if (callback != nullptr) (*callback)("mel", mel);
  OMNI_ASSIGN_OR_RETURN(Tensor vector, impl_->speaker_encoder->Embed(mel, callback));
  for (int64_t i = 0; i < vector.numel(); ++i) {
    if (!std::isfinite(vector.data<float>()[i])) {
      return InvalidArgument("the reference audio gives no usable speaker vector (not finite)");
    }
  }
  return vector;
}

Tensor UnitBigVgan::Forward(const Tensor& units, const Tensor& speakers, std::span<const int64_t> lengths,
                            const ActivationCallback* callback) const {
  const Impl& m = *impl_;
  const UnitBigVganConfig& c = config_;
  OMNI_CHECK(units.rank() == 2 && speakers.rank() == 2 && speakers.dim(0) == units.dim(0) &&
             speakers.dim(1) == c.spk_emb_dim)
      << units.DebugString() << " " << speakers.DebugString();
  const int64_t b = units.dim(0), t = units.dim(1);
  OMNI_CHECK(lengths.empty() || (c.causal && static_cast<int64_t>(lengths.size()) == b))
      << "per-row lengths need a causal vocoder and one length per row";
  // Each row's valid samples at the current rate: its units x the rates so far.
  std::vector<int64_t> valid(lengths.begin(), lengths.end());
  auto report = [&](std::string_view name, const Tensor& v) {
    if (callback != nullptr && *callback) (*callback)(name, v);
  };
  // [B, T, D] -> [B, D, T], scaled, then the speaker rows repeated over time.
  Tensor emb = ops::Scale(ops::Embedding(m.unit_emb, units), static_cast<float>(1.0 / std::sqrt(c.unit_emb_dim)));
  emb = emb.Transpose(1, 2).Contiguous();
  Tensor spk = Tensor::Empty({b, c.spk_emb_dim, t}, DType::kF32);
  const Tensor sc = speakers.To(DType::kF32);
  for (int64_t i = 0; i < b * c.spk_emb_dim; ++i) {
    std::fill_n(spk.data<float>() + i * t, t, sc.data<float>()[i]);
  }
  const Tensor parts[] = {emb, spk};
  Tensor x = m.conv_pre.Forward(ops::Concat(parts, 1));
  report("conv_pre", x);
  const size_t kernels = c.resblock_kernel_sizes.size();
  for (size_t i = 0; i < m.ups.size(); ++i) {
    x = m.ups[i].Forward(x);
    for (int64_t& v : valid) v *= c.upsample_rates[i];
    Tensor sum;
    for (size_t j = 0; j < kernels; ++j) {
      Tensor y = m.resblocks[i * kernels + j].Forward(x, m.filter, valid);
      sum = sum.defined() ? ops::Add(sum, y) : y;
    }
    x = ops::Scale(sum, 1.f / static_cast<float>(kernels));
    report(fmt::format("ups.{}", i), x);
  }
  x = ops::AntiAliasedSnake(x, m.activation_post.snake, m.filter, valid);
  report("activation_post", x);
  x = m.conv_post.Forward(x);
  report("conv_post", x);
  x = c.use_tanh_at_final ? ops::Tanh(x) : x.Contiguous();
  Tensor wav = x.Reshape({b, x.dim(2)});
  if (!c.use_tanh_at_final) {
    float* p = wav.data<float>();
    for (int64_t i = 0; i < wav.numel(); ++i) p[i] = std::clamp(p[i], -1.f, 1.f);
  }
  return wav;
}

StatusOr<std::vector<float>> UnitBigVgan::Vocode(std::span<const int32_t> units, const Tensor& speaker,
                                                 const ActivationCallback* callback) const {
  if (units.empty()) return InvalidArgument("no audio units to vocode");
  for (size_t i = 0; i < units.size(); ++i) {
    if (units[i] < 0 || units[i] >= config_.num_units) {
      return InvalidArgument(fmt::format("audio unit {} at position {} is outside [0, {})", units[i], i,
                                         config_.num_units));
    }
  }
  if (!speaker.defined() || speaker.numel() != config_.spk_emb_dim) {
    return InvalidArgument(fmt::format("the speaker vector must have {} values", config_.spk_emb_dim));
  }
  if (callback == nullptr) {
    const std::vector<std::vector<int32_t>> clips = {std::vector<int32_t>(units.begin(), units.end())};
    OMNI_ASSIGN_OR_RETURN(std::vector<std::vector<float>> wav, VocodeBatch(clips, std::span<const Tensor>(&speaker, 1)));
    return std::move(wav[0]);
  }
  Tensor ids = Tensor::Empty({1, static_cast<int64_t>(units.size())}, DType::kI64);
  for (size_t i = 0; i < units.size(); ++i) ids.data<int64_t>()[i] = units[i];
  const Tensor wav = Forward(ids, speaker.Reshape({1, config_.spk_emb_dim}), {}, callback);
  return std::vector<float>(wav.data<float>(), wav.data<float>() + wav.numel());
}

StatusOr<std::vector<std::vector<float>>> UnitBigVgan::VocodeBatch(std::span<const std::vector<int32_t>> clips,
                                                                   std::span<const Tensor> speakers) const {
  if (clips.size() != speakers.size()) return InvalidArgument("one speaker per clip");
  for (size_t i = 0; i < clips.size(); ++i) {
    if (clips[i].empty()) return InvalidArgument(fmt::format("clip {} has no audio units", i));
    for (int32_t u : clips[i]) {
      if (u < 0 || u >= config_.num_units) {
        return InvalidArgument(fmt::format("clip {}: audio unit {} is outside [0, {})", i, u, config_.num_units));
      }
    }
    if (!speakers[i].defined() || speakers[i].numel() != config_.spk_emb_dim) {
      return InvalidArgument(fmt::format("clip {}: the speaker vector must have {} values", i, config_.spk_emb_dim));
    }
  }
  std::vector<std::vector<float>> out(clips.size());
  if (config_.causal) {
    for (size_t i = 0; i < clips.size(); ++i) out[i] = VocodeWindowed(clips[i], speakers[i]);
    return out;
  }
  // Centred: one forward per distinct length (padding would change the last samples).
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < clips.size(); ++i) {
    auto same = std::find_if(groups.begin(), groups.end(),
                             [&](const std::vector<size_t>& g) { return clips[g[0]].size() == clips[i].size(); });
    if (same == groups.end()) {
      groups.push_back({i});
    } else {
      same->push_back(i);
    }
  }
  for (const std::vector<size_t>& g : groups) {
    const int64_t rows = std::ssize(g), length = std::ssize(clips[g[0]]);
    Tensor ids = Tensor::Empty({rows, length}, DType::kI64);
    Tensor spk = Tensor::Empty({rows, config_.spk_emb_dim}, DType::kF32);
    for (int64_t r = 0; r < rows; ++r) {
      std::copy(clips[g[r]].begin(), clips[g[r]].end(), ids.data<int64_t>() + r * length);
      const Tensor sp = speakers[g[r]].To(DType::kF32);
      std::copy_n(sp.data<float>(), config_.spk_emb_dim, spk.data<float>() + r * config_.spk_emb_dim);
    }
    const Tensor wav = Forward(ids, spk);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = wav.data<float>() + r * wav.dim(1);
      out[g[r]].assign(row, row + wav.dim(1));
    }
  }
  return out;
}

std::vector<int64_t> UnitBigVgan::Windows() const {
  const int64_t context = context_.left + context_.right;
  return {64, 128, std::max<int64_t>(320, (4 * context + 63) / 64 * 64)};
}

std::vector<float> UnitBigVgan::VocodeWindow(std::span<const int32_t> units, const Tensor& speaker, int64_t window,
                                             int64_t keep_first, int64_t keep_last) const {
  Tensor ids = Tensor::Zeros({1, window}, DType::kI64);
  std::copy(units.begin(), units.end(), ids.data<int64_t>());
  const int64_t length = std::ssize(units);
  const Tensor wav = Forward(ids, speaker.To(DType::kF32).Reshape({1, config_.spk_emb_dim}),
                             std::span<const int64_t>(&length, 1));
  const int64_t spu = samples_per_unit();
  return std::vector<float>(wav.data<float>() + keep_first * spu, wav.data<float>() + keep_last * spu);
}

std::vector<float> UnitBigVgan::VocodeWindowed(std::span<const int32_t> units, const Tensor& speaker) const {
  const std::vector<int64_t> windows = Windows();
  const int64_t n = std::ssize(units), big = windows.back();
  if (n <= big) {
    const int64_t w = *std::find_if(windows.begin(), windows.end(), [n](int64_t x) { return x >= n; });
    return VocodeWindow(units, speaker, w, 0, n);
  }
  // Longer: chunks of the big window, each with the receptive field's
  // context (cut at the ends), exactly the one-shot samples.
  const int64_t chunk = big - context_.left - context_.right;
  std::vector<float> out;
  out.reserve(static_cast<size_t>(n * samples_per_unit()));
  for (int64_t first = 0; first < n; first += chunk) {
    const int64_t last = std::min(n, first + chunk);
    const int64_t lo = std::max<int64_t>(0, first - context_.left), hi = std::min(n, last + context_.right);
    const std::vector<float> part =
        VocodeWindow(units.subspan(static_cast<size_t>(lo), static_cast<size_t>(hi - lo)), speaker, big, first - lo,
                     last - lo);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

void UnitBigVgan::WarmUp() const {
  if (!config_.causal) return;
  // Any speaker vector builds the same shapes.
  const Tensor speaker = Tensor::Zeros({config_.spk_emb_dim}, DType::kF32);
  for (int64_t w : Windows()) {
    const std::vector<int32_t> units(static_cast<size_t>(w), 0);
    (void)VocodeWindow(units, speaker, w, 0, 1);
  }
}

StatusOr<std::vector<float>> UnitBigVgan::VocodeRange(std::span<const int32_t> window, int64_t window_start,
                                                      int64_t first, int64_t last, const Tensor& speaker) const {
  const int64_t window_end = window_start + std::ssize(window);
  if (window_start < 0 || first < window_start || last <= first || last > window_end) {
    return InvalidArgument(fmt::format("units [{}, {}) are not inside the window [{}, {})", first, last,
                                       window_start, window_end));
  }
  OMNI_ASSIGN_OR_RETURN(std::vector<float> wav, Vocode(window, speaker));
  const int64_t spu = samples_per_unit();
  return std::vector<float>(wav.begin() + (first - window_start) * spu, wav.begin() + (last - window_start) * spu);
}

std::vector<int16_t> ToPcm16(std::span<const float> wav) {
  std::vector<int16_t> out(wav.size());
  for (size_t i = 0; i < wav.size(); ++i) {
    // numpy's astype(int16) after * 32767: truncation toward zero.
    const float v = std::isnan(wav[i]) ? 0.f : std::clamp(wav[i], -1.f, 1.f);  // NaN has no int16
    out[i] = static_cast<int16_t>(v * 32767.f);
  }
  return out;
}

}  // namespace omni::models
