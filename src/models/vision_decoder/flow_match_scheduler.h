// The vision decoder's sampler: diffusers' FlowMatchEulerDiscreteScheduler
// with a static shift (the Omni model's scheduler/scheduler_config.json), the
// Euler update and autoguidance (spec/omni-model.md, "Vision decoder").
//
//   auto config = ParseFlowMatchSchedulerConfig(json, "scheduler_config.json");
//   std::vector<float> sigmas = FlowMatchSigmas(*config, 25);   // 26 values, the last 0
//   for (int i = 0; i < 25; ++i) {
//     Tensor v = Autoguide(dit1(x, DitTimestep(sigmas[i])), dit2(...), 0.75f);
//     EulerStep(&x, v, sigmas[i], sigmas[i + 1]);
//   }
//
// Sigmas: the training schedule's smallest sigma is shift(1 / N) in f32 (as
// diffusers computes it at construction); the inference sigmas are
// shift(linspace(N, sigma_min * N, steps) / N) in f64, then f32, and a final
// 0. The DiT sees the truncated timestep int(sigma * 1000) / 1000; the update
// uses the exact sigma.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tensor/tensor.h"

namespace omni::models {

struct FlowMatchSchedulerConfig {
  int64_t num_train_timesteps = 1000;
  double shift = 1.0;
};

// scheduler_config.json: num_train_timesteps, shift. Dynamic shifting (a
// shift that depends on the image size) is refused: the Omni model's
// scheduler does not use it, and a silent static schedule would be wrong.
StatusOr<FlowMatchSchedulerConfig> ParseFlowMatchSchedulerConfig(std::string_view json, std::string_view source);

// `steps` + 1 sigmas, from 1 down to the last step's, then 0. steps >= 1.
std::vector<float> FlowMatchSigmas(const FlowMatchSchedulerConfig& config, int steps);

// The timestep the DiT is given for `sigma`: int(sigma * 1000) / 1000.
float DitTimestep(float sigma);

// x += (sigma_next - sigma) * v, elementwise over f32 tensors of one shape.
void EulerStep(Tensor* x, const Tensor& v, float sigma, float sigma_next);

// Autoguidance: p1 + g * (p1 - p2), f32; p1 alone when g == 0.
Tensor Autoguide(const Tensor& p1, const Tensor& p2, float g);

}  // namespace omni::models
