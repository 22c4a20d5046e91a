#include "models/audio_decoder/ecapa_tdnn.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "models/layers/weights.h"
#include "ops/linear.h"

namespace omni::models {
namespace {

constexpr int kScale = 8;          // Res2 groups
constexpr double kBnEps = 1e-5;    // nn.BatchNorm1d's default

// An eval-mode BatchNorm1d as a per-channel affine map.
struct BatchNorm {
  std::vector<float> scale, shift;

  static StatusOr<BatchNorm> Load(const Checkpoint& ckpt, const std::string& p, int64_t channels) {
    std::vector<std::vector<float>> v;
    for (const char* name : {".weight", ".bias", ".running_mean", ".running_var"}) {
      OMNI_ASSIGN_OR_RETURN(Tensor t, layers::LoadVector(ckpt, p + name, channels));
      const Tensor f = t.To(DType::kF32);
      v.emplace_back(f.data<float>(), f.data<float>() + channels);
    }
    BatchNorm bn;
    for (int64_t c = 0; c < channels; ++c) {
      const double s = v[0][c] / std::sqrt(static_cast<double>(v[3][c]) + kBnEps);
      bn.scale.push_back(static_cast<float>(s));
      bn.shift.push_back(static_cast<float>(v[1][c] - v[2][c] * s));
    }
    return bn;
  }
  // rows of x [rows, channels] in place, optionally after a ReLU.
  void Apply(float* x, int64_t rows, bool relu_first) const {
    const int64_t c = std::ssize(scale);
    for (int64_t r = 0; r < rows; ++r) {
      float* row = x + r * c;
      for (int64_t i = 0; i < c; ++i) {
        const float v = relu_first ? std::max(row[i], 0.0f) : row[i];
        row[i] = v * scale[i] + shift[i];
      }
    }
  }
};

// A Conv1d over time-major rows: [T, in] -> [T, out], zero padding
// dilation * (kernel - 1) / 2 on each side (the length is kept), as one
// Linear over the im2col rows [T, kernel * in] (tap-major).
struct TimeConv {
  ops::Linear linear;
  int64_t in = 0, kernel = 1, dilation = 1;

  static StatusOr<TimeConv> Load(const Checkpoint& ckpt, const std::string& p, int64_t in, int64_t out,
                                 int64_t kernel, int64_t dilation, bool bias) {
    OMNI_ASSIGN_OR_RETURN(Tensor w, layers::LoadFloatWeight(ckpt, p + ".weight", {out, in, kernel}));
    const Tensor wf = w.To(DType::kF32).Contiguous();
    Tensor packed = Tensor::Empty({out, kernel * in}, DType::kF32);
    const float* src = wf.data<float>();
    float* dst = packed.data<float>();
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        for (int64_t j = 0; j < kernel; ++j) dst[(o * kernel + j) * in + i] = src[(o * in + i) * kernel + j];
      }
    }
    Tensor b;
    if (bias) {
      OMNI_ASSIGN_OR_RETURN(b, layers::LoadVector(ckpt, p + ".bias", out));
      b = b.To(DType::kF32);
    }
    TimeConv c;
    c.linear = ops::Linear(packed, b);
    c.in = in;
    c.kernel = kernel;
    c.dilation = dilation;
    return c;
  }

  Tensor Forward(const Tensor& x) const {
    if (kernel == 1) return linear.Forward(x);
    const int64_t t_len = x.dim(0), pad = dilation * (kernel - 1) / 2;
    Tensor cols = Tensor::Zeros({t_len, kernel * in}, DType::kF32);
    const float* src = x.data<float>();
    float* dst = cols.data<float>();
    for (int64_t t = 0; t < t_len; ++t) {
      for (int64_t j = 0; j < kernel; ++j) {
        const int64_t s = t + j * dilation - pad;
        if (s >= 0 && s < t_len) std::copy(src + s * in, src + (s + 1) * in, dst + (t * kernel + j) * in);
      }
    }
    return linear.Forward(cols);
  }
};

// Conv1d, ReLU, BatchNorm.
struct ConvReluBn {
  TimeConv conv;
  BatchNorm bn;

  static StatusOr<ConvReluBn> Load(const Checkpoint& ckpt, const std::string& conv_name, const std::string& bn_name,
                                   int64_t in, int64_t out, int64_t kernel, int64_t dilation) {
    ConvReluBn c;
    // OmniServe's convolutions here have no bias; a checkpoint that has one gets it.
    OMNI_ASSIGN_OR_RETURN(c.conv, TimeConv::Load(ckpt, conv_name, in, out, kernel, dilation,
                                                 ckpt.Contains(conv_name + ".bias")));
    OMNI_ASSIGN_OR_RETURN(c.bn, BatchNorm::Load(ckpt, bn_name, out));
    return c;
  }
  Tensor Forward(const Tensor& x) const {
    Tensor y = conv.Forward(x);
    bn.Apply(y.data<float>(), y.dim(0), /*relu_first=*/true);
    return y;
  }
};

// A small dense layer on one vector: y = W x + b, W [out, in].
struct Dense {
  std::vector<float> w, b;
  int64_t in = 0, out = 0;

  static StatusOr<Dense> Load(const Checkpoint& ckpt, const std::string& p, int64_t in, int64_t out,
                              bool conv_shaped) {
    OMNI_ASSIGN_OR_RETURN(Tensor w, layers::LoadFloatWeight(ckpt, p + ".weight",
                                                            conv_shaped ? Shape{out, in, 1} : Shape{out, in}));
    OMNI_ASSIGN_OR_RETURN(Tensor b, layers::LoadVector(ckpt, p + ".bias", out));
    const Tensor wf = w.To(DType::kF32).Contiguous(), bf = b.To(DType::kF32);
    Dense d;
    d.w.assign(wf.data<float>(), wf.data<float>() + in * out);
    d.b.assign(bf.data<float>(), bf.data<float>() + out);
    d.in = in;
    d.out = out;
    return d;
  }
  std::vector<float> Forward(std::span<const float> x) const {
    std::vector<float> y(b);
    for (int64_t o = 0; o < out; ++o) {
      const float* row = &w[static_cast<size_t>(o * in)];
      double sum = 0;
      for (int64_t i = 0; i < in; ++i) sum += static_cast<double>(row[i]) * x[i];
      y[o] += static_cast<float>(sum);
    }
    return y;
  }
};

// The out-channel count of a checkpoint's tensor, for sizes the config
// does not carry.
StatusOr<int64_t> Rows(const Checkpoint& ckpt, const std::string& name) {
  const SafetensorsTensorInfo* info = ckpt.Info(name);
  if (info == nullptr) return NotFound(fmt::format("{}: no tensor {}", ckpt.dir(), name));
  if (info->shape.empty()) return InvalidArgument(fmt::format("{}: {} is a scalar", ckpt.dir(), name));
  return info->shape[0];
}

struct SeRes2Block {
  ConvReluBn conv1, conv2;
  std::vector<ConvReluBn> res2;  // kScale - 1 groups
  Dense se1, se2;
  int64_t width = 0;

  Tensor Forward(const Tensor& x) const {
    const Tensor a = conv1.Forward(x);
    const int64_t t_len = a.dim(0), h = a.dim(1);
    Tensor mixed = Tensor::Empty({t_len, h}, DType::kF32);
    const float* ap = a.data<float>();
    float* mp = mixed.data<float>();
    Tensor group = Tensor::Empty({t_len, width}, DType::kF32), prev;
    for (int g = 0; g < kScale; ++g) {
      float* gp = group.data<float>();
      for (int64_t t = 0; t < t_len; ++t) {
        const float* src = ap + t * h + g * width;
        float* dst = gp + t * width;
        for (int64_t i = 0; i < width; ++i) dst[i] = src[i] + (g > 0 && g < kScale - 1 ? prev.data<float>()[t * width + i] : 0.f);
      }
      const Tensor out = g < kScale - 1 ? res2[static_cast<size_t>(g)].Forward(group) : group;
      for (int64_t t = 0; t < t_len; ++t) {
        std::copy(out.data<float>() + t * width, out.data<float>() + (t + 1) * width, mp + t * h + g * width);
      }
      if (g < kScale - 1) prev = out;
    }
    Tensor y = conv2.Forward(mixed);
    // Squeeze-excitation: each channel scaled by a gate from the time means.
    float* yp = y.data<float>();
    std::vector<double> mean(static_cast<size_t>(h), 0.0);
    for (int64_t t = 0; t < t_len; ++t) {
      for (int64_t c = 0; c < h; ++c) mean[c] += yp[t * h + c];
    }
    std::vector<float> m(static_cast<size_t>(h));
    for (int64_t c = 0; c < h; ++c) m[c] = static_cast<float>(mean[c] / static_cast<double>(t_len));
    std::vector<float> s = se1.Forward(m);
    for (float& v : s) v = std::max(v, 0.0f);
    std::vector<float> gate = se2.Forward(s);
    for (float& v : gate) v = 1.0f / (1.0f + std::exp(-v));
    const float* xp = x.data<float>();
    for (int64_t t = 0; t < t_len; ++t) {
      for (int64_t c = 0; c < h; ++c) yp[t * h + c] = yp[t * h + c] * gate[c] + xp[t * h + c];
    }
    return y;
  }
};

}  // namespace

struct EcapaTdnn::Impl {
  EcapaTdnnConfig config;
  int64_t hidden = 0, emb_dim = 0;
  ConvReluBn layer1;
  std::vector<SeRes2Block> blocks;  // layer2..layer4
  TimeConv conv;                    // 3H -> 3H, bias
  TimeConv att1, att2;              // pooling.linear1 (3H or 9H -> A), linear2 (A -> 3H)
  BatchNorm bn, bn_out;
  Dense linear;
};

EcapaTdnn::EcapaTdnn() : impl_(std::make_unique<Impl>()) {}
EcapaTdnn::~EcapaTdnn() = default;
int64_t EcapaTdnn::hidden() const { return impl_->hidden; }
int64_t EcapaTdnn::emb_dim() const { return impl_->emb_dim; }

StatusOr<std::unique_ptr<EcapaTdnn>> EcapaTdnn::Load(const Checkpoint& ckpt, const std::string& p,
                                                     const EcapaTdnnConfig& config) {
  std::unique_ptr<EcapaTdnn> model(new EcapaTdnn());
  Impl& m = *model->impl_;
  m.config = config;
  OMNI_ASSIGN_OR_RETURN(m.hidden, Rows(ckpt, p + "layer1.conv.weight"));
  OMNI_ASSIGN_OR_RETURN(m.emb_dim, Rows(ckpt, p + "linear.weight"));
  const int64_t h = m.hidden;
  if (h % kScale != 0) {
    return InvalidArgument(fmt::format("{}: {}layer1 has {} channels, not a multiple of {}", ckpt.dir(), p, h, kScale));
  }
  OMNI_ASSIGN_OR_RETURN(m.layer1, ConvReluBn::Load(ckpt, p + "layer1.conv", p + "layer1.bn", config.num_mels, h, 5, 1));
  for (int l = 2; l <= 4; ++l) {
    const std::string b = fmt::format("{}layer{}.", p, l);
    if (ckpt.Contains(b + "shortcut.weight")) {
      return InvalidArgument(fmt::format("{}: {}shortcut: blocks that change width are not supported", ckpt.dir(), b));
    }
    SeRes2Block block;
    block.width = h / kScale;
    OMNI_ASSIGN_OR_RETURN(block.conv1, ConvReluBn::Load(ckpt, b + "Conv1dReluBn1.conv", b + "Conv1dReluBn1.bn", h, h, 1, 1));
    for (int g = 0; g < kScale - 1; ++g) {
      OMNI_ASSIGN_OR_RETURN(ConvReluBn c, ConvReluBn::Load(ckpt, fmt::format("{}Res2Conv1dReluBn.convs.{}", b, g),
                                                           fmt::format("{}Res2Conv1dReluBn.bns.{}", b, g),
                                                           block.width, block.width, 3, l));
      block.res2.push_back(std::move(c));
    }
    OMNI_ASSIGN_OR_RETURN(block.conv2, ConvReluBn::Load(ckpt, b + "Conv1dReluBn2.conv", b + "Conv1dReluBn2.bn", h, h, 1, 1));
    OMNI_ASSIGN_OR_RETURN(const int64_t bottleneck, Rows(ckpt, b + "SE_Connect.linear1.weight"));
    OMNI_ASSIGN_OR_RETURN(block.se1, Dense::Load(ckpt, b + "SE_Connect.linear1", h, bottleneck, false));
    OMNI_ASSIGN_OR_RETURN(block.se2, Dense::Load(ckpt, b + "SE_Connect.linear2", bottleneck, h, false));
    m.blocks.push_back(std::move(block));
  }
  OMNI_ASSIGN_OR_RETURN(m.conv, TimeConv::Load(ckpt, p + "conv", 3 * h, 3 * h, 1, 1, true));
  OMNI_ASSIGN_OR_RETURN(const int64_t att, Rows(ckpt, p + "pooling.linear1.weight"));
  OMNI_ASSIGN_OR_RETURN(m.att1, TimeConv::Load(ckpt, p + "pooling.linear1", (config.global_context_att ? 9 : 3) * h,
                                               att, 1, 1, true));
  OMNI_ASSIGN_OR_RETURN(m.att2, TimeConv::Load(ckpt, p + "pooling.linear2", att, 3 * h, 1, 1, true));
  OMNI_ASSIGN_OR_RETURN(m.bn, BatchNorm::Load(ckpt, p + "bn", 6 * h));
  OMNI_ASSIGN_OR_RETURN(m.linear, Dense::Load(ckpt, p + "linear", 6 * h, m.emb_dim, false));
  OMNI_ASSIGN_OR_RETURN(m.bn_out, BatchNorm::Load(ckpt, p + "bn_out", m.emb_dim));
  return model;
}

StatusOr<Tensor> EcapaTdnn::Embed(const Tensor& mel, const ActivationCallback* callback) const {
  const Impl& m = *impl_;
  if (mel.rank() != 2 || mel.dim(0) != m.config.num_mels || mel.dim(1) < 2) {
    return InvalidArgument(fmt::format("the speaker encoder needs a [{}, T >= 2] log-mel, got {}", m.config.num_mels,
                                       ShapeToString(mel.shape())));
  }
  auto seen = [&](std::string_view name, const Tensor& t) {
    if (callback != nullptr) (*callback)(name, t);
  };
  const Tensor x = mel.To(DType::kF32).Transpose(0, 1).Contiguous();  // [T, num_mels]
  const int64_t t_len = x.dim(0), h = m.hidden, c3 = 3 * h;
  const Tensor out1 = m.layer1.Forward(x);
  seen("layer1", out1);
  Tensor cat = Tensor::Empty({t_len, c3}, DType::kF32);
  Tensor prev = out1;
  for (size_t l = 0; l < m.blocks.size(); ++l) {
    prev = m.blocks[l].Forward(prev);
    seen(fmt::format("layer{}", l + 2), prev);
    for (int64_t t = 0; t < t_len; ++t) {
      std::copy(prev.data<float>() + t * h, prev.data<float>() + (t + 1) * h, cat.data<float>() + t * c3 + l * h);
    }
  }
  Tensor y = m.conv.Forward(cat);
  float* yp = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) yp[i] = std::max(yp[i], 0.0f);
  seen("conv", y);

  // Attentive statistics pooling.
  Tensor att_in = y;
  std::vector<double> mean(static_cast<size_t>(c3), 0.0), sq(static_cast<size_t>(c3), 0.0);
  if (m.config.global_context_att) {
    for (int64_t t = 0; t < t_len; ++t) {
      for (int64_t c = 0; c < c3; ++c) mean[c] += yp[t * c3 + c];
    }
    for (int64_t c = 0; c < c3; ++c) mean[c] /= static_cast<double>(t_len);
    for (int64_t t = 0; t < t_len; ++t) {
      for (int64_t c = 0; c < c3; ++c) sq[c] += (yp[t * c3 + c] - mean[c]) * (yp[t * c3 + c] - mean[c]);
    }
    att_in = Tensor::Empty({t_len, 3 * c3}, DType::kF32);
    float* ap = att_in.data<float>();
    for (int64_t t = 0; t < t_len; ++t) {
      for (int64_t c = 0; c < c3; ++c) {
        ap[t * 3 * c3 + c] = yp[t * c3 + c];
        ap[t * 3 * c3 + c3 + c] = static_cast<float>(mean[c]);
        ap[t * 3 * c3 + 2 * c3 + c] = static_cast<float>(std::sqrt(sq[c] / static_cast<double>(t_len - 1) + 1e-10));
      }
    }
  }
  Tensor alpha = m.att1.Forward(att_in);
  float* al = alpha.data<float>();
  for (int64_t i = 0; i < alpha.numel(); ++i) al[i] = std::tanh(al[i]);
  Tensor logits = m.att2.Forward(alpha);  // [T, 3H]
  const float* lp = logits.data<float>();
  std::vector<float> pooled(static_cast<size_t>(2 * c3));
  for (int64_t c = 0; c < c3; ++c) {
    float top = -INFINITY;
    for (int64_t t = 0; t < t_len; ++t) top = std::max(top, lp[t * c3 + c]);
    double z = 0, s1 = 0, s2 = 0;
    for (int64_t t = 0; t < t_len; ++t) {
      const double w = std::exp(static_cast<double>(lp[t * c3 + c]) - top);
      const double v = yp[t * c3 + c];
      z += w;
      s1 += w * v;
      s2 += w * v * v;
    }
    const double mu = s1 / z;
    pooled[c] = static_cast<float>(mu);
    pooled[c3 + c] = static_cast<float>(std::sqrt(std::max(s2 / z - mu * mu, 1e-9)));
  }
  seen("pooled", Tensor::FromFloats(pooled, {2 * c3}));
  m.bn.Apply(pooled.data(), 1, false);
  std::vector<float> e = m.linear.Forward(pooled);
  m.bn_out.Apply(e.data(), 1, false);
  return Tensor::FromFloats(e, {m.emb_dim});
}

}  // namespace omni::models
