// MediaStage and the orchestrator's media path with a real file:// store and
// a fake vision encoder behind the gateway (the Upstream): which encoder
// calls are made, how their answers and the store's failures reach the
// client, the bounds on parts and on requests waiting, and the drain.
#include "services/orchestrator/media_stage.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <condition_variable>
#include <future>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "api/openai/openai_parse.h"
#include "core/base64.h"
#include "net/testing/tls_test_server.h"
#include "services/orchestrator/orchestrator_service.h"
#include "storage/fs_store.h"
#include "storage/fs_io.h"

namespace omni::orchestrator {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr char kGateway[] = "http://127.0.0.1:1";

std::string Media(const std::string& name) {
  std::ifstream in(std::string(OMNI_MEDIA_TESTDATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string DataUrl(const std::string& bytes) { return "data:image/png;base64," + Base64Encode(bytes); }

// The vision encoder as the gateway relays it: writes the object the real
// one writes (emb/<model>/<sha of the media object's name>) and answers its
// key, or answers a scripted error; may hold each call until released.
class FakeEncoder final : public Upstream {
 public:
  ObjectStore* store = nullptr;

  std::shared_ptr<HttpCallHandle> StreamAsync(HttpClientRequest, HttpStreamCallbacks,
                                              std::function<void(StatusOr<int>)> done) override {
    std::lock_guard lock(mu_);
    ++chats;
    done(Status(StatusCode::kCancelled, "not used"));
    return nullptr;
  }
  StatusOr<HttpClientResponse> Request(const HttpClientRequest& request) override {
    std::unique_lock lock(mu_);
    ++calls;
    bodies.push_back(request.body);
    cv_.notify_all();
    cv_.wait(lock, [&] { return !hold; });
    if (request.url != std::string(kGateway) + "/v1/encode") return Unavailable("unexpected " + request.url);
    if (error_status != 0) {
      return HttpClientResponse{.status = error_status, .body = error_body};
    }
    const std::string url = Json::parse(request.body)["media"]["url"];
    const std::string name = url.substr(url.rfind('/') + 1);
    const std::string key = "emb/omni-ve/" + name.substr(0, name.find('.')) + ".safetensors";
    if (Status s = store->Put(key, "rows"); !s.ok()) return s;
    return HttpClientResponse{.status = 200, .body = Json{{"key", key}}.dump()};
  }
  void WaitForCalls(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return calls >= n; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    hold = false;
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int calls = 0;
  int chats = 0;
  bool hold = false;
  int error_status = 0;
  std::string error_body;
  std::vector<std::string> bodies;
};

// An FsStore whose reads can be made to fail, as a store that is down.
class FlakyStore final : public ObjectStore {
 public:
  explicit FlakyStore(std::unique_ptr<FsStore> inner) : inner_(std::move(inner)) {}
  Status Put(std::string_view key, std::string_view data, const PutOptions& o) override {
    return down ? Unavailable("connection refused") : inner_->Put(key, data, o);
  }
  Status PutFile(std::string_view key, const std::string& path, const PutOptions& o) override {
    return inner_->PutFile(key, path, o);
  }
  StatusOr<std::string> Get(std::string_view key, std::optional<ByteRange> range) override {
    return inner_->Get(key, range);
  }
  Status GetStream(std::string_view key, std::optional<ByteRange> range, const ByteSink& sink) override {
    return inner_->GetStream(key, range, sink);
  }
  StatusOr<ObjectInfo> Head(std::string_view key) override {
    return down ? StatusOr<ObjectInfo>(Unavailable("connection refused")) : inner_->Head(key);
  }
  Status Delete(std::string_view key) override { return inner_->Delete(key); }
  StatusOr<std::vector<ObjectInfo>> List(std::string_view prefix) override { return inner_->List(prefix); }
  StatusOr<std::string> Presign(std::string_view key, PresignMethod m, std::chrono::seconds ttl) override {
    return inner_->Presign(key, m, ttl);
  }
  const std::string& uri() const override { return inner_->uri(); }

  bool down = false;

 private:
  std::unique_ptr<FsStore> inner_;
};

openai::ChatRequest WithParts(const std::vector<std::string>& urls) {
  Json content = Json::array();
  for (const std::string& u : urls) content.push_back({{"type", "image_url"}, {"image_url", {{"url", u}}}});
  content.push_back({{"type", "text"}, {"text", "what is this?"}});
  Json body = {{"model", "omni-demo"}, {"messages", {{{"role", "user"}, {"content", content}}}}};
  auto r = openai::ParseChatRequest(body.dump(), openai::MediaForm::kRawMedia);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

class MediaStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("media_stage_test." + std::to_string(::getpid()));
    fs::create_directories(dir_);
    config_.gateway = kGateway;
    config_.store = PathToFileUrl(dir_.string());
    config_.media.vision_encoder = "omni-ve";
    auto fs_store = FsStore::Open(config_.store, {.sync = false});
    ASSERT_TRUE(fs_store.ok()) << fs_store.status().ToString();
    store_ = std::make_unique<FlakyStore>(std::move(fs_store).value());
    encoder_.store = store_.get();
    stage_ = std::make_unique<MediaStage>(config_, encoder_, store_.get(), nullptr, metrics_);
  }
  void TearDown() override {
    stage_.reset();
    fs::remove_all(dir_);
  }

  fs::path dir_;
  OrchestratorConfig config_;
  FakeEncoder encoder_;
  std::unique_ptr<FlakyStore> store_;
  MetricsRegistry metrics_;
  std::unique_ptr<MediaStage> stage_;
};

TEST_F(MediaStageTest, EachDistinctMediumIsEncodedOnceAndSharedByThePartsThatRepeatIt) {
  const std::string a = DataUrl(Media("rgb.png")), b = DataUrl(Media("la.png"));
  auto uris = stage_->Resolve(WithParts({a, b, a, a}), "req-1");
  ASSERT_TRUE(uris.ok()) << uris.status().ToString();
  ASSERT_EQ(uris->size(), 4u);
  EXPECT_EQ(encoder_.calls, 2);
  EXPECT_NE((*uris)[0].uri, (*uris)[1].uri);
  EXPECT_EQ((*uris)[0].uri, (*uris)[2].uri);
  EXPECT_EQ((*uris)[0].uri, (*uris)[3].uri);
  EXPECT_EQ((*uris)[0].cls, media::MediaClass::kImage);
  EXPECT_TRUE((*uris)[0].uri.starts_with(config_.store + "/emb/omni-ve/")) << (*uris)[0].uri;
  // The media objects went to the store once each, where the encoder reads them.
  EXPECT_EQ(store_->List("media/")->size(), 2u);
}

TEST_F(MediaStageTest, APartWhoseMediumIsBeingEncodedWaitsForThatCallInsteadOfMakingAnother) {
  const std::string a = DataUrl(Media("rgb.png"));
  encoder_.hold = true;
  auto resolving = std::async(std::launch::async, [&] { return stage_->Resolve(WithParts({a, a}), "req-1"); });
  encoder_.WaitForCalls(1);
  // Give the second part ample time to make a call of its own, were it to.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  encoder_.Release();
  auto uris = resolving.get();
  ASSERT_TRUE(uris.ok()) << uris.status().ToString();
  EXPECT_EQ(encoder_.calls, 1);
  EXPECT_EQ((*uris)[0].uri, (*uris)[1].uri);
}

TEST_F(MediaStageTest, TheEncodersMediumFaultsAreTheClientsWithoutOurStoreURIsAndItsOtherFailuresA503) {
  const std::string url = DataUrl(Media("rgb.png"));
  encoder_.error_status = 400;
  encoder_.error_body = Json{{"error", {{"message", "decoding failed"}}}}.dump();
  auto refused = stage_->Resolve(WithParts({url}), "req-1");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("messages[0].content[0]"), std::string::npos);

  // A 403 is the deployment's problem (the encoder may not read our store),
  // not the client's: 503, and the encoder's text stays in our log.
  encoder_.error_status = 403;
  encoder_.error_body = Json{{"error", {{"message", "file " + config_.store + "/media/secret is outside"}}}}.dump();
  auto forbidden = stage_->Resolve(WithParts({url}), "req-2");
  ASSERT_FALSE(forbidden.ok());
  EXPECT_EQ(forbidden.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(forbidden.status().error_code(), "encoder_failed");
  EXPECT_EQ(forbidden.status().message().find(config_.store), std::string::npos) << forbidden.status().message();

  encoder_.error_status = 429;
  auto busy = stage_->Resolve(WithParts({url}), "req-3");
  EXPECT_EQ(busy.status().code(), StatusCode::kResourceExhausted);
}

TEST_F(MediaStageTest, TheEncodersMessageNeverNamesTheObjectItRead) {
  // What the encoder read is media/<sha>.png in our store: learn its URI
  // from the call the fake saw, then script a refusal that names it.
  const std::string url = DataUrl(Media("rgb.png"));
  encoder_.error_status = 415;
  encoder_.error_body = Json{{"error", {{"message", "placeholder"}}}}.dump();
  ASSERT_FALSE(stage_->Resolve(WithParts({url}), "req-1").ok());
  const std::string object = Json::parse(encoder_.bodies.back())["media"]["url"];
  ASSERT_TRUE(object.starts_with(config_.store + "/media/")) << object;
  encoder_.error_body = Json{{"error", {{"message", "cannot decode " + object + ": bad data"}}}}.dump();
  auto r = stage_->Resolve(WithParts({url}), "req-2");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupportedMedia);
  EXPECT_EQ(r.status().message().find(object), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("cannot decode the medium: bad data"), std::string::npos)
      << r.status().message();
}

TEST_F(MediaStageTest, AnHttpsUrlIsFetchedOverTlsWithTheServersCertificateVerified) {
  testing::TlsFixture tls;
  testing::TlsTestServer server(tls.server_cert.get(), tls.server_key.get());
  const std::string url = "https://127.0.0.1:" + std::to_string(server.port()) + "/cat.png";
  config_.media.fetch_allow_loopback = true;
  HttpClient verified({.ca_file = tls.WriteCaFile(dir_.string())});
  MetricsRegistry metrics, other_metrics;
  MediaStage stage(config_, encoder_, store_.get(), &verified, metrics);
  // The server answers text: fetched, sniffed, refused as no image.
  auto fetched = stage.Resolve(WithParts({url}), "req-1");
  ASSERT_FALSE(fetched.ok());
  EXPECT_EQ(fetched.status().code(), StatusCode::kUnsupportedMedia) << fetched.status().ToString();
  EXPECT_NE(fetched.status().message().find("not an image"), std::string::npos) << fetched.status().message();
  // A client that does not trust the server's CA gets no bytes: the URL
  // does not answer as it should, the client's fault.
  HttpClient system_cas;
  MediaStage untrusting(config_, encoder_, store_.get(), &system_cas, other_metrics);
  auto refused = untrusting.Resolve(WithParts({url}), "req-2");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().error_code(), "invalid_image_url") << refused.status().ToString();
  EXPECT_EQ(encoder_.calls, 0);
}

TEST_F(MediaStageTest, AStoreThatFailsIsA503StoreUnavailable) {
  store_->down = true;
  auto r = stage_->Resolve(WithParts({DataUrl(Media("rgb.png"))}), "req-1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().error_code(), "store_unavailable");
  EXPECT_EQ(encoder_.calls, 0);
}

TEST_F(MediaStageTest, AfterStopNoPartIsWorkedOn) {
  stage_->Stop();
  auto r = stage_->Resolve(WithParts({DataUrl(Media("rgb.png"))}), "req-1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_code(), "server_shutdown");
  EXPECT_EQ(encoder_.calls, 0);
  EXPECT_TRUE(store_->List("media/")->empty());
}

// What a client received (whole answers only: these requests never stream).
class Answer final : public ResponseWriter {
 public:
  bool Send(HttpResponse response) override {
    std::lock_guard lock(mu);
    whole = std::move(response);
    cv.notify_all();
    return true;
  }
  bool StartStream(int, HttpHeaders) override { return false; }
  bool Write(std::string_view) override { return false; }
  bool WriteNoWait(std::string_view) override { return false; }
  bool Finish() override { return false; }
  bool client_gone() const override { return false; }
  void OnClientGone(std::function<void()>) override {}
  const std::string& request_id() const override { return id; }
  HttpResponse Wait() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return whole.has_value(); });
    return *whole;
  }

  std::mutex mu;
  std::condition_variable cv;
  std::optional<HttpResponse> whole;
  std::string id = "req";
};

HttpRequest ChatRequest(const std::vector<std::string>& urls) {
  Json content = Json::array();
  for (const std::string& u : urls) content.push_back({{"type", "image_url"}, {"image_url", {{"url", u}}}});
  HttpRequest req;
  req.method = HttpMethod::kPost;
  req.path = req.target = "/v1/chat/completions";
  req.request_id = "req";
  req.remote_address = "127.0.0.1:5555";
  req.body = Json{{"model", "omni-demo"}, {"messages", {{{"role", "user"}, {"content", content}}}}}.dump();
  return req;
}

TEST_F(MediaStageTest, TheOrchestratorBoundsPartsPerRequestAndRequestsWaitingForMedia) {
  config_.media.max_parts = 2;
  config_.media.max_pending = 1;
  FakeClock clock;
  MetricsRegistry metrics;
  auto service = std::make_unique<OrchestratorService>(config_, encoder_, store_.get(), clock, metrics);
  const std::string url = DataUrl(Media("rgb.png"));

  auto too_many = std::make_shared<Answer>();
  service->Chat(ChatRequest({url, url, url}), too_many);
  HttpResponse r = too_many->Wait();
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Json::parse(r.body)["error"]["code"], "too_many_media_parts") << r.body;

  // The first request holds the one media slot (its encoder call blocks);
  // the second is told to come back.
  encoder_.hold = true;
  auto first = std::make_shared<Answer>();
  service->Chat(ChatRequest({url}), first);
  encoder_.WaitForCalls(1);
  auto second = std::make_shared<Answer>();
  service->Chat(ChatRequest({url}), second);
  HttpResponse busy = second->Wait();
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.headers.GetOr("retry-after", ""), "1");
  EXPECT_EQ(Json::parse(busy.body)["error"]["code"], "orchestrator_busy") << busy.body;
  encoder_.Release();
  // The first went on to the gateway (the fake ends that call at once).
  while (true) {
    std::lock_guard lock(encoder_.mu_);
    if (encoder_.chats == 1) break;
  }
  service.reset();
}

TEST_F(MediaStageTest, TheOrchestratorKeepsTheClientsKeyOrderWhenItRewritesTheURLs) {
  FakeClock clock;
  MetricsRegistry metrics;
  struct Capture final : Upstream {
    explicit Capture(FakeEncoder& e) : encoder(e) {}
    std::shared_ptr<HttpCallHandle> StreamAsync(HttpClientRequest request, HttpStreamCallbacks,
                                                std::function<void(StatusOr<int>)> done) override {
      std::lock_guard lock(mu);
      body = request.body;
      done(Status(StatusCode::kCancelled, "captured"));
      return nullptr;
    }
    StatusOr<HttpClientResponse> Request(const HttpClientRequest& r) override { return encoder.Request(r); }
    FakeEncoder& encoder;
    std::mutex mu;
    std::string body;
  } capture(encoder_);
  OrchestratorService service(config_, capture, store_.get(), clock, metrics);
  HttpRequest req = ChatRequest({});
  const std::string url = DataUrl(Media("rgb.png"));
  req.body = R"({"model":"omni-demo","temperature":0,"messages":[{"role":"user","content":[{"type":"image_url",)"
             R"("image_url":{"url":")" + url + R"(","detail":"high"}},{"type":"text","text":"hi"}]}],"max_tokens":3})";
  service.Chat(std::move(req), std::make_shared<Answer>());
  std::string body;
  while (body.empty()) {
    std::lock_guard lock(capture.mu);
    body = capture.body;
  }
  EXPECT_TRUE(body.starts_with(R"({"model":"omni-demo","temperature":0,"messages":)")) << body;
  EXPECT_NE(body.find(R"("image_url":{"url":")" + config_.store + "/emb/omni-ve/"), std::string::npos) << body;
  EXPECT_NE(body.find(R"(.safetensors","detail":"high"})"), std::string::npos) << body;
  EXPECT_TRUE(body.ends_with(R"("max_tokens":3})")) << body;
}

}  // namespace
}  // namespace omni::orchestrator
