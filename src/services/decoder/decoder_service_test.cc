// The decoder service and its HTTP face over the real demo vision decoder and
// a file:// store: the object is a PNG of the ratio's size, content-addressed
// and the same for the same seed; bad requests get precise 400s; a client
// that hangs up stops the work between steps; a full queue answers 429.
#include "services/decoder/decoder_service.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "media/image.h"
#include "models/vision_decoder/demo_vision_decoder.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/decoder/decoder_http.h"
#include "storage/content_hash.h"
#include "storage/fs_store.h"
#include "storage/url_fetch.h"

namespace omni::decoder {
namespace {

namespace fs = std::filesystem;

std::vector<int32_t> TestIds() {
  std::vector<int32_t> ids;
  for (int i = 0; i < 729; ++i) ids.push_back((i * 7919 + 13) % 65536);
  return ids;
}

// The model's own spelling of a drawing: ratio, then rows of ids.
std::string TokenString(const std::string& ratio_token) {
  std::string s = "<|discrete_image_start|>" + ratio_token + "<|vision_token|>";
  const std::vector<int32_t> ids = TestIds();
  for (size_t i = 0; i < ids.size(); ++i) {
    s += "<|vision" + std::to_string(ids[i]) + "|>";
    if (i % 27 == 26) s += "<|vision_eol|>";
  }
  return s + "<|vision_eof|><|discrete_image_end|>";
}

std::string Body(nlohmann::json extra) {
  nlohmann::json body = {{"model", "omni-vd"}, {"tokens", TokenString("<|vision_ratio_3:4|>")}};
  body.update(extra);
  return body.dump();
}

class DecoderServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_dir_ = new fs::path(fs::temp_directory_path() / ("decoder_service_test.vd." + std::to_string(::getpid())));
    ASSERT_TRUE(models::WriteDemoVisionDecoder({}, model_dir_->string()).ok());
    auto model = models::VisionDecoder::Load(model_dir_->string());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = model->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    fs::remove_all(*model_dir_);
    delete model_dir_;
  }
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("decoder_service_test." + std::to_string(::getpid()));
    fs::create_directories(dir_);
    store_uri_ = PathToFileUrl(dir_.string());
    auto store = FsStore::Open(store_uri_, {.sync = false});
    ASSERT_TRUE(store.ok());
    store_ = std::move(store).value();
    service_ = MakeService(metrics_, [this](const auto& r, const auto& h, auto* t) {
      ++calls_;
      return model_->Generate(r, h, t);
    });
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<DecoderService> MakeService(MetricsRegistry& metrics, VisionGenerateFn fn) {
    return std::make_unique<DecoderService>(
        DecoderServiceOptions{.model_id = "omni-vd", .store = store_.get(), .store_uri = store_uri_,
                              .metrics = &metrics},
        std::move(fn));
  }
  StatusOr<DecodeResult> Decode(nlohmann::json extra) {
    auto request = ParseDecodeRequest(Body(std::move(extra)));
    if (!request.ok()) return request.status();
    return service_->Decode(*request);
  }

  static fs::path* model_dir_;
  static models::VisionDecoder* model_;
  fs::path dir_;
  std::string store_uri_;
  std::unique_ptr<FsStore> store_;
  MetricsRegistry metrics_;
  std::unique_ptr<DecoderService> service_;
  std::atomic<int> calls_{0};
};
fs::path* DecoderServiceTest::model_dir_ = nullptr;
models::VisionDecoder* DecoderServiceTest::model_ = nullptr;

TEST_F(DecoderServiceTest, DrawsAThreeByFourPngOfTheRatiosSize) {
  auto r = Decode({{"steps", 1}, {"seed", 5}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->width, 656);
  EXPECT_EQ(r->height, 880);
  EXPECT_EQ(r->ratio, "3:4");
  EXPECT_TRUE(r->warnings.empty());
  EXPECT_EQ(r->mime, "image/png");
  EXPECT_EQ(r->seed, 5u);
  EXPECT_EQ(r->key, "gen/omni-vd/" + r->sha256 + ".png");
  // The object is that PNG, readable by the media layer's decoder and at the presigned URL.
  auto bytes = store_->Get(r->key);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(Sha256Hex(*bytes), r->sha256);
  EXPECT_EQ(bytes->substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto image = media::DecodeImage(*bytes);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->width, 656);
  EXPECT_EQ(image->height, 880);
  auto fetched = FetchUrl(r->url, {}, nullptr);
  ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
  EXPECT_EQ(*fetched, *bytes);
}

TEST_F(DecoderServiceTest, SameSeedSameBytesAndOtherFormats) {
  const nlohmann::json small = {{"steps", 2}, {"width", 64}, {"height", 80}, {"seed", 11}};
  auto a = Decode(small), b = Decode(small);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->sha256, b->sha256);
  EXPECT_EQ(a->width, 64);
  EXPECT_EQ(a->height, 80);
  nlohmann::json other = small;
  other["seed"] = 12;
  auto c = Decode(other);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->sha256, a->sha256);
  for (const char* format : {"webp", "jpeg"}) {
    nlohmann::json f = small;
    f["format"] = format;
    auto r = Decode(f);
    ASSERT_TRUE(r.ok()) << format << ": " << r.status().ToString();
    auto image = media::DecodeImage(*store_->Get(r->key));
    ASSERT_TRUE(image.ok()) << format;
    EXPECT_EQ(image->width, 64);
    EXPECT_EQ(image->height, 80);
  }
  // No seed: one is drawn, reported, and reproduces the image.
  nlohmann::json unseeded = small;
  unseeded.erase("seed");
  auto d = Decode(unseeded);
  ASSERT_TRUE(d.ok());
  nlohmann::json again = small;
  again["seed"] = d->seed;
  EXPECT_EQ(Decode(again)->sha256, d->sha256);
}

TEST_F(DecoderServiceTest, MissingOrUnknownRatioIsOneToOneWithAWarning) {
  auto missing = ParseDecodeRequest(
      nlohmann::json{{"tokens", TokenString("")}, {"steps", 1}, {"width", 64}, {"height", 64}}.dump());
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(missing->tokens.ratio, "1:1");
  EXPECT_EQ(missing->tokens.size.width, 768);
  ASSERT_EQ(missing->tokens.warnings.size(), 1u);
  auto r = service_->Decode(*missing);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->warnings.size(), 1u);
  const nlohmann::json answer = nlohmann::json::parse(DecodeResultJson(*r, *missing, "omni-vd"));
  EXPECT_EQ(answer["warnings"].size(), 1u);
  auto unknown = ParseDecodeRequest(nlohmann::json{{"tokens", {{"ratio", "5:7"}, {"ids", TestIds()}}}}.dump());
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->tokens.ratio, "1:1");
  EXPECT_NE(unknown->tokens.warnings.at(0).find("5:7"), std::string::npos);
}

TEST_F(DecoderServiceTest, BadRequestsGetPreciseErrors) {
  std::vector<int32_t> short_ids = TestIds();
  short_ids.resize(728);
  std::vector<int32_t> big_id = TestIds();
  big_id[3] = 65536;
  struct Case {
    std::string body, param;
  };
  const std::vector<Case> cases = {
      {"{not json", ""},
      {"[1,2]", ""},
      {R"({"model":"omni-vd"})", "tokens"},
      {nlohmann::json{{"tokens", "<|vision_ratio_1:1|><|vision5|>"}}.dump(), "tokens"},  // fewer than 729
      {nlohmann::json{{"tokens", "<|vision_ratio_1:1|>hello"}}.dump(), "tokens"},        // malformed
      {nlohmann::json{{"tokens", TokenString("<|vision_ratio_1:1|>") + "<|vision99999|>"}}.dump(), ""},
      {nlohmann::json{{"tokens", {{"ratio", "1:1"}, {"ids", short_ids}}}}.dump(), "tokens.ids"},
      {nlohmann::json{{"tokens", {{"ratio", "1:1"}, {"ids", big_id}}}}.dump(), "tokens.ids"},
      {Body({{"format", "gif"}}), "format"},
      {Body({{"steps", 0}}), "steps"},
      {Body({{"steps", 201}}), "steps"},
      {Body({{"steps", "many"}}), "steps"},
      {Body({{"width", 65}}), "width"},
      {Body({{"height", 4096}}), "height"},
      {Body({{"guidance", 3}}), "guidance"},
      {Body({{"seed", -1}}), "seed"},
      {Body({{"response_format", "file"}}), "response_format"},
  };
  for (const Case& c : cases) {
    auto r = ParseDecodeRequest(c.body);
    ASSERT_FALSE(r.ok()) << c.body.substr(0, 80);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.body.substr(0, 80);
    if (!c.param.empty()) {
      EXPECT_EQ(r.status().param(), c.param) << r.status().ToString();
    }
  }
  // The token string's own id limit: 99999 is past the table (the parser's
  // message says which token).
  EXPECT_EQ(ParseDecodeRequest(cases[5].body).status().code(), StatusCode::kInvalidArgument);
  auto other_model = Decode({{"model", "nope"}, {"steps", 1}});
  EXPECT_EQ(other_model.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(DecoderServiceTest, OmniServeRoutesKeepTheirShape) {
  auto r = ParseOmniServeDecodeRequest(
      nlohmann::json{{"vlm_output", TokenString("<|vision_ratio_1:2|>")}, {"upload_to_s3", true},
                     {"s3_prefix", "x"}, {"width", 64}, {"height", 64}, {"seed", 3}, {"num_inference_steps", 1}}
          .dump(),
      /*base64=*/true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tokens.ratio, "1:2");
  EXPECT_EQ(r->steps, 1);
  auto defaults = ParseOmniServeDecodeRequest(nlohmann::json{{"vlm_output", TokenString("")}}.dump(), false);
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->steps, 50);  // OmniServe's default
  auto result = service_->Decode(*r);
  ASSERT_TRUE(result.ok());
  const nlohmann::json j = nlohmann::json::parse(DecodeResultJson(*result, *r, "omni-vd"));
  EXPECT_EQ(j["num_images"], 1);
  EXPECT_EQ(j["num_tokens_parsed"], 729);
  EXPECT_EQ(j["presigned_url"], result->url);
  EXPECT_EQ(j["s3_path"], result->uri);
  EXPECT_EQ(j["seed"], 3);
  EXPECT_TRUE(j.contains("image_base64"));
  EXPECT_EQ(ParseOmniServeDecodeRequest("{}", false).status().param(), "vlm_output");
}

TEST_F(DecoderServiceTest, CancelledBetweenSteps) {
  auto request = ParseDecodeRequest(Body({{"steps", 10}, {"width", 64}, {"height", 80}, {"seed", 1}}));
  ASSERT_TRUE(request.ok());
  int asked = 0;
  auto r = service_->Decode(*request, [&] { return ++asked < 3; });
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(asked, 3);
  EXPECT_TRUE(store_->List("gen/")->empty());
}

// Over HTTP: a client that hangs up stops its generation (the steps counter
// stops), a full queue answers 429 with Retry-After, and the server keeps serving.
TEST_F(DecoderServiceTest, HttpHangUpCancelsAndFullQueueAnswers429) {
  MetricsRegistry metrics;
  std::atomic<int> steps_seen{0};
  // The first generation is held after its first step until the test has seen
  // the 429 and its client has hung up, so no timing decides the outcome.
  std::atomic<bool> release{false};
  auto service = MakeService(metrics, [this, &steps_seen, &release](const auto& r, const auto& h, auto* t) {
    models::VisionGenerateHooks hooks = h;
    hooks.after_step = [&steps_seen, &release, inner = h.after_step](int i) {
      ++steps_seen;
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return inner(i);
    };
    return model_->Generate(r, hooks, t);
  });
  DecoderHttpAdapter adapter(*service, metrics, {.max_queue = 1});
  HttpServerOptions options;
  options.access_log = false;
  options.metrics = &metrics;
  HttpServer server(options);
  adapter.RegisterRoutes(server);
  ASSERT_TRUE(server.Start().ok());
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  HttpClient client;
  auto post = [&](const std::string& body, std::chrono::milliseconds timeout) {
    return client.Request({.method = HttpMethod::kPost, .url = base + "/v1/decode", .body = body, .timeout = timeout});
  };
  auto waiting = [&] {
    auto scraped = client.Request({.method = HttpMethod::kGet, .url = base + "/metrics"});
    return scraped.ok() && scraped->body.find("omni_decoder_queue_waiting 1") != std::string::npos;
  };
  // A long generation (200 steps of 4096 tokens) whose client gives up after 1.5 s.
  const std::string long_body = Body({{"steps", 200}, {"width", 512}, {"height", 512}, {"seed", 1}});
  auto gone = std::async(std::launch::async, [&] { return post(long_body, std::chrono::milliseconds(1'500)); });
  while (steps_seen.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // The queue holds one more; the next is refused.
  auto queued = std::async(std::launch::async, [&] {
    return post(Body({{"steps", 1}, {"width", 64}, {"height", 64}, {"seed", 2}}), std::chrono::milliseconds(60'000));
  });
  while (!waiting()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto busy = post(Body({{"steps", 1}}), std::chrono::milliseconds(5'000));
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();
  EXPECT_EQ(busy->status, 429);
  EXPECT_EQ(busy->headers.GetOr("retry-after", ""), "5");
  EXPECT_NE(busy->body.find("server_busy"), std::string::npos);
  EXPECT_FALSE(gone.get().ok());  // the client timed out and closed its connection
  release = true;
  auto served = queued.get();
  ASSERT_TRUE(served.ok());
  EXPECT_EQ(served->status, 200) << served->body;
  adapter.WaitIdle();
  // The abandoned generation stopped between steps, far short of its 200.
  const int after = steps_seen.load();
  EXPECT_LT(after, 150);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(steps_seen.load(), after);
  auto scraped = client.Request({.method = HttpMethod::kGet, .url = base + "/metrics"});
  ASSERT_TRUE(scraped.ok());
  EXPECT_NE(scraped->body.find("omni_decoder_requests_total{result=\"cancelled\"} 1"), std::string::npos)
      << scraped->body;
  EXPECT_NE(scraped->body.find("omni_decoder_requests_total{result=\"rejected\"} 1"), std::string::npos);
  EXPECT_NE(scraped->body.find("omni_decoder_steps_per_second 0"), std::string::npos);
  // Hostile bodies through the real server: each a 400 naming the field, and
  // the server keeps drawing.
  std::vector<int32_t> short_ids = TestIds();
  short_ids.resize(700);
  const std::vector<std::pair<std::string, std::string>> hostile = {
      {"{not json", ""},
      {nlohmann::json{{"tokens", "<|vision_ratio_1:1|><|vision5|>"}}.dump(), "tokens"},
      {nlohmann::json{{"tokens", "<|vision_ratio_1:1|><script>"}}.dump(), "tokens"},
      {nlohmann::json{{"tokens", {{"ratio", "1:1"}, {"ids", short_ids}}}}.dump(), "tokens.ids"},
      {Body({{"format", "bmp"}}), "format"},
      {Body({{"steps", 1000}}), "steps"},
  };
  for (const auto& [body, param] : hostile) {
    auto bad = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/decode", .body = body});
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(bad->status, 400) << body.substr(0, 60);
    if (!param.empty()) {
      EXPECT_EQ(nlohmann::json::parse(bad->body)["error"]["param"], param) << bad->body;
    }
    EXPECT_EQ(bad->body.find("<script>"), std::string::npos);  // client bytes are not echoed raw
  }
  auto still = post(Body({{"steps", 1}, {"width", 64}, {"height", 64}, {"seed", 3}}), std::chrono::milliseconds(60'000));
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->status, 200) << still->body;
  server.Shutdown();
}

}  // namespace
}  // namespace omni::decoder
