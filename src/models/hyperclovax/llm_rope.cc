#include "models/hyperclovax/llm_rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

namespace omni::models {
namespace {

std::vector<double> DefaultInvFreq(int64_t dim, double theta) {
  std::vector<double> inv(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) inv[i] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / dim);
  return inv;
}

void ApplyLlama3(const RopeScaling& s, std::vector<double>* inv) {
  const double old_ctx = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_ctx / s.low_freq_factor;
  const double high_freq_wavelen = old_ctx / s.high_freq_factor;
  for (double& f : *inv) {
    const double wavelen = 2 * std::numbers::pi / f;
    if (wavelen > low_freq_wavelen) {
      f /= s.factor;
    } else if (wavelen >= high_freq_wavelen) {  // medium band: smooth blend
      const double smooth = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      f = (1 - smooth) * f / s.factor + smooth * f;
    }
  }
}

// Returns attention_scaling.
double ApplyYarn(const RopeScaling& s, int64_t dim, double theta, int64_t max_pos, std::vector<double>* inv) {
  const double orig = static_cast<double>(s.original_max_position_embeddings > 0 ? s.original_max_position_embeddings
                                                                                  : max_pos);
  auto correction_dim = [&](double num_rotations) {
    return (dim * std::log(orig / (num_rotations * 2 * std::numbers::pi))) / (2 * std::log(theta));
  };
  double low = std::max(std::floor(correction_dim(s.beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(s.beta_slow)), static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  for (size_t i = 0; i < inv->size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = (*inv)[i];
    const double interpolation = extrapolation / s.factor;
    const double extrapolation_weight = 1 - ramp;
    (*inv)[i] = interpolation * (1 - extrapolation_weight) + extrapolation * extrapolation_weight;
  }
  if (s.attention_factor) return *s.attention_factor;
  return s.factor > 1 ? 0.1 * std::log(s.factor) + 1.0 : 1.0;
}

}  // namespace

StatusOr<ops::RopeParams> RopeParamsForConfig(const LlmConfig& config) {
  const int64_t dim = config.head_dim;
  if (dim <= 0 || dim % 2 != 0) return InvalidArgument("rope: head_dim must be even, got " + std::to_string(dim));
  const RopeScaling& s = config.rope_scaling;
  if (s.type != RopeScalingType::kNone && !(s.factor > 0)) return InvalidArgument("rope_scaling.factor must be > 0");
  std::vector<double> inv = DefaultInvFreq(dim, config.rope_theta);
  double attention_scaling = 1.0;
  switch (s.type) {
    case RopeScalingType::kNone:
    case RopeScalingType::kDynamic:
      break;
    case RopeScalingType::kLinear:
      for (double& f : inv) f /= s.factor;
      break;
    case RopeScalingType::kLlama3:
      if (s.original_max_position_embeddings <= 0 || s.high_freq_factor <= s.low_freq_factor) {
        return InvalidArgument("rope_scaling llama3 needs original_max_position_embeddings > 0 and "
                               "high_freq_factor > low_freq_factor");
      }
      ApplyLlama3(s, &inv);
      break;
    case RopeScalingType::kYarn:
      attention_scaling = ApplyYarn(s, dim, config.rope_theta, config.max_position_embeddings, &inv);
      break;
  }
  // HF keeps inv_freq in f32; round the same way so angles match.
  std::vector<float> inv_f(inv.begin(), inv.end());
  ops::RopeParams params;
  params.inv_freq = Tensor::FromFloats(inv_f, {static_cast<int64_t>(inv_f.size())});
  params.style = ops::RopeStyle::kNeox;
  params.attention_scaling = static_cast<float>(attention_scaling);
  return params;
}

}  // namespace omni::models
