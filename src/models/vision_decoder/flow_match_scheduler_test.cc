// The vision decoder's sampler against tools/reference/flow_match_ref.py, an
// independent numpy/torch implementation of diffusers' FlowMatchEulerDiscrete
// schedule with a static shift: the sigmas (f32, to the last bit but for
// linspace's f64 rounding), the DiT's truncated timesteps, and one Euler
// update with autoguidance.
#include "models/vision_decoder/flow_match_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

namespace omni::models {
namespace {

nlohmann::json Golden() {
  std::ifstream in(std::string(OMNI_VISION_DECODER_TESTDATA) + "/scheduler_golden.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

Tensor FromJson(const nlohmann::json& values, const Shape& shape) {
  std::vector<float> v;
  for (const auto& x : values) v.push_back(x.get<float>());
  return Tensor::FromFloats(v, shape);
}

TEST(FlowMatchSchedulerTest, SigmasAndTimestepsMatchTheReference) {
  const nlohmann::json golden = Golden();
  ASSERT_EQ(golden["schedules"].size(), 12u);
  for (const auto& c : golden["schedules"]) {
    const FlowMatchSchedulerConfig config{.num_train_timesteps = c["num_train_timesteps"].get<int64_t>(),
                                          .shift = c["shift"].get<double>()};
    const int steps = c["steps"].get<int>();
    SCOPED_TRACE(testing::Message() << "shift " << config.shift << ", " << steps << " steps");
    const std::vector<float> sigmas = FlowMatchSigmas(config, steps);
    ASSERT_EQ(sigmas.size(), c["sigmas"].size());
    for (size_t i = 0; i < sigmas.size(); ++i) {
      // One f32 ulp at most: both round the same f64 value to f32.
      EXPECT_NEAR(sigmas[i], c["sigmas"][i].get<double>(), 1.2e-7) << i;
    }
    EXPECT_EQ(sigmas.front(), 1.0f);
    EXPECT_EQ(sigmas.back(), 0.0f);
    for (size_t i = 0; i + 1 < sigmas.size(); ++i) {
      EXPECT_NEAR(DitTimestep(sigmas[i]), c["dit_timesteps"][i].get<double>(), 1e-7) << i;
    }
  }
}

TEST(FlowMatchSchedulerTest, AnEulerStepWithAutoguidanceMatchesTheReference) {
  const nlohmann::json s = Golden()["euler_step"];
  Shape shape;
  for (const auto& d : s["shape"]) shape.push_back(d.get<int64_t>());
  Tensor x = FromJson(s["x"], shape);
  const Tensor pred = Autoguide(FromJson(s["p1"], shape), FromJson(s["p2"], shape), s["g"].get<float>());
  const Tensor want_pred = FromJson(s["pred"], shape);
  for (int64_t i = 0; i < pred.numel(); ++i) EXPECT_NEAR(pred.data<float>()[i], want_pred.data<float>()[i], 1e-6);
  EulerStep(&x, pred, s["sigma"].get<float>(), s["sigma_next"].get<float>());
  const Tensor want = FromJson(s["x_next"], shape);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(x.data<float>()[i], want.data<float>()[i], 1e-6);
  // g == 0 is the first transformer alone.
  const Tensor p1 = FromJson(s["p1"], shape);
  const Tensor alone = Autoguide(p1, FromJson(s["p2"], shape), 0.0f);
  for (int64_t i = 0; i < p1.numel(); ++i) EXPECT_EQ(alone.data<float>()[i], p1.data<float>()[i]);
}

TEST(FlowMatchSchedulerTest, TheConfigIsReadAndDynamicShiftingRefused) {
  auto c = ParseFlowMatchSchedulerConfig(R"({"_class_name": "FlowMatchEulerDiscreteScheduler",
                                            "num_train_timesteps": 1000, "shift": 3.0})",
                                         "scheduler_config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_train_timesteps, 1000);
  EXPECT_EQ(c->shift, 3.0);
  EXPECT_EQ(ParseFlowMatchSchedulerConfig("{}", "s").value().shift, 1.0);
  auto dynamic = ParseFlowMatchSchedulerConfig(R"({"use_dynamic_shifting": true})", "scheduler_config.json");
  ASSERT_FALSE(dynamic.ok());
  EXPECT_NE(dynamic.status().message().find("use_dynamic_shifting"), std::string::npos);
  EXPECT_FALSE(ParseFlowMatchSchedulerConfig(R"({"shift": -1})", "s").ok());
  EXPECT_FALSE(ParseFlowMatchSchedulerConfig(R"({"num_train_timesteps": "1000"})", "s").ok());
  EXPECT_FALSE(ParseFlowMatchSchedulerConfig("[", "s").ok());
}

}  // namespace
}  // namespace omni::models
