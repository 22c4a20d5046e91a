// OrchestratorService driven without sockets: a fake gateway (Upstream) whose
// exchanges the test plays step by step, and a fake client (ResponseWriter)
// that records what it was sent.
#include "services/orchestrator/orchestrator_service.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>

namespace omni::orchestrator {
namespace {

using Json = nlohmann::json;

class FakeHandle final : public HttpCallHandle {
 public:
  void Cancel() override { ++cancels; }
  int cancels = 0;
};

class FakeUpstream final : public Upstream {
 public:
  struct Exchange {
    HttpClientRequest request;
    HttpStreamCallbacks callbacks;
    std::function<void(StatusOr<int>)> done;
    std::shared_ptr<FakeHandle> handle = std::make_shared<FakeHandle>();
  };
  std::shared_ptr<HttpCallHandle> StreamAsync(HttpClientRequest request, HttpStreamCallbacks callbacks,
                                              std::function<void(StatusOr<int>)> done) override {
    exchanges.push_back(Exchange{std::move(request), std::move(callbacks), std::move(done)});
    return exchanges.back().handle;
  }
  StatusOr<HttpClientResponse> Request(const HttpClientRequest& request) override {
    requests.push_back(request);
    auto it = answers.find(request.url);
    if (it == answers.end()) return Unavailable("connection refused");
    return it->second;
  }
  std::vector<Exchange> exchanges;
  std::vector<HttpClientRequest> requests;
  std::map<std::string, HttpClientResponse> answers;  // by URL; absent: refused
};

// What a client received.
struct Received {
  std::optional<HttpResponse> whole;
  int stream_status = 0;
  std::string streamed;
  bool finished = false;
  std::function<void()> on_gone;
};

class FakeWriter final : public ResponseWriter {
 public:
  explicit FakeWriter(Received& r) : r_(r) {}
  bool Send(HttpResponse response) override {
    r_.whole = std::move(response);
    return true;
  }
  bool StartStream(int status, HttpHeaders) override {
    r_.stream_status = status;
    return true;
  }
  bool Write(std::string_view chunk) override {
    r_.streamed.append(chunk);
    return true;
  }
  bool WriteNoWait(std::string_view chunk) override { return Write(chunk); }
  bool Finish() override {
    r_.finished = true;
    return true;
  }
  bool client_gone() const override { return false; }
  void OnClientGone(std::function<void()> cb) override { r_.on_gone = std::move(cb); }
  const std::string& request_id() const override { return id_; }

 private:
  Received& r_;
  std::string id_ = "req-1";
};

constexpr char kGateway[] = "http://127.0.0.1:1";
constexpr char kChat[] = R"({"model":"omni-demo","messages":[{"role":"user","content":"hi"}]})";

struct Fixture {
  Fixture() : service(Config(), upstream, nullptr, clock, metrics) {}
  static OrchestratorConfig Config() {
    OrchestratorConfig c;
    c.gateway = kGateway;
    c.timeouts.llm = std::chrono::milliseconds(7000);
    c.components = {{"llm-0", "http://127.0.0.1:2"}, {"llm-1", "http://127.0.0.1:3"}};
    return c;
  }
  void Chat(std::string body, Received& r, std::string id = "req-1") {
    HttpRequest req;
    req.method = HttpMethod::kPost;
    req.path = req.target = "/v1/chat/completions";
    req.request_id = std::move(id);
    req.remote_address = "127.0.0.1:5555";
    req.headers.Set("content-type", "application/json");
    req.body = std::move(body);
    service.Chat(std::move(req), std::make_shared<FakeWriter>(r));
  }
  std::string Metrics() { return metrics.Render(); }

  FakeClock clock;
  MetricsRegistry metrics;
  FakeUpstream upstream;
  OrchestratorService service;
};

HttpHeaders Headers(std::initializer_list<std::pair<std::string, std::string>> kv) {
  HttpHeaders h;
  for (const auto& [k, v] : kv) h.Set(k, v);
  return h;
}

Json ErrorOf(const std::string& body) { return Json::parse(body).at("error"); }

TEST(OrchestratorService, ForwardsTheBodyUnchangedToTheGatewayWithTheRequestId) {
  Fixture f;
  Received r;
  f.Chat(kChat, r, "abc-123");
  ASSERT_EQ(f.upstream.exchanges.size(), 1u);
  FakeUpstream::Exchange& x = f.upstream.exchanges[0];
  EXPECT_EQ(x.request.url, std::string(kGateway) + "/v1/chat/completions");
  EXPECT_EQ(x.request.method, HttpMethod::kPost);
  EXPECT_EQ(x.request.body, kChat);
  EXPECT_EQ(x.request.headers.GetOr("x-request-id", ""), "abc-123");
  EXPECT_EQ(x.request.headers.GetOr("x-forwarded-for", ""), "127.0.0.1");
  EXPECT_EQ(x.request.timeout, std::chrono::milliseconds(7000));  // the LLM stage's timeout

  const std::string answer = R"({"id":"chatcmpl-1","choices":[]})";
  ASSERT_TRUE(x.callbacks.on_headers(200, Headers({{"content-type", "application/json"},
                                                   {"content-length", std::to_string(answer.size())}})));
  ASSERT_TRUE(x.callbacks.on_body(answer));
  EXPECT_FALSE(r.whole.has_value());  // a whole answer goes out when complete
  x.done(200);
  ASSERT_TRUE(r.whole.has_value());
  EXPECT_EQ(r.whole->status, 200);
  EXPECT_EQ(r.whole->body, answer);
  EXPECT_FALSE(r.whole->headers.Has("content-length"));  // the server frames it anew
  EXPECT_NE(f.Metrics().find("orchestrator_requests_total{outcome=\"ok\"} 1"), std::string::npos);
}

TEST(OrchestratorService, BadRequestsAreRefusedBeforeAnyUpstreamCall) {
  Fixture f;
  struct Case {
    std::string body;
    std::string param;
  };
  for (const Case& c : std::vector<Case>{
           {"{\"model\":", ""},
           {R"({"model":"omni-demo","messages":"hi"})", "messages"},
           {R"({"model":"omni-demo","messages":[{"role":"user","content":"hi"}],"temperature":"hot"})",
            "temperature"},
           {R"({"model":"omni-demo","messages":[{"role":"robot","content":"hi"}]})", "messages[0].role"},
       }) {
    Received r;
    f.Chat(c.body, r);
    ASSERT_TRUE(r.whole.has_value()) << c.body;
    EXPECT_EQ(r.whole->status, 400) << c.body;
    Json e = ErrorOf(r.whole->body);
    EXPECT_EQ(e.at("type"), "invalid_request_error");
    if (!c.param.empty()) {
      EXPECT_EQ(e.at("param"), c.param) << c.body;
    }
  }
  EXPECT_TRUE(f.upstream.exchanges.empty());
  EXPECT_NE(f.Metrics().find("orchestrator_requests_total{outcome=\"rejected\"} 4"), std::string::npos);
}

TEST(OrchestratorService, AMediaPartIsRefusedNamingThePartAndThePoolItNeeds) {
  Fixture f;
  struct Case {
    std::string part;
    std::string pool;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}})", "vision encoder"},
           {R"({"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}})", "vision encoder"},
           {R"({"type":"video_url","video_url":{"url":"s3://bucket/clip.mp4"}})", "vision encoder"},
           {R"({"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}})", "audio encoder"},
       }) {
    Received r;
    f.Chat(R"({"model":"omni-demo","messages":[{"role":"system","content":"s"},{"role":"user","content":[)"
           R"({"type":"text","text":"what is this?"},)" +
               c.part + "]}]}",
           r);
    ASSERT_TRUE(r.whole.has_value()) << c.part;
    EXPECT_EQ(r.whole->status, 400);
    Json e = ErrorOf(r.whole->body);
    EXPECT_EQ(e.at("param"), "messages[1].content[1]") << c.part;
    EXPECT_EQ(e.at("code"), "media_pool_missing");
    const std::string message = e.at("message");
    EXPECT_NE(message.find(c.pool + " pool"), std::string::npos) << message;
    const std::string type = Json::parse(c.part).at("type");
    EXPECT_NE(message.find(type), std::string::npos) << message;
  }
  EXPECT_TRUE(f.upstream.exchanges.empty());
}

TEST(OrchestratorService, AStreamIsRelayedWholeEventsAndEndsWithAnErrorEventWhenTheGatewayBreaksOff) {
  Fixture f;
  Received r;
  f.Chat(kChat, r);
  FakeUpstream::Exchange& x = f.upstream.exchanges.at(0);
  ASSERT_TRUE(x.callbacks.on_headers(200, Headers({{"content-type", "text/event-stream"}})));
  EXPECT_EQ(r.stream_status, 200);
  ASSERT_TRUE(x.callbacks.on_body("data: {\"n\":1}\n\ndata: {\"n\""));
  EXPECT_EQ(r.streamed, "data: {\"n\":1}\n\n");  // the half event is held back
  x.done(Unavailable("connection reset by peer"));
  // The held half event is dropped; an error event and [DONE] end the stream.
  const std::string rest = r.streamed.substr(std::string("data: {\"n\":1}\n\n").size());
  ASSERT_TRUE(rest.starts_with("data: {\"error\":")) << rest;
  EXPECT_TRUE(rest.ends_with("data: [DONE]\n\n")) << rest;
  Json e = ErrorOf(rest.substr(6, rest.find("\n\n") - 6));
  EXPECT_EQ(e.at("code"), "upstream_failed");
  EXPECT_TRUE(r.finished);
  EXPECT_NE(f.Metrics().find("orchestrator_requests_total{outcome=\"failed\"} 1"), std::string::npos);
}

TEST(OrchestratorService, AGatewayThatDoesNotAnswerGets503AndASlowOne504) {
  Fixture f;
  Received down, slow;
  f.Chat(kChat, down);
  f.Chat(kChat, slow);
  f.upstream.exchanges[0].done(Unavailable("connection refused"));
  f.upstream.exchanges[1].done(DeadlineExceeded("timed out"));
  ASSERT_TRUE(down.whole.has_value());
  EXPECT_EQ(down.whole->status, 503);
  EXPECT_EQ(ErrorOf(down.whole->body).at("code"), "gateway_unavailable");
  ASSERT_TRUE(slow.whole.has_value());
  EXPECT_EQ(slow.whole->status, 504);
  Json e = ErrorOf(slow.whole->body);
  EXPECT_EQ(e.at("code"), "llm_timeout");
  EXPECT_NE(std::string(e.at("message")).find("timeouts.llm_s (7 s)"), std::string::npos);
}

TEST(OrchestratorService, AGatewayErrorAnswerIsRelayedAsItIs) {
  Fixture f;
  Received r;
  f.Chat(R"({"model":"nope","messages":[{"role":"user","content":"hi"}]})", r);
  FakeUpstream::Exchange& x = f.upstream.exchanges.at(0);
  const std::string body = R"({"error":{"message":"model nope is not served","type":"not_found_error"}})";
  x.callbacks.on_headers(404, Headers({{"content-length", std::to_string(body.size())}}));
  x.callbacks.on_body(body);
  x.done(404);
  ASSERT_TRUE(r.whole.has_value());
  EXPECT_EQ(r.whole->status, 404);
  EXPECT_EQ(r.whole->body, body);
}

TEST(OrchestratorService, AClientThatGoesAwayCancelsTheGatewayCall) {
  Fixture f;
  Received r;
  f.Chat(kChat, r);
  FakeUpstream::Exchange& x = f.upstream.exchanges.at(0);
  ASSERT_TRUE(x.callbacks.on_headers(200, Headers({{"content-type", "text/event-stream"}})));
  ASSERT_TRUE(r.on_gone);
  r.on_gone();
  EXPECT_EQ(x.handle->cancels, 1);
  x.done(Cancelled("cancelled"));
  EXPECT_EQ(r.streamed, "");  // nothing more is written to a gone client
  EXPECT_FALSE(r.finished);
  EXPECT_NE(f.Metrics().find("orchestrator_requests_total{outcome=\"client_gone\"} 1"), std::string::npos);
}

TEST(OrchestratorService, TheDrainDeadlineEndsRunningStreamsWithServerShutdown) {
  Fixture f;
  Received r;
  f.Chat(kChat, r);
  FakeUpstream::Exchange& x = f.upstream.exchanges.at(0);
  ASSERT_TRUE(x.callbacks.on_headers(200, Headers({{"content-type", "text/event-stream"}})));
  f.service.StopForShutdown();
  EXPECT_EQ(x.handle->cancels, 1);
  x.done(Cancelled("cancelled"));
  EXPECT_NE(r.streamed.find("server_shutdown"), std::string::npos) << r.streamed;
  EXPECT_TRUE(r.streamed.ends_with("data: [DONE]\n\n"));
  // A request arriving after the deadline is cancelled at once.
  Received late;
  f.Chat(kChat, late);
  EXPECT_EQ(f.upstream.exchanges.at(1).handle->cancels, 1);
}

TEST(OrchestratorService, ModelsAreTheGatewaysList) {
  Fixture f;
  const std::string list = R"({"object":"list","data":[{"id":"omni-demo","object":"model"}]})";
  f.upstream.answers[std::string(kGateway) + "/v1/models"] =
      HttpClientResponse{.status = 200, .headers = Headers({{"content-type", "application/json"}}), .body = list};
  HttpRequest req;
  req.request_id = "m-1";
  HttpResponse ok = f.service.Models(req);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, list);
  EXPECT_EQ(f.upstream.requests.back().headers.GetOr("x-request-id", ""), "m-1");
  // Only the LLM pools' models: encoders are the stack's internals.
  f.upstream.answers[std::string(kGateway) + "/v1/models"] = HttpClientResponse{
      .status = 200,
      .body = R"({"object":"list","data":[{"id":"omni-demo","role":"llm"},{"id":"omni-demo-ve","role":"vision-encoder"}]})"};
  EXPECT_EQ(f.service.Models(req).body, R"({"object":"list","data":[{"id":"omni-demo","role":"llm"}]})");
  f.upstream.answers.clear();
  HttpResponse down = f.service.Models(req);
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(ErrorOf(down.body).at("code"), "gateway_unavailable");
}

TEST(OrchestratorService, HealthReportsEachComponent) {
  Fixture f;
  HttpResponse before = f.service.Health();
  EXPECT_EQ(before.status, 503);  // nothing probed yet
  EXPECT_EQ(Json::parse(before.body).at("components").at(0).at("error"), "not probed yet");

  const HttpClientResponse healthy{.status = 200, .body = R"({"status":"ok"})"};
  f.upstream.answers[std::string(kGateway) + "/health"] = healthy;
  f.upstream.answers["http://127.0.0.1:2/health"] = healthy;
  f.upstream.answers["http://127.0.0.1:3/health"] = HttpClientResponse{.status = 503};
  f.service.ProbeComponents();
  HttpResponse degraded = f.service.Health();
  EXPECT_EQ(degraded.status, 200);
  Json d = Json::parse(degraded.body);
  EXPECT_EQ(d.at("status"), "degraded");
  ASSERT_EQ(d.at("components").size(), 3u);
  EXPECT_EQ(d["components"][0]["name"], "gateway");
  EXPECT_EQ(d["components"][0]["status"], "ok");
  EXPECT_EQ(d["components"][1]["name"], "llm-0");
  EXPECT_EQ(d["components"][1]["status"], "ok");
  EXPECT_EQ(d["components"][2]["name"], "llm-1");
  EXPECT_EQ(d["components"][2]["status"], "down");
  EXPECT_EQ(d["components"][2]["error"], "/health answered 503");

  f.upstream.answers["http://127.0.0.1:3/health"] = healthy;
  f.service.ProbeComponents();
  EXPECT_EQ(Json::parse(f.service.Health().body).at("status"), "ok");
  EXPECT_NE(f.Metrics().find("orchestrator_component_up{component=\"llm-1\"} 1"), std::string::npos);

  f.upstream.answers.erase(std::string(kGateway) + "/health");
  f.service.ProbeComponents();
  HttpResponse down = f.service.Health();
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(Json::parse(down.body).at("status"), "unavailable");
}

}  // namespace
}  // namespace omni::orchestrator
