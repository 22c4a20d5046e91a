// The Omni vision encoder (processor, Qwen2.5-VL ViT + projector, TA-Tok)
// against tools/reference/vision_encoder_ref.py, an independent PyTorch
// implementation, on the demo weights: continuous rows within a tolerance
// (both sides round every projection input to bf16 and accumulate in f32;
// what differs is the order of summation and the occasional bf16 rounding it
// flips), TA-Tok ids equal wherever the reference's best code beats the
// second by a clear margin.
#include "models/omni_vision/omni_vision_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "models/omni_vision/demo_vision_encoder.h"
#include "storage/content_hash.h"

namespace omni::models {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class OmniVisionEncoderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string((fs::temp_directory_path() / ("omni_vision_test." + std::to_string(::getpid()))).string());
    ASSERT_TRUE(WriteDemoVisionEncoder(DemoVisionEncoderSpec{}, *dir_).ok());
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string* dir_;
};
std::string* OmniVisionEncoderTest::dir_ = nullptr;

nlohmann::json Golden() {
  return nlohmann::json::parse(ReadFile(std::string(OMNI_VISION_TESTDATA) + "/encoder_golden.json"));
}

media::Image GoldenImage(const nlohmann::json& c) {
  auto image = media::DecodeImage(ReadFile(std::string(OMNI_VISION_TESTDATA) + "/" + c["file"].get<std::string>()));
  EXPECT_TRUE(image.ok());
  return std::move(image).value();
}

// One image's encoding against its case of the golden file.
void ExpectMatchesGolden(const VisionEncoding& e, const nlohmann::json& c) {
  EXPECT_EQ(e.grid.h, c["grid_h"].get<int64_t>());
  EXPECT_EQ(e.grid.w, c["grid_w"].get<int64_t>());
  ASSERT_EQ(e.rows.dim(0), c["rows_shape"][0].get<int64_t>());
  ASSERT_EQ(e.rows.dim(1), c["rows_shape"][1].get<int64_t>());
  const float* rows = e.rows.data<float>();
  // 1% of the largest magnitude: measured differences are about 0.1%
  // (see docs/MODELS.md, "Vision encoder"), a wrong block or order is
  // off by the magnitude itself.
  const double tol = 1e-2 * c["rows_abs_max"].get<double>();
  double worst = 0;
  if (c.contains("rows")) {
    const auto& ref = c["rows"];
    ASSERT_EQ(static_cast<int64_t>(ref.size()), e.rows.numel());
    for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(rows[i] - ref[i].get<double>()));
  }
  const auto& index = c["rows_sample_index"];
  for (size_t i = 0; i < index.size(); ++i) {
    worst = std::max(worst, std::fabs(rows[index[i].get<int64_t>()] - c["rows_sample_value"][i].get<double>()));
  }
  EXPECT_LE(worst, tol);
  std::printf("%s: rows max |diff| %.3g (%.3g of the largest value)\n", c["file"].get<std::string>().c_str(), worst,
              worst / c["rows_abs_max"].get<double>());
  // Ids where the reference's choice is clear.
  const auto& ids = c["ids"];
  ASSERT_EQ(e.ids.size(), ids.size());
  int compared = 0, equal = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (c["id_margin"][i].get<double>() < 2e-3) continue;
    ++compared;
    equal += e.ids[i] == ids[i].get<int32_t>();
  }
  EXPECT_EQ(equal, compared);
  EXPECT_GE(compared, 300);
  std::printf("%s: ids equal %d of %d compared (margin >= 2e-3)\n", c["file"].get<std::string>().c_str(), equal,
              compared);
}

TEST_F(OmniVisionEncoderTest, MatchesThePyTorchReference) {
  const nlohmann::json golden = Golden();
  // The goldens were made from these very weights.
  ASSERT_EQ(Sha256Hex(ReadFile(*dir_ + "/model.safetensors")), golden["weights_sha256"].get<std::string>());
  auto encoder = OmniVisionEncoder::Load(*dir_);
  ASSERT_TRUE(encoder.ok()) << encoder.status().ToString();
  EXPECT_EQ((*encoder)->output_width(), 128);
  EXPECT_EQ((*encoder)->num_ids(), 729);
  for (const auto& c : golden["cases"]) {
    SCOPED_TRACE(c["file"].get<std::string>());
    auto e = (*encoder)->Encode(GoldenImage(c));
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ExpectMatchesGolden(*e, c);
  }
}

// The encoder server's batching: every golden image (of different sizes) in
// one forward per branch gives each image what the reference gives it, and
// what the image alone gives (the same ids; rows up to summation order).
TEST_F(OmniVisionEncoderTest, ABatchOfImagesOfDifferentSizesMatchesTheReferenceAndEachImageAlone) {
  const nlohmann::json golden = Golden();
  auto encoder = OmniVisionEncoder::Load(*dir_);
  ASSERT_TRUE(encoder.ok());
  std::vector<media::Image> images;
  for (const auto& c : golden["cases"]) images.push_back(GoldenImage(c));
  ASSERT_GE(images.size(), 3u);
  std::vector<const media::Image*> batch;
  for (const media::Image& image : images) batch.push_back(&image);
  auto batched = (*encoder)->EncodeBatch(batch);
  ASSERT_TRUE(batched.ok()) << batched.status().ToString();
  ASSERT_EQ(batched->size(), images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const auto& c = golden["cases"][i];
    SCOPED_TRACE(c["file"].get<std::string>());
    ExpectMatchesGolden((*batched)[i], c);
    auto alone = (*encoder)->Encode(images[i]);
    ASSERT_TRUE(alone.ok());
    EXPECT_EQ((*batched)[i].ids, alone->ids);
    ASSERT_EQ((*batched)[i].rows.numel(), alone->rows.numel());
    double worst = 0;
    for (int64_t k = 0; k < alone->rows.numel(); ++k) {
      worst = std::max<double>(worst, std::fabs((*batched)[i].rows.data<float>()[k] - alone->rows.data<float>()[k]));
    }
    // A batch's GEMMs have more rows, so the library may block their sums
    // differently and flip an intermediate's bf16 rounding: measured up to
    // 0.4% of the largest value, as far as either is from the reference.
    EXPECT_LE(worst, 1e-2 * c["rows_abs_max"].get<double>());
    std::printf("%s: batched vs alone: rows max |diff| %.3g of the largest value, ids equal\n",
                c["file"].get<std::string>().c_str(), worst / c["rows_abs_max"].get<double>());
  }
}

TEST_F(OmniVisionEncoderTest, A448SquareGives256RowsAnd729Ids) {
  auto encoder = OmniVisionEncoder::Load(*dir_);
  ASSERT_TRUE(encoder.ok());
  auto image = media::DecodeImage(ReadFile(std::string(OMNI_VISION_TESTDATA) + "/square448.jpg"));
  ASSERT_TRUE(image.ok());
  auto e = (*encoder)->Encode(*image);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->rows.dim(0), 256);
  EXPECT_EQ(e->ids.size(), 729u);
  for (int32_t id : e->ids) ASSERT_TRUE(id >= 0 && id < 512);
}

TEST_F(OmniVisionEncoderTest, RefusesAFolderWithoutItsWeights) {
  const std::string empty = *dir_ + "_empty";
  fs::create_directories(empty);
  fs::copy_file(*dir_ + "/config.json", empty + "/config.json");
  auto missing = OmniVisionEncoder::Load(empty);
  EXPECT_FALSE(missing.ok());
  fs::remove_all(empty);
}

}  // namespace
}  // namespace omni::models
