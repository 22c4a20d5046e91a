#include "models/vision_decoder/flow_match_scheduler.h"

#include <cmath>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace omni::models {

StatusOr<FlowMatchSchedulerConfig> ParseFlowMatchSchedulerConfig(std::string_view json, std::string_view source) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(fmt::format("{}: not a JSON object", source));
  FlowMatchSchedulerConfig c;
  if (j.contains("num_train_timesteps")) {
    if (!j["num_train_timesteps"].is_number_integer() || j["num_train_timesteps"].get<int64_t>() < 2) {
      return InvalidArgument(fmt::format("{}: num_train_timesteps must be an integer >= 2", source));
    }
    c.num_train_timesteps = j["num_train_timesteps"].get<int64_t>();
  }
  if (j.contains("shift")) {
    if (!j["shift"].is_number() || !(j["shift"].get<double>() > 0)) {
      return InvalidArgument(fmt::format("{}: shift must be a positive number", source));
    }
    c.shift = j["shift"].get<double>();
  }
  if (j.contains("use_dynamic_shifting") && j["use_dynamic_shifting"].is_boolean() &&
      j["use_dynamic_shifting"].get<bool>()) {
    return InvalidArgument(fmt::format("{}: use_dynamic_shifting is not supported (a static shift only)", source));
  }
  return c;
}

std::vector<float> FlowMatchSigmas(const FlowMatchSchedulerConfig& config, int steps) {
  OMNI_CHECK(steps >= 1) << "steps must be >= 1";
  const double n = static_cast<double>(config.num_train_timesteps);
  // The training schedule's last sigma, shifted, in f32 as diffusers' constructor has it.
  const float s = 1.0f / static_cast<float>(config.num_train_timesteps);
  const float k = static_cast<float>(config.shift);
  const float sigma_min = k * s / (1.0f + (k - 1.0f) * s);
  const double sigma_max = 1.0;
  std::vector<float> sigmas;
  sigmas.reserve(static_cast<size_t>(steps) + 1);
  const double first = sigma_max * n, last = static_cast<double>(sigma_min) * n;
  for (int i = 0; i < steps; ++i) {
    // numpy's linspace: start + i * step, the end point exact.
    const double t = steps == 1 ? first : (i == steps - 1 ? last : first + i * ((last - first) / (steps - 1)));
    const double x = t / n;
    sigmas.push_back(static_cast<float>(config.shift * x / (1.0 + (config.shift - 1.0) * x)));
  }
  sigmas.push_back(0.0f);
  return sigmas;
}

float DitTimestep(float sigma) {
  return static_cast<float>(static_cast<int64_t>(sigma * 1000.0f)) / 1000.0f;
}

void EulerStep(Tensor* x, const Tensor& v, float sigma, float sigma_next) {
  OMNI_CHECK(x->dtype() == DType::kF32 && v.dtype() == DType::kF32 && x->numel() == v.numel());
  const float dt = sigma_next - sigma;
  float* xs = x->data<float>();
  const float* vs = v.data<float>();
  for (int64_t i = 0; i < x->numel(); ++i) xs[i] += dt * vs[i];
}

Tensor Autoguide(const Tensor& p1, const Tensor& p2, float g) {
  OMNI_CHECK(p1.dtype() == DType::kF32 && p2.dtype() == DType::kF32 && p1.numel() == p2.numel());
  Tensor out = p1.Copy();
  if (g == 0.0f) return out;
  float* o = out.data<float>();
  const float* b = p2.data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = o[i] + g * (o[i] - b[i]);
  return out;
}

}  // namespace omni::models
