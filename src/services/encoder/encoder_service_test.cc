#include "services/encoder/encoder_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <thread>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/base64.h"
#include "modelfile/tensor_object.h"
#include "models/omni_vision/demo_vision_encoder.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/encoder/encoder_http.h"
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

std::string Media(const std::string& name) { return ReadFile(std::string(OMNI_MEDIA_TESTDATA) + "/" + name); }

std::string DataUrl(const std::string& bytes, const std::string& type = "image/jpeg") {
  return "data:" + type + ";base64," + Base64Encode(bytes);
}

// A real demo vision encoder behind a counting wrapper, a file:// store and
// a fetcher that may read the media directory.
class EncoderServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("encoder_service_test." + std::to_string(::getpid()));
    fs::create_directories(dir_ / "store");
    ASSERT_TRUE(models::WriteDemoVisionEncoder({}, (dir_ / "ve").string()).ok());
    auto model = models::OmniVisionEncoder::Load((dir_ / "ve").string());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = std::move(model).value();
    store_uri_ = PathToFileUrl((dir_ / "store").string());
    auto store = FsStore::Open(store_uri_, {.sync = false});
    ASSERT_TRUE(store.ok());
    store_ = std::move(store).value();
    fetcher_ = std::make_unique<media::MediaFetcher>(
        media::MediaFetchOptions{.max_bytes = 1 << 20, .file_root = OMNI_MEDIA_TESTDATA}, nullptr);
    service_ = std::make_unique<EncoderService>(
        EncoderServiceOptions{.model_id = "omni-ve", .store = store_.get(), .store_uri = store_uri_,
                              .fetcher = fetcher_.get(), .decode = {.max_pixels = 1'000'000}, .metrics = &metrics_},
        [this](const media::Image& image) {
          ++calls_;
          return model_->Encode(image);
        });
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string store_uri_;
  std::unique_ptr<models::OmniVisionEncoder> model_;
  std::unique_ptr<FsStore> store_;
  std::unique_ptr<media::MediaFetcher> fetcher_;
  MetricsRegistry metrics_;
  std::unique_ptr<EncoderService> service_;
  std::atomic<int> calls_{0};
};

TEST_F(EncoderServiceTest, EncodesOnceAndWritesAContentAddressedObject) {
  const std::string jpeg = Media("photo.jpg");
  auto first = service_->Encode({.model = "omni-ve", .url = DataUrl(jpeg)});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->cached);
  EXPECT_EQ(first->key, "emb/omni-ve/" + Sha256Hex(jpeg) + ".safetensors");
  EXPECT_EQ(first->mime, "image/jpeg");
  EXPECT_EQ(first->image_width, 67);
  EXPECT_EQ(first->image_height, 45);
  // 67x45 -> smart resize 56x56 -> a 4x4 patch grid -> 4 rows.
  EXPECT_EQ(first->grid.h, 4);
  EXPECT_EQ(first->grid.w, 4);
  EXPECT_EQ(first->rows, 4);
  EXPECT_EQ(first->width, 128);
  EXPECT_EQ(first->ids, 729);
  EXPECT_EQ(first->uri, PathToFileUrl((dir_ / "store").string() + "/" + first->key));
  auto object = GetEmbeddingObject(*store_, first->key);
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ(object->rows.dim(0), 4);
  EXPECT_EQ(object->rows.dim(1), 128);
  EXPECT_EQ(object->rows.dtype(), DType::kBF16);
  EXPECT_EQ(object->ids.dim(0), 729);
  // The same bytes under other URLs: no second encode.
  auto again = service_->Encode({.url = DataUrl(jpeg, "image/png")});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->cached);
  auto by_file = service_->Encode({.url = PathToFileUrl(std::string(OMNI_MEDIA_TESTDATA) + "/photo.jpg")});
  ASSERT_TRUE(by_file.ok()) << by_file.status().ToString();
  EXPECT_TRUE(by_file->cached);
  EXPECT_EQ(by_file->key, first->key);
  EXPECT_EQ(by_file->rows, 4);
  EXPECT_EQ(by_file->grid.w, 4);
  EXPECT_EQ(calls_.load(), 1);
  // The presigned URL reads the object back.
  auto fetched = FetchUrl(by_file->url, {}, nullptr);
  ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
  EXPECT_TRUE(ParseEmbeddingObject(*fetched).ok());
}

TEST_F(EncoderServiceTest, BadInputGetsPreciseErrors) {
  struct Case {
    std::string url;
    StatusCode code;
    std::string contains;
  };
  const std::string bomb = Media("bomb.png");
  const Case cases[] = {
      {DataUrl(Media("truncated.jpg")), StatusCode::kInvalidArgument, "truncated"},
      {DataUrl(Media("corrupt.png")), StatusCode::kInvalidArgument, "PNG image is corrupt"},
      {DataUrl(Media("text.jpg")), StatusCode::kUnsupportedMedia, "(text)"},
      {DataUrl(Media("sound.wav")), StatusCode::kUnsupportedMedia, "audio file (WAV)"},
      {DataUrl(bomb), StatusCode::kPayloadTooLarge, "100000x100000 pixels"},
      {"data:image/png;base64,", StatusCode::kInvalidArgument, "empty"},
      {"data:image/png;base64,%%%", StatusCode::kInvalidArgument, "malformed data: URL"},
      {"file:///etc/passwd", StatusCode::kInvalidArgument, "outside"},
      {"http://127.0.0.1:1/x.png", StatusCode::kInvalidArgument, "not allowed"},
      {"ftp://example.com/x.png", StatusCode::kInvalidArgument, "unsupported media URL"},
      {"s3://bucket/x.png", StatusCode::kInvalidArgument, "no s3:// URLs"},
      {DataUrl(std::string(2 << 20, 'x')), StatusCode::kPayloadTooLarge, "over the limit"},
  };
  for (const Case& c : cases) {
    auto r = service_->Encode({.url = c.url});
    ASSERT_FALSE(r.ok()) << c.url.substr(0, 60);
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.contains), std::string::npos) << r.status().message();
  }
  auto wrong_model = service_->Encode({.model = "other", .url = DataUrl(Media("photo.jpg"))});
  EXPECT_EQ(wrong_model.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(calls_.load(), 0);
}

TEST(ParseEncodeRequest, BothApiForms) {
  auto r = ParseEncodeRequest(R"({"model":"m","media":{"url":"data:,x"}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->model, "m");
  EXPECT_EQ(r->url, "data:,x");
  for (const char* bad : {"", "[]", "{", R"({"model":1,"media":{"url":"x"}})", R"({"media":"x"})",
                          R"({"media":{}})", R"({"media":{"url":""}})", R"({"model":"m"})"}) {
    auto e = ParseEncodeRequest(bad);
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  auto os = ParseOmniServeEncodeRequest(R"({"media_url":"http://x/y.png","anyres":true})");
  ASSERT_TRUE(os.ok());
  EXPECT_EQ(os->url, "http://x/y.png");
  auto b64 = ParseOmniServeEncodeRequest(R"({"media_base64":"aGk="})");
  ASSERT_TRUE(b64.ok());
  EXPECT_EQ(b64->url, "data:application/octet-stream;base64,aGk=");
  for (const char* bad : {R"({})", R"({"media_url":"a","media_base64":"b"})", R"({"media_url":5})"}) {
    EXPECT_EQ(ParseOmniServeEncodeRequest(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

// The HTTP adapter: answers in the documented shape, and a full queue gets
// 429 with Retry-After while the encoder keeps serving.
TEST_F(EncoderServiceTest, HttpQueueFullAnswers429AndKeepsServing) {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> started{0};
  MetricsRegistry metrics;
  EncoderService blocking({.model_id = "omni-ve", .store = store_.get(), .store_uri = store_uri_,
                           .fetcher = fetcher_.get(), .metrics = &metrics},
                          [&](const media::Image& image) {
                            ++started;
                            gate.wait();
                            return model_->Encode(image);
                          });
  EncoderHttpAdapter adapter(blocking, metrics, {.workers = 1, .max_queue = 1});
  HttpServerOptions options;
  options.access_log = false;
  options.metrics = &metrics;
  HttpServer server(options);
  adapter.RegisterRoutes(server);
  ASSERT_TRUE(server.Start().ok());
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  HttpClient client;
  auto post = [&](const std::string& image) {
    nlohmann::json body = {{"model", "omni-ve"}, {"media", {{"url", DataUrl(Media(image))}}}};
    return client.Request({.method = HttpMethod::kPost, .url = base + "/v1/encode", .body = body.dump()});
  };
  auto a = std::async(std::launch::async, [&] { return post("photo.jpg"); });
  while (started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto b = std::async(std::launch::async, [&] { return post("gray.jpg"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // b is queued behind a
  auto c = post("q444.jpg");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->status, 429);
  EXPECT_EQ(c->headers.GetOr("retry-after", ""), "1");
  EXPECT_NE(c->body.find("server_busy"), std::string::npos) << c->body;
  release.set_value();
  auto ra = a.get(), rb = b.get();
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->status, 200) << ra->body;
  EXPECT_EQ(rb->status, 200) << rb->body;
  auto answer = nlohmann::json::parse(ra->body);
  EXPECT_EQ(answer["object"], "encoding");
  EXPECT_EQ(answer["cached"], false);
  EXPECT_EQ(answer["ids"], 729);
  EXPECT_EQ(answer["grid"]["w"], 4);
  EXPECT_EQ(answer["media"]["mime"], "image/jpeg");
  // Served again after the burst: the first image is now cached.
  auto again = post("photo.jpg");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(nlohmann::json::parse(again->body)["cached"], true);
  auto bad = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/encode", .body = "{not json"});
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("not valid JSON"), std::string::npos);
  auto scraped = client.Request({.method = HttpMethod::kGet, .url = base + "/metrics"});
  ASSERT_TRUE(scraped.ok());
  EXPECT_NE(scraped->body.find("omni_encoder_requests_total{result=\"rejected\"} 1"), std::string::npos);
  EXPECT_NE(scraped->body.find("omni_encoder_cache_hits_total 1"), std::string::npos);
  EXPECT_TRUE(adapter.WaitIdle());
  server.Shutdown();
}

}  // namespace
}  // namespace omni::encoder
