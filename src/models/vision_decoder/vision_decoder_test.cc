// The vision decoder (condition path, DiT, autoguided Euler step, the whole
// loop through the VAE) against tools/reference/vision_decoder_ref.py, an
// independent PyTorch implementation, on the demo weights. Both sides round
// every projection's input to bf16 and accumulate in f32; what differs is the
// order of summation and the bf16 roundings it flips (the reference measured
// its own spread against an f64-accumulating run: DiT outputs 8e-3, the VAE
// image 0.017, rgb8 bytes 2), so the tolerances sit a little above that and
// far below what a wrong block, order or constant gives.
#include "models/vision_decoder/vision_decoder.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/config.h"

#include "models/vision_decoder/demo_vision_decoder.h"
#include "ops/shape_ops.h"
#include "storage/content_hash.h"

namespace omni::models {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  StatusOr<std::string> text = ReadTextFile(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

Tensor Floats(const nlohmann::json& values, const Shape& shape) {
  std::vector<float> v;
  for (const auto& x : values) v.push_back(x.get<float>());
  return Tensor::FromFloats(v, shape);
}

// max |got - want| over all elements; fails on a size mismatch.
double MaxDiff(const Tensor& got, const nlohmann::json& want) {
  const Tensor g = got.Contiguous();
  EXPECT_EQ(g.numel(), static_cast<int64_t>(want.size()));
  if (g.numel() != static_cast<int64_t>(want.size())) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(g.data<float>()[i] - want[i].get<double>()));
  return worst;
}

double MaxAbs(const nlohmann::json& values) {
  double m = 0;
  for (const auto& x : values) m = std::max(m, std::fabs(x.get<double>()));
  return m;
}

class VisionDecoderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string((fs::temp_directory_path() / ("vision_decoder_test." + std::to_string(::getpid()))).string());
    ASSERT_TRUE(WriteDemoVisionDecoder(DemoVisionDecoderSpec{}, *dir_).ok());
    golden_ = new nlohmann::json(
        nlohmann::json::parse(ReadFile(std::string(OMNI_VISION_DECODER_TESTDATA) + "/decoder_golden.json")));
    auto d = VisionDecoder::Load(*dir_);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    decoder_ = d->release();
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete decoder_;
    delete golden_;
    delete dir_;
  }
  static std::vector<int32_t> Ids() { return (*golden_)["ids"].get<std::vector<int32_t>>(); }
  static int64_t H() { return (*golden_)["latent_h"].get<int64_t>(); }
  static int64_t W() { return (*golden_)["latent_w"].get<int64_t>(); }

  static std::string* dir_;
  static nlohmann::json* golden_;
  static VisionDecoder* decoder_;
};
std::string* VisionDecoderTest::dir_ = nullptr;
nlohmann::json* VisionDecoderTest::golden_ = nullptr;
VisionDecoder* VisionDecoderTest::decoder_ = nullptr;

TEST_F(VisionDecoderTest, GoldensWereMadeFromTheseWeights) {
  for (const char* component : {"transformer", "transformer2", "vae", "token_embedder"}) {
    EXPECT_EQ(Sha256Hex(ReadFile(*dir_ + "/" + component + "/diffusion_pytorch_model.safetensors")),
              (*golden_)["weights_sha256"][component].get<std::string>())
        << component << ": regenerate the goldens (tools/reference/vision_decoder_ref.py)";
  }
  EXPECT_NE(decoder_->transformer2(), nullptr);
  EXPECT_EQ(decoder_->vocab_size(), 65536);
}

TEST_F(VisionDecoderTest, ConditionMatchesTheReference) {
  const VisionCondition c = decoder_->Condition(Ids(), H(), W());
  const auto& g = (*golden_)["condition"];
  // Gather, mean and bilinear resize in f32: only summation order differs.
  EXPECT_LE(MaxDiff(c.pooled, g["pooled"]), 1e-5);
  EXPECT_LE(MaxDiff(c.spatial, g["spatial"]), 1e-5);
}

TEST_F(VisionDecoderTest, DitForwardMatchesTheReference) {
  const auto& g = (*golden_)["dit"];
  const VisionCondition c = decoder_->Condition(Ids(), H(), W());
  const float sigma_dit = g["sigma_dit"].get<float>();
  EXPECT_EQ(DitTimestep(g["sigma"].get<float>()), sigma_dit);
  const Tensor vec = decoder_->transformer().Conditioning(sigma_dit, c.pooled);
  EXPECT_LE(MaxDiff(vec, g["vec"]), 2e-3 * MaxAbs(g["vec"]));
  const Tensor latent = Floats(g["latent"], {16, H(), W()});
  // Guidance 0 is the first transformer alone.
  const double out1 = MaxDiff(decoder_->Velocity(latent, c, g["sigma"].get<float>(), 0.f), g["out1"]);
  std::printf("dit out1 max |diff| %.3g of max %.3g\n", out1, MaxAbs(g["out1"]));
  EXPECT_LE(out1, 2e-2 * MaxAbs(g["out1"]));
  // transformer2 on the same input, called directly.
  const Tensor latent_tokens = ops::Permute(latent.Reshape({16, H() * W()}), {1, 0});
  const Tensor parts[] = {latent_tokens, c.spatial};
  const DitInput in{.tokens = ops::Concat(parts, 1),
                    .positions = DitPositions(H(), W(), 0, H() * W()),
                    .pooled = c.pooled,
                    .timestep = sigma_dit};
  ASSERT_NE(decoder_->transformer2(), nullptr);
  const double out2 = MaxDiff(decoder_->transformer2()->Forward(in), g["out2"]);
  std::printf("dit out2 max |diff| %.3g of max %.3g\n", out2, MaxAbs(g["out2"]));
  EXPECT_LE(out2, 2e-2 * MaxAbs(g["out2"]));
}

TEST_F(VisionDecoderTest, AutoguidedEulerStepMatchesTheReference) {
  const auto& g = (*golden_)["step"];
  const VisionCondition c = decoder_->Condition(Ids(), H(), W());
  Tensor x = Floats(g["latent"], {16, H(), W()});
  decoder_->Step(&x, c, g["sigma"].get<float>(), g["sigma_next"].get<float>(), g["guidance"].get<float>());
  const double diff = MaxDiff(x, g["x_next"]);
  std::printf("step x_next max |diff| %.3g\n", diff);
  // The velocity's spread times |sigma_next - sigma| (0.017) and (1 + g).
  EXPECT_LE(diff, 1e-3);
}

TEST_F(VisionDecoderTest, WholeLoopMatchesTheReference) {
  const auto& g = (*golden_)["pipeline"];
  VisionGenerateRequest r{.ids = Ids(),
                          .width = static_cast<int>(8 * W()),
                          .height = static_cast<int>(8 * H()),
                          .steps = g["steps"].get<int>(),
                          .guidance = g["guidance"].get<float>(),
                          .seed = 0,
                          .noise = Floats(g["noise"], {16, H(), W()})};
  VisionGenerateTimings t;
  auto image = decoder_->Generate(r, {}, &t);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(t.steps_done, r.steps);
  const std::vector<uint8_t> rgb = ImageToRgb8(*image);
  const auto& want = g["rgb8"];
  ASSERT_EQ(rgb.size(), want.size());
  int worst = 0, changed = 0;
  for (size_t i = 0; i < rgb.size(); ++i) {
    const int d = std::abs(int{rgb[i]} - want[i].get<int>());
    worst = std::max(worst, d);
    changed += d != 0;
  }
  std::printf("pipeline rgb8: max |diff| %d, %d of %zu bytes differ\n", worst, changed, rgb.size());
  EXPECT_LE(worst, 4);
  EXPECT_LE(changed, static_cast<int>(rgb.size() / 2));
}

TEST_F(VisionDecoderTest, SameSeedSameImageOtherSeedOther) {
  VisionGenerateRequest r{.ids = Ids(), .width = 64, .height = 48, .steps = 2, .guidance = 0.75f, .seed = 7};
  auto a = decoder_->Generate(r);
  auto b = decoder_->Generate(r);
  r.seed = 8;
  auto c = decoder_->Generate(r);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(ImageToRgb8(*a), ImageToRgb8(*b));
  EXPECT_NE(ImageToRgb8(*a), ImageToRgb8(*c));
}

TEST_F(VisionDecoderTest, SeededNoiseIsStandardNormal) {
  const Tensor n = SeededNoise(42, 16, 64, 64);
  double sum = 0, sq = 0;
  const float* p = n.data<float>();
  for (int64_t i = 0; i < n.numel(); ++i) {
    sum += p[i];
    sq += double{p[i]} * p[i];
  }
  const double mean = sum / n.numel(), var = sq / n.numel() - mean * mean;
  // 65536 samples: the mean's standard error is 0.004, the variance's 0.0055.
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(var, 1.0, 0.03);
  EXPECT_EQ(SeededNoise(42, 1, 2, 2).data<float>()[3], SeededNoise(42, 1, 2, 2).data<float>()[3]);
}

TEST_F(VisionDecoderTest, RefusesBadRequestsAndCancels) {
  VisionGenerateRequest r{.ids = Ids(), .width = 64, .height = 48, .steps = 3, .seed = 1};
  VisionGenerateRequest bad = r;
  bad.width = 65;
  EXPECT_EQ(decoder_->Generate(bad).status().code(), StatusCode::kInvalidArgument);
  bad = r;
  bad.steps = 0;
  EXPECT_EQ(decoder_->Generate(bad).status().code(), StatusCode::kInvalidArgument);
  bad = r;
  bad.ids.pop_back();
  EXPECT_EQ(decoder_->Generate(bad).status().code(), StatusCode::kInvalidArgument);
  bad = r;
  bad.ids[5] = 65536;
  EXPECT_EQ(decoder_->Generate(bad).status().code(), StatusCode::kInvalidArgument);
  VisionGenerateTimings t;
  auto cancelled = decoder_->Generate(r, {.after_step = [](int step) { return step < 1; }}, &t);
  EXPECT_EQ(cancelled.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(t.steps_done, 2);
}

}  // namespace
}  // namespace omni::models
