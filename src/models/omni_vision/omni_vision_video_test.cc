// The Omni vision encoder's video path (media::DecodeVideo's frames -> video
// processor -> Qwen2.5-VL ViT + projector, in chunks of 32 frames) against
// tools/reference/video_encoder_ref.py, an independent PyTorch
// implementation, on the demo weights: the frame size and grid exactly, the
// resized pixels within one level (torchvision's float resize, measured
// below), the rows within the tolerance of omni_vision_encoder_test.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "media/video.h"
#include "models/omni_vision/demo_vision_encoder.h"
#include "models/omni_vision/omni_vision_encoder.h"
#include "models/qwen25_vit/video_processor.h"
#include "storage/content_hash.h"

namespace omni::models {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string VisionData(const std::string& name) { return std::string(OMNI_VISION_TESTDATA) + "/" + name; }
std::string VideoData(const std::string& name) { return std::string(OMNI_VISION_TESTDATA) + "/../media/video/" + name; }

nlohmann::json Golden() { return nlohmann::json::parse(ReadFile(VisionData("video_golden.json"))); }

class OmniVisionVideoTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string((fs::temp_directory_path() / ("omni_video_test." + std::to_string(::getpid()))).string());
    ASSERT_TRUE(WriteDemoVisionEncoder(DemoVisionEncoderSpec{}, *dir_).ok());
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string* dir_;
};
std::string* OmniVisionVideoTest::dir_ = nullptr;

// The frames resized as video frames, their bytes in media::Image order
// (rows of RGB), against a golden case's sha256 and samples: every sample
// within one level; the count that differ at all is printed (0 when the
// sha256 matches).
void ExpectPixelsMatch(const std::vector<media::Image>& frames, const nlohmann::json& c) {
  std::string bytes;
  for (const media::Image& f : frames) bytes.append(reinterpret_cast<const char*>(f.rgb.data()), f.rgb.size());
  const auto& index = c["pixels_sample_index"];
  int differ = 0, worst = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    const int got = static_cast<uint8_t>(bytes[index[i].get<size_t>()]);
    const int want = c["pixels_sample_value"][i].get<int>();
    differ += got != want;
    worst = std::max(worst, std::abs(got - want));
  }
  EXPECT_LE(worst, 1);
  const bool exact = Sha256Hex(bytes) == c["resized_sha256"].get<std::string>();
  std::printf("%s: resized pixels %s; %d of %zu samples differ (at most by %d)\n", c["file"].get<std::string>().c_str(),
              exact ? "equal to torchvision's, bit for bit" : "differ from torchvision's", differ, index.size(),
              worst);
}

TEST(VideoProcessor, ResizesAsTorchvisionsAntialiasedBicubicWhenDownscaling) {
  const nlohmann::json golden = Golden();
  for (const auto& c : golden["resize_cases"]) {
    SCOPED_TRACE(c["file"].get<std::string>());
    auto image = media::DecodeImage(ReadFile(VisionData(c["file"].get<std::string>())));
    ASSERT_TRUE(image.ok());
    ASSERT_EQ(image->width, c["width"].get<int>());
    auto size = VideoFrameSize(image->height, image->width, 20, {}, {});
    ASSERT_TRUE(size.ok());
    ASSERT_EQ(size->first, c["resized_height"].get<int64_t>());
    ASSERT_EQ(size->second, c["resized_width"].get<int64_t>());
    ExpectPixelsMatch({ResizeBicubicAntialias(*image, static_cast<int>(size->second), static_cast<int>(size->first))},
                      c);
  }
}

TEST(VideoProcessor, FramesAreAtMost378By378ForFourTo128Frames) {
  const Qwen2VlVideoProcessorConfig video;
  for (int64_t n : {2, 4, 20, 128}) EXPECT_EQ(VideoFrameMaxPixels(n, video), 378 * 378) << n;
  // The rule's other branches: the total budget shared by many frames, and
  // its floor of 1.05 x min_pixels.
  Qwen2VlVideoProcessorConfig open = video;
  open.requested_max_pixels = int64_t{1} << 40;
  EXPECT_EQ(VideoFrameMaxPixels(20, open), 768 * 28 * 28);
  EXPECT_EQ(VideoFrameMaxPixels(1000, open), 180633);  // 90316800 / 1000 * 2
  EXPECT_EQ(VideoFrameMaxPixels(100000, open), 105369);  // int(100352 * 1.05)
  // 1920x1080: 476x280 (1920 / beta / 28 = 17.999...); 378x378: 364x364;
  // 64x48 (below min_pixels): 392x280.
  auto hd = VideoFrameSize(1080, 1920, 128, {}, video);
  ASSERT_TRUE(hd.ok());
  EXPECT_EQ(*hd, std::make_pair(int64_t{280}, int64_t{476}));
  EXPECT_EQ(*VideoFrameSize(378, 378, 20, {}, video), std::make_pair(int64_t{364}, int64_t{364}));
  EXPECT_EQ(*VideoFrameSize(48, 64, 20, {}, video), std::make_pair(int64_t{280}, int64_t{392}));
}

TEST(VideoProcessor, PairsFramesAndRepeatsTheLastOfAnOddCount) {
  // Three flat 56x56 frames of grey levels 10, 20, 30.
  std::vector<media::Image> frames;
  for (int level : {10, 20, 30}) {
    frames.push_back(
        {.width = 56, .height = 56, .rgb = std::vector<uint8_t>(56 * 56 * 3, static_cast<uint8_t>(level))});
  }
  const Qwen2VlImageProcessorConfig config;
  auto p = PatchifyVideoFrames(frames, config);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->grid_t, 2);
  EXPECT_EQ(p->grid_h, 4);
  EXPECT_EQ(p->grid_w, 4);
  ASSERT_EQ(p->pixel_values.dim(0), 2 * 16);
  ASSERT_EQ(p->pixel_values.dim(1), 1176);
  auto normalised = [&](int c, int v) {
    return (static_cast<float>(v) - config.image_mean[c] * 255.0f) / (config.image_std[c] * 255.0f);
  };
  const float* rows = p->pixel_values.data<float>();
  // Row layout (channel, frame of the pair, y, x): 196 values per frame.
  for (int c = 0; c < 3; ++c) {
    EXPECT_FLOAT_EQ(rows[c * 392], normalised(c, 10));                 // pair 0, frame 0
    EXPECT_FLOAT_EQ(rows[c * 392 + 196], normalised(c, 20));           // pair 0, frame 1
    EXPECT_FLOAT_EQ(rows[16 * 1176 + c * 392], normalised(c, 30));     // pair 1, frame 2
    EXPECT_FLOAT_EQ(rows[16 * 1176 + c * 392 + 196], normalised(c, 30));  // repeated
  }
  frames[1].width = 28;
  EXPECT_FALSE(PatchifyVideoFrames(frames, config).ok());
}

// One video: DecodeVideo, the resized frames against the reference's, then
// EncodeVideo's rows.
void ExpectVideoMatchesGolden(const OmniVisionEncoder& encoder, const nlohmann::json& c) {
  auto video = media::DecodeVideo(ReadFile(VideoData(c["file"].get<std::string>())));
  ASSERT_TRUE(video.ok()) << video.status().ToString();
  ASSERT_EQ(std::ssize(video->frames), c["frames"].get<int64_t>());
  const auto size = VideoFrameSize(video->frames[0].height, video->frames[0].width, std::ssize(video->frames),
                                   encoder.processor_config(), encoder.video_config());
  ASSERT_TRUE(size.ok());
  std::vector<media::Image> resized;
  for (const media::Image& f : video->frames) {
    resized.push_back(ResizeBicubicAntialias(f, static_cast<int>(size->second), static_cast<int>(size->first)));
  }
  ExpectPixelsMatch(resized, c);

  auto e = encoder.EncodeVideo(video->frames);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->ids.empty());
  EXPECT_EQ(e->grid.t, c["grid"][0].get<int64_t>());
  EXPECT_EQ(e->grid.h, c["grid"][1].get<int64_t>());
  EXPECT_EQ(e->grid.w, c["grid"][2].get<int64_t>());
  EXPECT_EQ(e->resized_height, c["resized_height"].get<int64_t>());
  EXPECT_EQ(e->resized_width, c["resized_width"].get<int64_t>());
  ASSERT_EQ(e->rows.dim(0), c["rows_shape"][0].get<int64_t>());
  ASSERT_EQ(e->rows.dim(1), c["rows_shape"][1].get<int64_t>());
  const float* rows = e->rows.data<float>();
  const double abs_max = c["rows_abs_max"].get<double>();
  // As omni_vision_encoder_test: 1% of the largest magnitude.
  const double tol = 1e-2 * abs_max;
  double worst = 0;
  const auto& index = c["rows_sample_index"];
  for (size_t i = 0; i < index.size(); ++i) {
    worst = std::max(worst, std::fabs(rows[index[i].get<int64_t>()] - c["rows_sample_value"][i].get<double>()));
  }
  EXPECT_LE(worst, tol);
  double worst_sum = 0;
  if (c.contains("row_sums")) {
    const int64_t width = e->rows.dim(1);
    for (int64_t r = 0; r < e->rows.dim(0); ++r) {
      double sum = 0;
      for (int64_t k = 0; k < width; ++k) sum += rows[r * width + k];
      worst_sum = std::max(worst_sum, std::fabs(sum - c["row_sums"][r].get<double>()));
    }
    // A row's sum of `width` values each within tol.
    EXPECT_LE(worst_sum, tol * static_cast<double>(width));
  }
  std::printf("%s: %zu frames, grid %lldx%lldx%lld, rows [%lld, %lld]; rows max |diff| %.3g of the largest value, "
              "row sums max |diff| %.3g\n",
              c["file"].get<std::string>().c_str(), video->frames.size(), static_cast<long long>(e->grid.t),
              static_cast<long long>(e->grid.h), static_cast<long long>(e->grid.w),
              static_cast<long long>(e->rows.dim(0)), static_cast<long long>(e->rows.dim(1)), worst / abs_max,
              worst_sum);
}

TEST_F(OmniVisionVideoTest, TenSecondsAtTwoFramesASecondGiveGridTTenAnd1400Rows) {
  const nlohmann::json golden = Golden();
  ASSERT_EQ(Sha256Hex(ReadFile(*dir_ + "/model.safetensors")), golden["weights_sha256"].get<std::string>());
  auto encoder = OmniVisionEncoder::Load(*dir_);
  ASSERT_TRUE(encoder.ok()) << encoder.status().ToString();
  const auto& c = golden["cases"][0];
  ASSERT_EQ(c["file"], "clip10s_10fps.mp4");
  // 10 s at 2 fps: 20 frames of 64x48 -> 392x280 -> grid 10 x 20 x 28,
  // 10 * 20 * 28 / 4 = 1400 rows.
  EXPECT_EQ(c["frames"], 20);
  EXPECT_EQ(c["rows_shape"][0], 1400);
  ExpectVideoMatchesGolden(**encoder, c);
}

TEST_F(OmniVisionVideoTest, A128FrameVideoIsEncodedInFourChunksOf32Frames) {
  const nlohmann::json golden = Golden();
  auto encoder = OmniVisionEncoder::Load(*dir_);
  ASSERT_TRUE(encoder.ok());
  const auto& c = golden["cases"][1];
  ASSERT_EQ(c["file"], "long70s_4fps.mkv");
  EXPECT_EQ(c["chunks"], 4);
  EXPECT_EQ((*encoder)->video_config().chunk_frames, 32);
  ExpectVideoMatchesGolden(**encoder, c);
}

TEST_F(OmniVisionVideoTest, RefusesNoFramesAndFramesOfDifferentSizes) {
  auto encoder = OmniVisionEncoder::Load(*dir_);
  ASSERT_TRUE(encoder.ok());
  EXPECT_EQ((*encoder)->EncodeVideo({}).status().code(), StatusCode::kInvalidArgument);
  std::vector<media::Image> frames = {{.width = 64, .height = 48, .rgb = std::vector<uint8_t>(64 * 48 * 3, 0)},
                                      {.width = 48, .height = 64, .rgb = std::vector<uint8_t>(64 * 48 * 3, 0)}};
  EXPECT_EQ((*encoder)->EncodeVideo(frames).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace omni::models
