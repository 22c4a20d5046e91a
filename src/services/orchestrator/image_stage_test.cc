// ImageStage against a fake gateway: what it asks the vision decoder, the URL
// a client gets for each store (signed on the client port for a local store,
// the store's presigned URL for S3, a data URL on request), and the error
// each decoder failure becomes (image_stage.h).
#include "services/orchestrator/image_stage.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "services/orchestrator/orchestrator_service.h"
#include "storage/fs_io.h"
#include "storage/fs_store.h"

namespace omni::orchestrator {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr char kGateway[] = "http://127.0.0.1:1";
constexpr char kBlock[] = "<|discrete_image_start|><|vision_ratio_1:2|><|vision_token|><|vision7|><|discrete_image_end|>";

// The gateway with the decoder behind it: records each request and answers
// what the test scripted (a decoder answer, or a transport failure).
class FakeDecoderGateway final : public Upstream {
 public:
  struct Call final : HttpCallHandle {
    void Cancel() override { cancelled = true; }
    bool cancelled = false;
  };

  std::shared_ptr<HttpCallHandle> StreamAsync(HttpClientRequest request, HttpStreamCallbacks callbacks,
                                              std::function<void(StatusOr<int>)> done) override {
    auto call = std::make_shared<Call>();
    {
      std::lock_guard lock(mu_);
      requests.push_back(request);
      calls.push_back(call);
    }
    if (!failure.ok()) {
      done(failure);
      return call;
    }
    callbacks.on_headers(status, HttpHeaders{});
    callbacks.on_body(body);
    done(status);
    return call;
  }
  StatusOr<HttpClientResponse> Request(const HttpClientRequest&) override { return Unavailable("not used"); }

  std::mutex mu_;
  std::vector<HttpClientRequest> requests;
  std::vector<std::shared_ptr<Call>> calls;
  int status = 200;
  std::string body;
  Status failure;  // a transport failure instead of an answer
};

// A store that presents itself as S3 and presigns recognisably.
class FakeS3Store final : public ObjectStore {
 public:
  Status Put(std::string_view, std::string_view, const PutOptions&) override { return Unimplemented("put"); }
  Status PutFile(std::string_view, const std::string&, const PutOptions&) override { return Unimplemented("put"); }
  StatusOr<std::string> Get(std::string_view, std::optional<ByteRange>) override { return Unimplemented("get"); }
  Status GetStream(std::string_view, std::optional<ByteRange>, const ByteSink&) override {
    return Unimplemented("get");
  }
  StatusOr<ObjectInfo> Head(std::string_view) override { return Unimplemented("head"); }
  Status Delete(std::string_view) override { return Unimplemented("delete"); }
  StatusOr<std::vector<ObjectInfo>> List(std::string_view) override { return Unimplemented("list"); }
  StatusOr<std::string> Presign(std::string_view key, PresignMethod method, std::chrono::seconds ttl) override {
    EXPECT_EQ(method, PresignMethod::kGet);
    return "https://s3.test/bucket/" + std::string(key) + "?X-Amz-Expires=" + std::to_string(ttl.count());
  }
  const std::string& uri() const override { return uri_; }

 private:
  std::string uri_ = "s3://bucket/objects";
};

std::string DecoderAnswer(const std::string& key) {
  return Json{{"object", "image"}, {"key", key},    {"uri", "file:///x/" + key}, {"url", "file:///x/" + key},
              {"mime", "image/png"}, {"width", 528}, {"height", 1072},         {"seed", 42},
              {"warnings", Json::array()}, {"b64_json", "iVBORw0K"}}
      .dump();
}

class ImageStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("image_stage_test." + std::to_string(::getpid()));
    fs::create_directories(dir_);
    config_.gateway = kGateway;
    config_.store = PathToFileUrl(dir_.string());
    config_.images.vision_decoder = "omni-vd";
    config_.images.url_ttl = std::chrono::seconds(600);
    auto store = FsStore::Open(config_.store, {.sync = false});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    gateway_.body = DecoderAnswer("gen/omni-vd/abc.png");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A stage of its own (metrics register once per registry).
  std::unique_ptr<ImageStage> Stage(ObjectStore* store) {
    registries_.push_back(std::make_unique<MetricsRegistry>());
    return std::make_unique<ImageStage>(config_, gateway_, store, &signer_, clock_, *registries_.back());
  }

  fs::path dir_;
  OrchestratorConfig config_;
  FakeDecoderGateway gateway_;
  std::unique_ptr<FsStore> store_;
  ObjectUrlSigner signer_{std::string(32, 's')};
  FakeClock clock_;
  std::vector<std::unique_ptr<MetricsRegistry>> registries_;
};

TEST_F(ImageStageTest, AsksTheDecoderPoolForTheBlockWithTheClientsOptions) {
  auto stage = Stage(store_.get());
  ImageOptions options{.format = "webp", .seed = 7, .steps = 4, .guidance = 0.5, .ratio = "3:4"};
  auto image = stage->Decode(kBlock, options, "http://h:8000", "req-9");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  ASSERT_EQ(gateway_.requests.size(), 1u);
  const HttpClientRequest& r = gateway_.requests[0];
  EXPECT_EQ(r.url, std::string(kGateway) + "/v1/decode");
  EXPECT_EQ(r.headers.GetOr("x-request-id", ""), "req-9");
  EXPECT_EQ(r.timeout, config_.images.decode_timeout);
  const Json body = Json::parse(r.body);
  EXPECT_EQ(body["model"], "omni-vd");
  // The ratio asked for replaces the model's.
  EXPECT_EQ(body["tokens"],
            "<|discrete_image_start|><|vision_ratio_3:4|><|vision_token|><|vision7|><|discrete_image_end|>");
  EXPECT_EQ(body["format"], "webp");
  EXPECT_EQ(body["seed"], 7);
  EXPECT_EQ(body["steps"], 4);
  EXPECT_EQ(body["guidance"], 0.5);
  EXPECT_EQ(body["response_format"], "url");
  EXPECT_EQ(image->key, "gen/omni-vd/abc.png");
  EXPECT_EQ(image->width, 528);
  EXPECT_EQ(image->height, 1072);
  EXPECT_EQ(image->seed, 42u);
}

TEST_F(ImageStageTest, ALocalStoresImageIsASignedUrlOnTheClientPort) {
  auto stage = Stage(store_.get());
  auto image = stage->Decode(kBlock, {}, "http://h:8000", "r");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  const std::string prefix = "http://h:8000/v1/objects/gen/omni-vd/abc.png?expires=";
  ASSERT_EQ(image->url.rfind(prefix, 0), 0u) << image->url;
  const std::string query = image->url.substr(prefix.size());
  const std::string expires = query.substr(0, query.find('&'));
  const std::string signature = query.substr(query.find("&signature=") + 11);
  const auto now = clock_.WallNow();
  EXPECT_EQ(std::stoll(expires), std::chrono::duration_cast<std::chrono::seconds>(
                                     (now + config_.images.url_ttl).time_since_epoch()).count());
  EXPECT_TRUE(signer_.Verify("gen/omni-vd/abc.png", expires, signature, now).ok());
  EXPECT_FALSE(signer_.Verify("gen/omni-vd/other.png", expires, signature, now).ok());
  EXPECT_EQ(Json::parse(gateway_.requests[0].body).count("seed"), 0u);  // none asked: the decoder draws one
}

TEST_F(ImageStageTest, AnS3StoresImageIsItsPresignedUrl) {
  FakeS3Store s3;
  auto stage = Stage(&s3);
  auto image = stage->Decode(kBlock, {}, "", "r");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->url, "https://s3.test/bucket/gen/omni-vd/abc.png?X-Amz-Expires=600");
}

TEST_F(ImageStageTest, B64JsonIsADataUrlOfTheDecodersBytes) {
  auto stage = Stage(store_.get());
  auto image = stage->Decode(kBlock, {.data_url = true}, "", "r");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->url, "data:image/png;base64,iVBORw0K");
  EXPECT_EQ(Json::parse(gateway_.requests[0].body)["response_format"], "b64_json");
}

TEST_F(ImageStageTest, EachDecoderFailureHasItsOwnError) {
  struct Case {
    int status;
    Status failure;
    StatusCode code;
    std::string error_code;
  };
  const std::string refusal = Json{{"error", {{"message", "'tokens' has 3 ids"}}}}.dump();
  for (const Case& c : std::vector<Case>{
           {429, Status::Ok(), StatusCode::kResourceExhausted, "decoder_busy"},
           {503, Status::Ok(), StatusCode::kUnavailable, "decoder_unavailable"},
           {400, Status::Ok(), StatusCode::kInternal, "image_decode_failed"},
           {500, Status::Ok(), StatusCode::kInternal, "image_decode_failed"},
           {0, DeadlineExceeded("timed out"), StatusCode::kDeadlineExceeded, "image_decode_timeout"},
           {0, Unavailable("connection refused"), StatusCode::kUnavailable, "decoder_unavailable"},
       }) {
    gateway_.status = c.status;
    gateway_.body = refusal;
    gateway_.failure = c.failure;
    auto stage = Stage(store_.get());
    auto image = stage->Decode(kBlock, {}, "http://h:1", "r");
    ASSERT_FALSE(image.ok()) << c.status;
    EXPECT_EQ(image.status().code(), c.code) << c.status << " " << image.status().ToString();
    EXPECT_EQ(image.status().error_code(), c.error_code) << c.status;
    if (c.status == 400) {
      EXPECT_NE(image.status().message().find("'tokens' has 3 ids"), std::string::npos);
    }
  }
  gateway_.status = 200;
  gateway_.failure = Status::Ok();
  gateway_.body = "{\"no\": \"shape\"}";
  auto stage = Stage(store_.get());
  EXPECT_EQ(stage->Decode(kBlock, {}, "http://h:1", "r").status().error_code(), "image_decode_failed");
}

TEST_F(ImageStageTest, ACancelledRequestDropsItsDecoderCall) {
  auto stage = Stage(store_.get());
  ImageCancels cancels;
  cancels.Cancel();
  auto image = stage->Decode(kBlock, {}, "http://h:1", "r", &cancels);
  EXPECT_EQ(image.status().code(), StatusCode::kCancelled);
  ASSERT_EQ(gateway_.calls.size(), 1u);
  EXPECT_TRUE(gateway_.calls[0]->cancelled);
}

TEST_F(ImageStageTest, ThePublicBaseIsTheConfiguredUrlOrAPlainHost) {
  auto stage = Stage(store_.get());
  HttpRequest request;
  request.headers.Set("host", "127.0.0.1:8123");
  EXPECT_EQ(*stage->PublicBase(request), "http://127.0.0.1:8123");
  request.headers.Set("host", "[::1]:80");
  EXPECT_EQ(*stage->PublicBase(request), "http://[::1]:80");
  for (const char* bad : {"evil.test/path", "a b", "x@y", ""}) {
    request.headers.Set("host", bad);
    EXPECT_EQ(stage->PublicBase(request).status().error_code(), "invalid_host") << bad;
  }
  config_.images.public_url = "http://images.example:9000";
  auto configured = Stage(store_.get());
  EXPECT_EQ(*configured->PublicBase(request), "http://images.example:9000");
}

TEST_F(ImageStageTest, WithoutADecoderNothingIsAsked) {
  config_.images.vision_decoder.clear();
  auto stage = Stage(store_.get());
  EXPECT_FALSE(stage->enabled());
  EXPECT_EQ(stage->Decode(kBlock, {}, "http://h:1", "r").status().error_code(), "decoder_unavailable");
  EXPECT_TRUE(gateway_.requests.empty());
}

}  // namespace
}  // namespace omni::orchestrator
