// The vision processors against tools/reference/vision_processor_ref.py
// (PIL + numpy, written from the processors' definitions): the same resized
// size and grid, and the same float32 pixel values bit for bit (sha256 of
// the bytes; sampled values first, so a mismatch shows where).
#include "models/qwen25_vit/image_processor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "media/image.h"
#include "models/siglip_tatok/image_processor.h"
#include "storage/content_hash.h"

namespace omni::models {
namespace {

std::string ReadVisionFile(const std::string& name) {
  std::ifstream in(std::string(OMNI_VISION_TESTDATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void ExpectSameValues(const Tensor& t, const nlohmann::json& golden) {
  std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  ASSERT_EQ(shape, golden["shape"].get<std::vector<int64_t>>());
  const float* v = t.data<float>();
  const auto& index = golden["sample_index"];
  for (size_t i = 0; i < index.size(); ++i) {
    EXPECT_NEAR(v[index[i].get<int64_t>()], golden["sample_value"][i].get<double>(), 1e-6) << "at " << index[i];
  }
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) sum += v[i];
  EXPECT_NEAR(sum, golden["sum"].get<double>(), 1e-6 * t.numel());
  EXPECT_EQ(Sha256Hex(std::string_view(static_cast<const char*>(t.raw_data()), t.nbytes())),
            golden["sha256"].get<std::string>());
}

nlohmann::json Golden() { return nlohmann::json::parse(ReadVisionFile("processor_golden.json")); }

TEST(Qwen2VlImageProcessor, MatchesTheReferenceBitForBit) {
  const nlohmann::json golden = Golden();
  ASSERT_EQ(golden["qwen2vl"].size(), 5u);
  for (const auto& c : golden["qwen2vl"]) {
    SCOPED_TRACE(c["file"].get<std::string>());
    StatusOr<media::Image> image = media::DecodeImage(ReadVisionFile(c["file"]));
    ASSERT_TRUE(image.ok()) << image.status().ToString();
    Qwen2VlImageProcessorConfig config;
    config.min_pixels = c["min_pixels"];
    config.max_pixels = c["max_pixels"];
    StatusOr<VisionPatches> p = PreprocessImage(*image, config);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(p->resized_height, c["resized_height"].get<int64_t>());
    EXPECT_EQ(p->resized_width, c["resized_width"].get<int64_t>());
    EXPECT_EQ(p->grid_h, c["grid_h"].get<int64_t>());
    EXPECT_EQ(p->grid_w, c["grid_w"].get<int64_t>());
    ExpectSameValues(p->pixel_values, c["pixel_values"]);
  }
}

TEST(Qwen2VlImageProcessor, A448SquareGives1024PatchRows) {
  StatusOr<media::Image> image = media::DecodeImage(ReadVisionFile("square448.jpg"));
  ASSERT_TRUE(image.ok());
  StatusOr<VisionPatches> p = PreprocessImage(*image, {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->grid_h, 32);
  EXPECT_EQ(p->grid_w, 32);
  EXPECT_EQ(p->pixel_values.dim(0), 1024);  // 256 rows after the 2x2 merger
  EXPECT_EQ(p->pixel_values.dim(1), 1176);
}

TEST(SmartResize, RoundsHalfToEvenAndKeepsBounds) {
  Qwen2VlImageProcessorConfig c;
  // 42 / 28 = 1.5 -> 2 (even), 70 / 28 = 2.5 -> 2 (even), 98 / 28 = 3.5 -> 4.
  EXPECT_EQ(SmartResize(42, 2000, c)->first, 56);
  EXPECT_EQ(SmartResize(70, 2000, c)->first, 56);
  EXPECT_EQ(SmartResize(98, 2000, c)->first, 112);
  auto big = SmartResize(10000, 10000, c);
  ASSERT_TRUE(big.ok());
  EXPECT_LE(big->first * big->second, c.max_pixels);
  EXPECT_EQ(big->first % 28, 0);
  auto small = SmartResize(3, 3, c);
  ASSERT_TRUE(small.ok());
  EXPECT_GE(small->first * small->second, c.min_pixels);
  auto thin = SmartResize(1, 201, c);
  ASSERT_FALSE(thin.ok());
  EXPECT_EQ(thin.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(thin.status().message().find("aspect ratio 201:1 is over the limit of 200:1"), std::string::npos)
      << thin.status().message();
  EXPECT_TRUE(SmartResize(1, 200, c).ok());
}

TEST(Qwen2VlImageProcessorConfig, ParsesBothKeyForms) {
  auto a = ParseQwen2VlImageProcessorConfig(R"({"min_pixels": 100, "max_pixels": 2073600, "image_mean": [0.5,0.5,0.5]})",
                                            "p.json");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->max_pixels, 2073600);
  EXPECT_FLOAT_EQ(a->image_mean[1], 0.5f);
  auto b = ParseQwen2VlImageProcessorConfig(R"({"size": {"shortest_edge": 3136, "longest_edge": 1000000}})", "p.json");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->max_pixels, 1000000);
  EXPECT_FALSE(ParseQwen2VlImageProcessorConfig(R"({"patch_size": "14"})", "p.json").ok());
  EXPECT_FALSE(ParseQwen2VlImageProcessorConfig(R"({"min_pixels": 10, "max_pixels": 5})", "p.json").ok());
  EXPECT_FALSE(ParseQwen2VlImageProcessorConfig("[", "p.json").ok());
}

TEST(TaTokImageProcessor, MatchesTheReferenceBitForBit) {
  const nlohmann::json golden = Golden();
  for (const auto& c : golden["tatok"]) {
    SCOPED_TRACE(c["file"].get<std::string>());
    StatusOr<media::Image> image = media::DecodeImage(ReadVisionFile(c["file"]));
    ASSERT_TRUE(image.ok());
    ExpectSameValues(PreprocessTaTokImage(*image), c["pixel_values"]);
  }
}

}  // namespace
}  // namespace omni::models
