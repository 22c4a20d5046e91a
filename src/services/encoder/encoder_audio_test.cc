// The encoder service with the audio model: a real demo audio encoder behind
// a counting wrapper, a file:// store, media sent inline as OpenAI's
// input_audio would be (a WAV made here, an MP3 fixture made by ffmpeg).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "modelfile/tensor_object.h"
#include "models/audio_encoder/demo_audio_encoder.h"
#include "services/encoder/encoder_service.h"
#include "storage/content_hash.h"
#include "storage/fs_io.h"
#include "storage/fs_store.h"

namespace omni::encoder {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A mono 16-bit PCM WAV of a 440 Hz tone (RIFF, "fmt " of 16 bytes, "data").
std::string ToneWav(double seconds, int rate) {
  const uint32_t n = static_cast<uint32_t>(std::lround(seconds * rate));
  std::string out;
  auto u32 = [&](uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](uint16_t v) { out.append(reinterpret_cast<const char*>(&v), 2); };
  out += "RIFF";
  u32(36 + 2 * n);
  out += "WAVEfmt ";
  u32(16);
  u16(1);  // PCM
  u16(1);  // mono
  u32(static_cast<uint32_t>(rate));
  u32(static_cast<uint32_t>(rate) * 2);
  u16(2);
  u16(16);
  out += "data";
  u32(2 * n);
  for (uint32_t i = 0; i < n; ++i) {
    u16(static_cast<uint16_t>(static_cast<int16_t>(
        std::lround(12000 * std::sin(2 * std::numbers::pi * 440.0 * i / rate)))));
  }
  return out;
}

std::string DataUrl(const std::string& bytes, const std::string& type) {
  return "data:" + type + ";base64," + Base64Encode(bytes);
}

class EncoderAudioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("encoder_audio_test." + std::to_string(::getpid()));
    fs::create_directories(dir_ / "store");
    ASSERT_TRUE(models::WriteDemoAudioEncoder({}, (dir_ / "ae").string()).ok());
    auto model = models::OmniAudioEncoder::Load((dir_ / "ae").string());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = std::move(model).value();
    store_uri_ = PathToFileUrl((dir_ / "store").string());
    auto store = FsStore::Open(store_uri_, {.sync = false});
    ASSERT_TRUE(store.ok());
    store_ = std::move(store).value();
    fetcher_ = std::make_unique<media::MediaFetcher>(media::MediaFetchOptions{.max_bytes = 4 << 20}, nullptr);
    service_ = std::make_unique<EncoderService>(
        EncoderServiceOptions{.model_id = "omni-ae", .store = store_.get(), .store_uri = store_uri_,
                              .fetcher = fetcher_.get(), .audio_decode = {.max_seconds = 20},
                              .metrics = &metrics_},
        AudioEncodeFn([this](std::span<const float> samples) {
          ++calls_;
          return model_->Encode(samples);
        }));
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string store_uri_;
  std::unique_ptr<models::OmniAudioEncoder> model_;
  std::unique_ptr<FsStore> store_;
  std::unique_ptr<media::MediaFetcher> fetcher_;
  MetricsRegistry metrics_;
  std::unique_ptr<EncoderService> service_;
  std::atomic<int> calls_{0};
};

TEST_F(EncoderAudioTest, AThreeSecondClipGives75RowsAnd75IdsOnceAndTheDurationIsKept) {
  const std::string wav = ToneWav(3.0, 16000);
  auto first = service_->Encode({.model = "omni-ae", .url = DataUrl(wav, "audio/wav")});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->cached);
  EXPECT_EQ(first->type, "audio");
  EXPECT_EQ(first->key, "emb/omni-ae/" + Sha256Hex(wav) + ".safetensors");
  EXPECT_EQ(first->mime, "audio/wav");
  EXPECT_EQ(first->rows, 75);
  EXPECT_EQ(first->ids, 75);
  EXPECT_EQ(first->width, 128);
  EXPECT_DOUBLE_EQ(first->seconds, 3.0);
  auto object = GetEmbeddingObject(*store_, first->key);
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ(object->rows.dim(0), 75);
  EXPECT_EQ(object->ids.dim(0), 75);
  for (int64_t i = 0; i < 75; ++i) {
    const int32_t id = object->ids.data<int32_t>()[i];
    EXPECT_TRUE(id >= 0 && id < 6561) << id;
  }
  const nlohmann::json answer = nlohmann::json::parse(EncodeResultJson(*first, "omni-ae"));
  EXPECT_EQ(answer["media"]["type"], "audio");
  EXPECT_DOUBLE_EQ(answer["media"]["seconds"].get<double>(), 3.0);
  EXPECT_FALSE(answer.contains("grid"));
  // Again, as OmniServe's /process_audio form: from the store, no encode.
  auto parsed = ParseOmniServeEncodeRequest(nlohmann::json{{"media_base64", DataUrl(wav, "audio/wav")}}.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto again = service_->Encode(*parsed);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(again->type, "audio");
  EXPECT_EQ(again->rows, 75);
  EXPECT_DOUBLE_EQ(again->seconds, 3.0);
  EXPECT_EQ(calls_.load(), 1);
}

TEST_F(EncoderAudioTest, ResamplesAnMp3ToSixteenKilohertz) {
  const std::string mp3 = ReadFile(std::string(OMNI_MEDIA_TESTDATA) + "/audio/stereo_44k.mp3");
  auto r = service_->Encode({.url = DataUrl(mp3, "audio/mpeg")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->mime, "audio/mpeg");
  // 25 rows per second of whatever the decoder gave.
  EXPECT_EQ(r->rows, models::OmniAudioEncoder::ContinuousRows(std::lround(r->seconds * 16000)));
  EXPECT_GT(r->rows, 0);
}

TEST_F(EncoderAudioTest, RefusesAnImageAnOverlongClipAndAClipTooShort) {
  const std::string png = ReadFile(std::string(OMNI_MEDIA_TESTDATA) + "/palette.png");
  auto image = service_->Encode({.url = DataUrl(png, "image/png")});
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.status().code(), StatusCode::kUnsupportedMedia) << image.status().ToString();
  auto long_clip = service_->Encode({.url = DataUrl(ToneWav(25.0, 8000), "audio/wav")});
  ASSERT_FALSE(long_clip.ok());
  EXPECT_EQ(long_clip.status().code(), StatusCode::kPayloadTooLarge) << long_clip.status().ToString();
  auto short_clip = service_->Encode({.url = DataUrl(ToneWav(0.05, 16000), "audio/wav")});
  ASSERT_FALSE(short_clip.ok());
  EXPECT_EQ(short_clip.status().code(), StatusCode::kInvalidArgument) << short_clip.status().ToString();
  EXPECT_EQ(calls_.load(), 1);  // only the short clip reached the model, which refused it
}

TEST(OmniServeEncodeRequest, AMediaUrlInUrlSafeBase64IsDecoded) {
  const std::string url = "https://example.com/a/b.mp3?x=1&y=2";
  std::string b64 = Base64Encode(url);
  for (char& c : b64) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  auto r = ParseOmniServeEncodeRequest(nlohmann::json{{"media_url", b64}}.dump());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->url, url);
  auto plain = ParseOmniServeEncodeRequest(R"({"media_url":"s3://bucket/key.wav"})");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->url, "s3://bucket/key.wav");
}

}  // namespace
}  // namespace omni::encoder
