// The encoder service with videos: a real demo vision encoder (its
// EncodeVideo behind a counting wrapper), a file:// store, the video
// fixtures of tests/data/media/video sent inline.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "modelfile/tensor_object.h"
#include "models/omni_vision/demo_vision_encoder.h"
#include "services/encoder/encoder_service.h"
#include "storage/content_hash.h"
#include "storage/fs_io.h"
#include "storage/fs_store.h"

namespace omni::encoder {
namespace {

namespace fs = std::filesystem;

std::string Video(const std::string& name) {
  const std::string path = std::string(OMNI_MEDIA_TESTDATA) + "/video/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string DataUrl(const std::string& bytes, const std::string& type) {
  return "data:" + type + ";base64," + Base64Encode(bytes);
}

std::string MetaValue(const ObjectMetadata& meta, std::string_view name) {
  for (const auto& [k, v] : meta) {
    if (k == name) return v;
  }
  return {};
}

class EncoderVideoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("encoder_video_test." + std::to_string(::getpid()));
    fs::create_directories(dir_ / "store");
    ASSERT_TRUE(models::WriteDemoVisionEncoder({}, (dir_ / "ve").string()).ok());
    auto model = models::OmniVisionEncoder::Load((dir_ / "ve").string());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = std::move(model).value();
    store_uri_ = PathToFileUrl((dir_ / "store").string());
    auto store = FsStore::Open(store_uri_, {.sync = false});
    ASSERT_TRUE(store.ok());
    store_ = std::move(store).value();
    fetcher_ = std::make_unique<media::MediaFetcher>(media::MediaFetchOptions{.max_bytes = 1 << 20}, nullptr);
    service_ = std::make_unique<EncoderService>(
        Options(),
        ImageEncodeFn([this](const media::Image& image) {
          ++image_calls_;
          return model_->Encode(image);
        }),
        VideoEncodeFn([this](std::span<const media::Image> frames) {
          ++video_calls_;
          return model_->EncodeVideo(frames);
        }));
  }
  void TearDown() override { fs::remove_all(dir_); }

  EncoderServiceOptions Options() {
    return {.model_id = "omni-ve", .store = store_.get(), .store_uri = store_uri_, .fetcher = fetcher_.get(),
            .video_decode = {.max_seconds = 20}, .metrics = &metrics_};
  }

  fs::path dir_;
  std::string store_uri_;
  std::unique_ptr<models::OmniVisionEncoder> model_;
  std::unique_ptr<FsStore> store_;
  std::unique_ptr<media::MediaFetcher> fetcher_;
  MetricsRegistry metrics_;
  std::unique_ptr<EncoderService> service_;
  std::atomic<int> image_calls_{0}, video_calls_{0};
};

TEST_F(EncoderVideoTest, ATenSecondMp4Gives20FramesGrid10x20x28And1400RowsOnce) {
  const std::string mp4 = Video("clip10s_10fps.mp4");
  auto first = service_->Encode({.model = "omni-ve", .url = DataUrl(mp4, "video/mp4")});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->cached);
  EXPECT_EQ(first->type, "video");
  EXPECT_EQ(first->key, "emb/omni-ve/" + Sha256Hex(mp4) + ".safetensors");
  EXPECT_EQ(first->mime, "video/mp4");
  EXPECT_DOUBLE_EQ(first->seconds, 10.0);
  EXPECT_EQ(first->frames, 20);
  EXPECT_EQ(first->image_width, 64);
  EXPECT_EQ(first->image_height, 48);
  EXPECT_EQ(first->resized_width, 392);
  EXPECT_EQ(first->resized_height, 280);
  EXPECT_EQ(first->grid.t, 10);
  EXPECT_EQ(first->grid.h, 20);
  EXPECT_EQ(first->grid.w, 28);
  // t * h * w / 4 continuous rows, no ids.
  EXPECT_EQ(first->rows, 10 * 20 * 28 / 4);
  EXPECT_EQ(first->width, 128);
  EXPECT_EQ(first->ids, 0);
  auto object = GetEmbeddingObject(*store_, first->key);
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ(object->rows.dim(0), 1400);
  EXPECT_EQ(object->rows.dim(1), 128);
  EXPECT_EQ(object->ids.dim(0), 0);
  EXPECT_EQ(MetaValue(object->metadata, "media-type"), "video");
  EXPECT_EQ(MetaValue(object->metadata, "filename"), "video.mp4");
  EXPECT_EQ(MetaValue(object->metadata, "frames"), "20");
  auto head = store_->Head(first->key);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(MetaValue(head->metadata, "seconds"), "10.000000");
  EXPECT_EQ(MetaValue(head->metadata, "grid-t"), "10");
  const nlohmann::json answer = nlohmann::json::parse(EncodeResultJson(*first, "omni-ve"));
  EXPECT_EQ(answer["media"]["type"], "video");
  EXPECT_EQ(answer["media"]["mime"], "video/mp4");
  EXPECT_DOUBLE_EQ(answer["media"]["seconds"].get<double>(), 10.0);
  EXPECT_EQ(answer["media"]["frames"], 20);
  EXPECT_EQ(answer["media"]["width"], 64);
  EXPECT_EQ(answer["media"]["height"], 48);
  EXPECT_EQ(answer["grid"], (nlohmann::json{{"t", 10}, {"h", 20}, {"w", 28}}));
  EXPECT_EQ(answer["rows"], 1400);

  // Again, as OmniServe's /process_image_or_video form: from the store.
  auto parsed = ParseOmniServeEncodeRequest(nlohmann::json{{"media_base64", Base64Encode(mp4)}}.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto again = service_->Encode(*parsed);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(again->type, "video");
  EXPECT_EQ(again->rows, 1400);
  EXPECT_EQ(again->frames, 20);
  EXPECT_DOUBLE_EQ(again->seconds, 10.0);
  EXPECT_EQ(again->grid.t, 10);
  EXPECT_EQ(again->image_width, 64);
  EXPECT_EQ(again->resized_height, 280);
  EXPECT_EQ(EncodeResultJson(*again, "omni-ve").find("\"cached\":true") != std::string::npos, true);
  EXPECT_EQ(video_calls_.load(), 1);
  EXPECT_EQ(image_calls_.load(), 0);
}

TEST_F(EncoderVideoTest, AnImageUrlHoldingAVideoIsEncodedAsTheVideoItIs) {
  // 1 s at 25 fps: the reference's 4-frame minimum, grid t 2.
  auto r = service_->Encode({.url = DataUrl(Video("clip1s_25fps.webm"), "image/jpeg")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->type, "video");
  EXPECT_EQ(r->mime, "video/webm");
  EXPECT_EQ(r->frames, 4);
  EXPECT_EQ(r->grid.t, 2);
  EXPECT_EQ(r->rows, r->grid.t * r->grid.h * r->grid.w / 4);
  EXPECT_EQ(video_calls_.load(), 1);
}

TEST_F(EncoderVideoTest, RefusesAVideoWithoutAVideoStreamAndAnOverlongOne) {
  auto audio_only = service_->Encode({.url = DataUrl(Video("audio_only.mp4"), "video/mp4")});
  ASSERT_FALSE(audio_only.ok());
  EXPECT_EQ(audio_only.status().code(), StatusCode::kUnsupportedMedia) << audio_only.status().ToString();
  // 70 s against a limit of 20 s, from the header before any frame.
  auto long_video = service_->Encode({.url = DataUrl(Video("long70s_4fps.mkv"), "video/x-matroska")});
  ASSERT_FALSE(long_video.ok());
  EXPECT_EQ(long_video.status().code(), StatusCode::kPayloadTooLarge) << long_video.status().ToString();
  EXPECT_EQ(video_calls_.load(), 0);
}

TEST_F(EncoderVideoTest, AVisionEncoderWithoutAVideoPathRefusesVideosAsBefore) {
  MetricsRegistry metrics;  // a second service registers its metrics again
  EncoderServiceOptions options = Options();
  options.metrics = &metrics;
  EncoderService images_only(options, ImageEncodeFn([this](const media::Image& image) {
                               ++image_calls_;
                               return model_->Encode(image);
                             }));
  auto r = images_only.Encode({.url = DataUrl(Video("clip10s_10fps.mp4"), "video/mp4")});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupportedMedia) << r.status().ToString();
  EXPECT_EQ(image_calls_.load(), 0);
}

}  // namespace
}  // namespace omni::encoder
