// The audio decoder over HTTP: a real HttpServer on 127.0.0.1:0, the demo
// vocoder behind a batcher whose forwards can be held at a gate, so which
// requests meet in a forward is decided by the test, not by timing.
// Concurrent requests share a forward (and each gets its own clip), max
// batch 1 never batches, a full server answers 429, a client that hung up
// while waiting is skipped, and the routes keep their shapes.
#include "services/decoder/audio_decoder_http.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/decoder/audio_decoder_test_util.h"

namespace omni::decoder {
namespace {

using namespace std::chrono_literals;
using testing::DemoVocoder;
using testing::MetricValue;
using testing::TestUnits;

// Every forward waits here until Open().
class Gate {
 public:
  void Enter(size_t clips) {
    std::unique_lock lock(mu_);
    if (entered_++ == 0) first_clips_ = clips;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
  }
  // Blocks until the first forward is at the gate; returns its clips.
  size_t WaitForFirst() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return entered_ >= 1; });
    return first_clips_;
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;        // guarded by mu_
  size_t first_clips_ = 0;  // guarded by mu_
  bool open_ = false;      // guarded by mu_
};

class AudioServer {
 public:
  AudioServer(int max_batch, AudioDecoderHttpOptions options)
      : demo_(DemoVocoder::Get()),
        store_("audio_decoder_http_test"),
        model_batch_(VocodeBatchFn(*demo_.model)),
        batcher_(
            [this](std::span<const VocodeInput* const> inputs) {
              gate_.Enter(inputs.size());
              return model_batch_(inputs);
            },
            max_batch, &metrics_, "omni_audio_decoder"),
        service_({.model_id = "omni-ad", .store = &store_.store(), .store_uri = store_.uri(), .metrics = &metrics_},
                 *demo_.model, *demo_.speakers, [this](const VocodeInput& in) { return batcher_.Forward(in); }),
        adapter_(service_, metrics_, options),
        server_(ServerOptions(&metrics_)) {
    adapter_.RegisterRoutes(server_);
    const Status started = server_.Start();
    EXPECT_TRUE(started.ok()) << started.ToString();
    base_ = "http://127.0.0.1:" + std::to_string(server_.port());
  }
  ~AudioServer() {
    gate_.Open();
    server_.Shutdown();
  }

  StatusOr<HttpClientResponse> PostRaw(HttpClient& client, const std::string& path, std::string body,
                                       std::chrono::milliseconds timeout = 60s) {
    return client.Request(
        {.method = HttpMethod::kPost, .url = base_ + path, .body = std::move(body), .timeout = timeout});
  }
  StatusOr<HttpClientResponse> Post(HttpClient& client, const std::string& path, const nlohmann::json& body,
                                    std::chrono::milliseconds timeout = 60s) {
    return PostRaw(client, path, body.dump(), timeout);
  }
  StatusOr<HttpClientResponse> Get(const std::string& path) {
    return scraper_.Request({.method = HttpMethod::kGet, .url = base_ + path});
  }
  double Metric(const std::string& sample) {
    auto scraped = Get("/metrics");
    EXPECT_TRUE(scraped.ok());
    return scraped.ok() ? MetricValue(scraped->body, sample) : -1;
  }

  Gate& gate() { return gate_; }
  VocodeBatcher& batcher() { return batcher_; }
  AudioDecoderHttpAdapter& adapter() { return adapter_; }
  FsStore& store() { return store_.store(); }

 private:
  static HttpServerOptions ServerOptions(MetricsRegistry* metrics) {
    HttpServerOptions o;
    o.access_log = false;
    o.metrics = metrics;
    return o;
  }

  const DemoVocoder& demo_;
  testing::TempStore store_;
  MetricsRegistry metrics_;
  Gate gate_;
  VocodeBatcher::BatchFn model_batch_;
  VocodeBatcher batcher_;
  AudioDecoderService service_;
  AudioDecoderHttpAdapter adapter_;
  HttpServer server_;  // shut down first, in the destructor
  std::string base_;
  HttpClient scraper_;  // one pooled connection for /metrics
};

std::vector<int16_t> InlinePcm(const HttpClientResponse& response) {
  const nlohmann::json j = nlohmann::json::parse(response.body);
  const auto bytes = Base64Decode(j.at("audio").get<std::string>());
  EXPECT_TRUE(bytes.has_value());
  std::vector<int16_t> pcm(bytes ? bytes->size() / 2 : 0);
  if (bytes) std::memcpy(pcm.data(), bytes->data(), pcm.size() * 2);
  return pcm;
}

nlohmann::json PcmBody(const std::vector<int32_t>& units, const std::string& speaker = "fkms") {
  return {{"units", units}, {"speaker", {{"id", speaker}}}, {"format", "pcm16"}, {"inline", true}};
}

// Sends `bodies` at once; the first forward is held until every other
// request waits in the batcher, then all go. (The first forward itself may
// hold more than one clip when requests arrive together.)
std::vector<StatusOr<HttpClientResponse>> SendBehindAHeldForward(AudioServer& server,
                                                                const std::vector<nlohmann::json>& bodies) {
  HttpClient client;
  std::vector<std::future<StatusOr<HttpClientResponse>>> futures;
  for (const nlohmann::json& body : bodies) {
    futures.push_back(std::async(std::launch::async, [&server, &client, body] {
      return server.Post(client, "/v1/decode", body);
    }));
  }
  const size_t first = server.gate().WaitForFirst();
  while (first + server.batcher().waiting() < bodies.size()) std::this_thread::sleep_for(2ms);
  server.gate().Open();
  std::vector<StatusOr<HttpClientResponse>> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

TEST(AudioDecoderHttpTest, ConcurrentRequestsShareAForwardAndEachGetsItsOwnClip) {
  AudioServer server(/*max_batch=*/8, {.workers = 8, .max_queue = 32});
  const std::vector<std::string> speakers = {"fkms", "mhwj", "fphj", "mphw"};
  std::vector<nlohmann::json> bodies;
  std::vector<std::vector<int32_t>> units;
  for (int i = 0; i < 8; ++i) {
    units.push_back(TestUnits(5 + i, i));
    bodies.push_back(PcmBody(units.back(), speakers[i % 4]));
  }
  const auto answers = SendBehindAHeldForward(server, bodies);
  const models::UnitBigVgan& model = *DemoVocoder::Get().model;
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(answers[i].ok()) << answers[i].status().ToString();
    ASSERT_EQ(answers[i]->status, 200) << answers[i]->body;
    const std::vector<int16_t> got = InlinePcm(*answers[i]);
    // Its own clip: the one-shot waveform of its units and speaker.
    auto alone = model.Vocode(units[i], *model.SpeakerRow(i % 4));
    ASSERT_TRUE(alone.ok());
    const std::vector<int16_t> want = models::ToPcm16(*alone);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(got.size(), units[i].size() * 960);
    for (size_t k = 0; k < got.size(); ++k) ASSERT_LE(std::abs(got[k] - want[k]), 1) << k;
  }
  // The held forward, then the clips that waited behind it in one: some
  // forward had more than one clip, and every clip went through one forward.
  const double forwards = server.Metric("omni_audio_decoder_batch_size_count");
  EXPECT_LE(forwards, 2);
  EXPECT_LT(server.Metric("omni_audio_decoder_batch_size_bucket{le=\"1\"}"), forwards);
  EXPECT_EQ(server.Metric("omni_audio_decoder_batch_size_sum"), 8);
  EXPECT_EQ(server.Metric("omni_audio_decoder_forward_seconds_count"), forwards);
  EXPECT_EQ(server.Metric("omni_audio_decoder_requests_total{result=\"ok\"}"), 8);
  double seconds = 0;
  for (const auto& u : units) seconds += u.size() * 960 / 24000.0;
  EXPECT_NEAR(server.Metric("omni_audio_decoder_audio_seconds_total"), seconds, 1e-9);
}

TEST(AudioDecoderHttpTest, MaxBatchOneRunsEveryClipAlone) {
  AudioServer server(/*max_batch=*/1, {.workers = 4, .max_queue = 4});
  const auto answers =
      SendBehindAHeldForward(server, {PcmBody(TestUnits(4, 1)), PcmBody(TestUnits(5, 2)), PcmBody(TestUnits(6, 3))});
  for (const auto& a : answers) {
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->status, 200) << a->body;
  }
  EXPECT_EQ(server.Metric("omni_audio_decoder_batch_size_count"), 3);
  EXPECT_EQ(server.Metric("omni_audio_decoder_batch_size_bucket{le=\"1\"}"), 3);
}

TEST(AudioDecoderHttpTest, AFullServerAnswers429) {
  AudioServer server(/*max_batch=*/8, {.workers = 1, .max_queue = 0});
  HttpClient client;
  auto held = std::async(std::launch::async, [&] { return server.Post(client, "/v1/decode", PcmBody(TestUnits(5))); });
  server.gate().WaitForFirst();
  auto busy = server.Post(client, "/v1/decode", PcmBody(TestUnits(6)));
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();
  EXPECT_EQ(busy->status, 429);
  EXPECT_EQ(busy->headers.GetOr("retry-after", ""), "1");
  EXPECT_EQ(nlohmann::json::parse(busy->body)["error"]["code"], "server_busy");
  // A malformed body is still told so at once, full or not.
  auto bad = server.Post(client, "/v1/decode", {{"units", {1, 2}}});
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  server.gate().Open();
  auto served = held.get();
  ASSERT_TRUE(served.ok());
  EXPECT_EQ(served->status, 200) << served->body;
  EXPECT_TRUE(server.adapter().WaitIdle(30s));
  EXPECT_EQ(server.Metric("omni_audio_decoder_requests_total{result=\"rejected\"}"), 1);
  EXPECT_EQ(server.Metric("omni_audio_decoder_requests_held"), 0);
  auto again = server.Post(client, "/v1/decode", PcmBody(TestUnits(6)));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, 200) << again->body;
}

TEST(AudioDecoderHttpTest, AClientThatHungUpWhileWaitingIsSkipped) {
  AudioServer server(/*max_batch=*/8, {.workers = 1, .max_queue = 1});
  HttpClient client;
  auto held = std::async(std::launch::async, [&] { return server.Post(client, "/v1/decode", PcmBody(TestUnits(5))); });
  server.gate().WaitForFirst();
  const double connections = server.Metric("omni_http_open_connections");  // the held one and the scraper's
  {
    HttpClient impatient;
    auto gone = server.Post(impatient, "/v1/decode", PcmBody(TestUnits(7)), 300ms);
    EXPECT_FALSE(gone.ok());  // timed out: its connection is closed
  }
  // The server saw the hang-up once the connection is gone from its count.
  while (server.Metric("omni_http_open_connections") != connections) std::this_thread::sleep_for(5ms);
  server.gate().Open();
  auto served = held.get();
  ASSERT_TRUE(served.ok());
  EXPECT_EQ(served->status, 200);
  EXPECT_TRUE(server.adapter().WaitIdle(30s));
  EXPECT_EQ(server.Metric("omni_audio_decoder_requests_total{result=\"cancelled\"}"), 1);
  EXPECT_EQ(server.Metric("omni_audio_decoder_batch_size_count"), 1);  // never vocoded
}

TEST(AudioDecoderHttpTest, RoutesKeepTheirShapes) {
  AudioServer server(/*max_batch=*/8, {.workers = 2, .max_queue = 4});
  server.gate().Open();
  HttpClient client;
  auto models = server.Get("/v1/models");
  ASSERT_TRUE(models.ok());
  EXPECT_EQ(models->status, 200);
  const nlohmann::json list = nlohmann::json::parse(models->body);
  EXPECT_EQ(list["object"], "list");
  ASSERT_EQ(list["data"].size(), 1u);
  EXPECT_EQ(list["data"][0]["id"], "omni-ad");
  EXPECT_EQ(server.Get("/health")->status, 200);

  auto stored = server.Post(client, "/v1/decode", {{"model", "omni-ad"}, {"units", TestUnits(25)}});
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->status, 200) << stored->body;
  const nlohmann::json j = nlohmann::json::parse(stored->body);
  EXPECT_EQ(j["object"], "audio");
  EXPECT_EQ(j["model"], "omni-ad");
  EXPECT_EQ(j["format"], "wav");
  EXPECT_EQ(j["mime"], "audio/wav");
  EXPECT_EQ(j["sample_rate"], 24000);
  EXPECT_EQ(j["samples"], 25 * 960);
  EXPECT_DOUBLE_EQ(j["duration"].get<double>(), 1.0);
  EXPECT_EQ(j["units"], 25);
  EXPECT_EQ(j["speaker"], "fkms");
  EXPECT_GT(j["expires_at"].get<int64_t>(), 1'700'000'000);
  EXPECT_FALSE(j.contains("audio"));
  auto object = server.store().Get(j["key"].get<std::string>());
  ASSERT_TRUE(object.ok());
  EXPECT_EQ(object->size(), j["bytes"].get<size_t>());
  EXPECT_EQ(j["uri"].get<std::string>().substr(0, 7), "file://");

  auto predicted = server.Post(client, "/predictions",
                               {{"units", TestUnits(10)}, {"format", "mp3"}, {"speaker", {{"id", "mphw"}}}});
  ASSERT_TRUE(predicted.ok());
  ASSERT_EQ(predicted->status, 200) << predicted->body;
  const nlohmann::json p = nlohmann::json::parse(predicted->body);
  EXPECT_EQ(p["requested_format"], "mp3");
  EXPECT_EQ(p["content_type"], "audio/mpeg");
  EXPECT_DOUBLE_EQ(p["duration"].get<double>(), 0.4);
  ASSERT_TRUE(p["s3_key"].is_string());
  EXPECT_EQ(server.store().Get(p["s3_key"].get<std::string>())->size(), p["size_bytes"].get<size_t>());
  EXPECT_TRUE(p["url"].is_string());

  struct Bad {
    std::string path;
    nlohmann::json body;
    int status;
    std::string param, code;
  };
  const std::vector<Bad> bad = {
      {"/v1/decode", {{"model", "nope"}, {"units", TestUnits(5)}}, 404, "model", "model_not_found"},
      {"/v1/decode", {{"units", {1, 2, 6561}}}, 400, "units", ""},
      {"/v1/decode", {{"units", TestUnits(5)}, {"speaker", {{"id", "nobody"}}}}, 400, "speaker.id", ""},
      {"/v1/decode", {{"units", TestUnits(5)}, {"speaker", {{"ref_audio", "https://x/a.wav"}}}}, 400,
       "speaker.ref_audio", "unsupported_speaker"},
      {"/v1/decode", {{"units", TestUnits(5)}, {"format", "wma"}}, 400, "format", ""},
      {"/predictions", {{"units", TestUnits(5)}, {"speaker", {{"age", "99"}}}}, 400, "speaker.age", ""},
  };
  for (const Bad& b : bad) {
    auto r = server.Post(client, b.path, b.body);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, b.status) << b.body.dump();
    const nlohmann::json e = nlohmann::json::parse(r->body)["error"];
    EXPECT_EQ(e["param"], b.param) << r->body;
    if (!b.code.empty()) {
      EXPECT_EQ(e["code"], b.code) << r->body;
    }
  }
  auto malformed = server.PostRaw(client, "/v1/decode", "{\"units\": [1, 2");
  ASSERT_TRUE(malformed.ok());
  EXPECT_EQ(malformed->status, 400);
  EXPECT_EQ(server.Metric("omni_audio_decoder_requests_total{result=\"invalid\"}"), 7);
  EXPECT_EQ(server.Metric("omni_audio_decoder_requests_total{result=\"ok\"}"), 2);
}

}  // namespace
}  // namespace omni::decoder
