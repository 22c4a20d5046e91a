// The LLM server's HTTP adapter over a real loopback server and client, on
// the fake model runner: what a streaming client sees when the model fails
// mid-stream, and what a client that hangs up leaves behind (nothing: its
// sequence's KV blocks are freed, and a metric counts it).
#include "services/llm/llm_http.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "net/http_client.h"
#include "net/http_server.h"
#include "services/llm/llm_test_fixture.h"

namespace omni::llm {
namespace {

struct Server {
  explicit Server(int fail_from_step = -1) : f(fail_from_step), adapter(*f.service, f.registry) {
    HttpServerOptions o;
    o.metrics = &f.registry;
    server = std::make_unique<HttpServer>(o);
    adapter.RegisterRoutes(*server);
    OMNI_CHECK(server->Start().ok());
  }
  ~Server() {
    server->Shutdown();
    f.service->Shutdown();
    adapter.WaitIdle();
  }
  std::string Url(std::string_view path) const { return "http://127.0.0.1:" + std::to_string(server->port()) + std::string(path); }

  testing::Fixture f;
  LlmHttpAdapter adapter;
  std::unique_ptr<HttpServer> server;
};

HttpClientRequest Post(const Server& s, std::string_view path, std::string body) {
  HttpClientRequest r;
  r.method = HttpMethod::kPost;
  r.url = s.Url(path);
  r.headers.Set("content-type", "application/json");
  r.body = std::move(body);
  return r;
}

// The data of each SSE event.
std::vector<std::string> Events(std::string_view body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string_view::npos) {
    const size_t end = body.find("\n\n", pos);
    out.emplace_back(body.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  return out;
}

double MetricValue(const std::string& text, std::string_view name) {
  const size_t at = text.find(std::string("\n") + std::string(name));
  if (at == std::string::npos) return -1;
  const size_t line_end = text.find('\n', at + 1);
  const std::string line = text.substr(at + 1, line_end - at - 1);
  return std::stod(line.substr(line.rfind(' ') + 1));
}

TEST(LlmHttpTest, ModelFailureMidStreamEndsWithAnErrorEventThenDone) {
  Server s(/*fail_from_step=*/3);  // prefill and two decode steps work
  HttpClient client;
  StatusOr<HttpClientResponse> r = client.Request(
      Post(s, "/v1/completions", R"({"prompt":[5,6,7],"max_tokens":50,"ignore_eos":true,"temperature":0,"stream":true})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  const std::vector<std::string> events = Events(r->body);
  ASSERT_GE(events.size(), 3u) << r->body;
  EXPECT_EQ(events.back(), "[DONE]");
  const nlohmann::json err = nlohmann::json::parse(events[events.size() - 2]);
  ASSERT_TRUE(err.contains("error")) << events[events.size() - 2];
  EXPECT_EQ(err["error"]["type"], "server_error");
  EXPECT_EQ(err["error"]["code"], "model_error");
  // Before it, the tokens that were made, and no chunk claims an ending.
  int text_chunks = 0;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    const nlohmann::json c = nlohmann::json::parse(events[i]);
    EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null()) << events[i];
    ++text_chunks;
  }
  EXPECT_EQ(text_chunks, 3);  // one token from the prefill step, one per decode step
  // The server keeps serving.
  StatusOr<HttpClientResponse> health = client.Request(HttpClientRequest{.url = s.Url("/health")});
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
}

TEST(LlmHttpTest, ClientHangingUpMidStreamFreesItsKvBlocks) {
  Server s;
  HttpClient client;
  int chunks = 0;
  HttpStreamCallbacks cb;
  cb.on_headers = [](int status, const HttpHeaders&) { return status == 200; };
  cb.on_body = [&](std::string_view) { return ++chunks < 3; };  // then hang up
  StatusOr<int> st = client.Stream(
      Post(s, "/v1/completions", R"({"prompt":[9,8,7,6,5,4,3,2,1,9,8,7,6,5,4,3,2,1,9,8],"max_tokens":3000,)"
                                 R"("ignore_eos":true,"temperature":0,"stream":true})"),
      cb);
  EXPECT_EQ(st.status().code(), StatusCode::kCancelled) << st.status().ToString();
  // The engine notices at its next step: poll the metrics the server exports.
  std::string metrics;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    StatusOr<HttpClientResponse> m = client.Request(HttpClientRequest{.url = s.Url("/metrics")});
    ASSERT_TRUE(m.ok());
    metrics = m->body;
    if (MetricValue(metrics, "omni_llm_client_disconnects_total") >= 1 &&
        MetricValue(metrics, "vllm:num_requests_running") == 0) {
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << metrics;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(MetricValue(metrics, "vllm:kv_cache_usage_perc"), 0.0) << metrics;
  const EngineMetrics em = s.f.service->engine_metrics();
  EXPECT_EQ(em.num_running, 0);
  EXPECT_EQ(em.kv_cache_usage, 0.0);
  // It was cut, not run to its 3000 tokens.
  EXPECT_EQ(MetricValue(metrics, "vllm:request_success_total{model_name=\"fake\",finished_reason=\"abort\"}"), 1.0)
      << metrics;
  EXPECT_LT(em.generation_tokens_total, 3000);
}

}  // namespace
}  // namespace omni::llm
