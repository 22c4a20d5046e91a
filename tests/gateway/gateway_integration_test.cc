// The real binary: four `omniserve llm` replicas of the demo model with KV
// events, and `omniserve gateway` in front of them with the precise prefix
// scorer. Kills a replica under load and restarts it.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "net/http_client.h"
#include "net/http_server.h"

namespace omni {
namespace {

using testing::Child;
using Json = nlohmann::json;

constexpr int kReplicas = 4;

struct Replica {
  std::unique_ptr<Child> process;
  std::string port;
  std::string kv_events;
};

class GatewayIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(::testing::TempDir() + "omni-gateway-" + std::to_string(getpid()));
    std::filesystem::create_directories(*dir_);
    Child make({"make-demo-model", "--component", "llm", "--out", *dir_ + "/model"});
    ASSERT_EQ(WEXITSTATUS(make.Wait()), 0) << make.output();
    replicas_ = new std::vector<Replica>(kReplicas);
    for (int i = 0; i < kReplicas; ++i) StartReplica(i, "0");
    std::string config = *dir_ + "/gateway.yaml";
    std::ofstream out(config);
    out << "plugins:\n"
        << "- {type: precise-prefix-cache-scorer}\n- {type: queue-scorer}\n- {type: kv-cache-utilization-scorer}\n"
        << "- {type: max-score-picker}\n"
        << "schedulingProfiles:\n- name: default\n  plugins:\n"
        << "  - {pluginRef: precise-prefix-cache-scorer, weight: 3}\n  - {pluginRef: queue-scorer, weight: 2}\n"
        << "  - {pluginRef: kv-cache-utilization-scorer, weight: 2}\n  - {pluginRef: max-score-picker}\n"
        << "pools:\n- name: llm\n  role: llm\n  models: [omni-demo]\n  schedulingProfile: default\n"
        << "  tokenizer: " << *dir_ << "/model\n  endpoints:\n";
    for (const Replica& r : *replicas_) out << "  - \"127.0.0.1:" << r.port << "\"\n";
    out << "  kvEvents:\n";
    for (const Replica& r : *replicas_) out << "  - \"" << r.kv_events << "\"\n";
    out.close();
    gateway_ = new Child({"gateway", "--config", config, "--port", "0", "--health-interval-ms", "100"});
    std::string port = gateway_->WaitForOutput(std::regex(R"(gateway: listening on http://127\.0\.0\.1:(\d+))"));
    ASSERT_FALSE(port.empty()) << gateway_->output();
    base_ = new std::string("http://127.0.0.1:" + port);
  }

  static void TearDownTestSuite() {
    delete gateway_;
    delete replicas_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete base_;
  }

  // Starts replica i on `port` ("0": any) and waits until it serves. Four
  // replicas share this machine's cores: one compute thread each (--threads),
  // or their spinning OpenMP teams starve one another.
  static void StartReplica(int i, const std::string& port) {
    Replica& r = (*replicas_)[i];
    r.process = std::make_unique<Child>(std::vector<std::string>{
        "llm", "--model", *dir_ + "/model", "--served-model-name", "omni-demo", "--port", port, "--kv-events",
        r.kv_events.empty() ? "tcp://127.0.0.1:0" : r.kv_events, "--num-kv-blocks", "256", "--threads", "1"});
    r.port = r.process->WaitForOutput(std::regex(R"(llm: listening on http://127\.0\.0\.1:(\d+))"));
    ASSERT_FALSE(r.port.empty()) << r.process->output();
    ASSERT_EQ(r.process->WaitForOutput(std::regex(R"(llm: (\d+) compute threads)")), "1") << r.process->output();
    if (r.kv_events.empty()) {
      r.kv_events = r.process->WaitForOutput(std::regex(R"(publishing KV events on (tcp://127\.0\.0\.1:\d+))"));
    }
    HttpClient client;
    for (int t = 0; t < 300; ++t) {
      auto h = client.Request({.url = "http://127.0.0.1:" + r.port + "/health"});
      if (h.ok() && h->status == 200) return;
      usleep(50'000);
    }
    FAIL() << "replica " << i << " did not become healthy: " << r.process->output();
  }

  static Json Chat(HttpClient& client, const std::string& user, int max_tokens = 4, int* status = nullptr) {
    Json body = {{"model", "omni-demo"},
                 {"messages", {{{"role", "user"}, {"content", user}}}},
                 {"max_tokens", max_tokens},
                 {"temperature", 0}};
    auto r = client.Request({.method = HttpMethod::kPost, .url = *base_ + "/v1/chat/completions",
                             .headers = {}, .body = body.dump()});
    if (!r.ok()) {
      if (status) *status = 0;
      return Json();
    }
    if (status) *status = r->status;
    return Json::parse(r->body, nullptr, false);
  }

  static Json Debug(HttpClient& client) {
    auto r = client.Request({.url = *base_ + "/debug/endpoints"});
    return r.ok() ? Json::parse(r->body, nullptr, false) : Json();
  }

  // Waits (bounded) until the gateway's view of `address` has healthy == want.
  static bool WaitHealthy(HttpClient& client, const std::string& address, bool want) {
    for (int t = 0; t < 200; ++t) {
      Json d = Debug(client);
      for (const Json& e : d["pools"][0]["router"]["endpoints"]) {
        if (e["address"] == address && e["healthy"] == want) return true;
      }
      usleep(50'000);
    }
    return false;
  }

  static std::string* dir_;
  static std::string* base_;
  static std::vector<Replica>* replicas_;
  static Child* gateway_;
};

std::string* GatewayIntegrationTest::dir_ = nullptr;
std::string* GatewayIntegrationTest::base_ = nullptr;
std::vector<Replica>* GatewayIntegrationTest::replicas_ = nullptr;
Child* GatewayIntegrationTest::gateway_ = nullptr;

TEST_F(GatewayIntegrationTest, ModelsAndErrors) {
  HttpClient client;
  auto models = client.Request({.url = *base_ + "/v1/models"});
  ASSERT_TRUE(models.ok());
  Json m = Json::parse(models->body);
  ASSERT_EQ(m["data"].size(), 1u);
  EXPECT_EQ(m["data"][0]["id"], "omni-demo");

  auto unknown = client.Request({.method = HttpMethod::kPost, .url = *base_ + "/v1/chat/completions",
                                 .headers = {}, .body = R"({"model":"nope","messages":[]})"});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status, 404);
  Json err = Json::parse(unknown->body);
  EXPECT_EQ(err["error"]["param"], "model");
  EXPECT_NE(err["error"]["message"].get<std::string>().find("omni-demo"), std::string::npos) << unknown->body;

  for (const char* bad : {"{\"model\": ", "[1,2]", "{\"model\": 7}", "{\"messages\": []}"}) {
    auto r = client.Request({.method = HttpMethod::kPost, .url = *base_ + "/v1/chat/completions",
                             .headers = {}, .body = bad});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_TRUE(Json::parse(r->body, nullptr, false).contains("error")) << r->body;
  }
  // The replica's own 4xx passes through unchanged.
  auto invalid = client.Request({.method = HttpMethod::kPost, .url = *base_ + "/v1/chat/completions",
                                 .headers = {}, .body = R"({"model":"omni-demo","messages":[],"temperature":-1})"});
  ASSERT_TRUE(invalid.ok());
  EXPECT_EQ(invalid->status, 400) << invalid->body;
}

TEST_F(GatewayIntegrationTest, StreamsSseThrough) {
  HttpClient client;
  Json body = {{"model", "omni-demo"},
               {"messages", {{{"role", "user"}, {"content", "stream this please"}}}},
               {"max_tokens", 8},
               {"stream", true}};
  std::vector<std::string> chunks;
  std::string content_type;
  auto r = client.Stream({.method = HttpMethod::kPost, .url = *base_ + "/v1/chat/completions", .headers = {},
                          .body = body.dump()},
                         {.on_headers = [&](int, const HttpHeaders& h) {
                            content_type = std::string(h.GetOr("content-type", ""));
                            return true;
                          },
                          .on_body = [&](std::string_view c) {
                            chunks.emplace_back(c);
                            return true;
                          }});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, 200);
  EXPECT_TRUE(content_type.starts_with("text/event-stream")) << content_type;
  std::string all;
  for (const auto& c : chunks) all += c;
  EXPECT_NE(all.find("data: [DONE]"), std::string::npos) << all;
  EXPECT_GT(chunks.size(), 1u);  // arrived in pieces, not as one buffered body
}

TEST_F(GatewayIntegrationTest, RepeatedPrefixLandsOnTheReplicaThatHoldsIt) {
  HttpClient client;
  std::string prompt;
  for (int i = 0; i < 60; ++i) prompt += "the quick brown fox jumps over the lazy dog ";
  Json first = Chat(client, prompt + "first");
  ASSERT_TRUE(first.contains("usage")) << first.dump();
  usleep(300'000);  // the replica's KV events reach the gateway
  Json second = Chat(client, prompt + "second");
  ASSERT_TRUE(second.contains("usage")) << second.dump();
  const int prompt_tokens = second["usage"]["prompt_tokens"];
  const int cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GE(cached, prompt_tokens * 0.9) << second.dump();
}

TEST_F(GatewayIntegrationTest, KilledReplicaIsEjectedRequestsRetriedAndReadmittedAfterRestart) {
  HttpClient client;
  const int victim = 0;
  const std::string address = "127.0.0.1:" + (*replicas_)[victim].port;
  ASSERT_TRUE(WaitHealthy(client, address, true));

  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 12; ++t) {
    load.emplace_back([&, t] {
      HttpClient c;
      for (int i = 0; !stop; ++i) {
        int status = 0;
        // Long enough answers that requests are in flight on the replica when it dies.
        Chat(c, "load " + std::to_string(t) + " " + std::to_string(i), 48, &status);
        (status == 200 ? ok : failed)++;
      }
    });
  }
  // Kill once requests are flowing, then keep the load on until another 24
  // have completed (a liveness bound, not a speed one).
  for (int t = 0; t < 600 && ok.load() < 12; ++t) usleep(50'000);
  kill((*replicas_)[victim].process->pid(), SIGKILL);
  (*replicas_)[victim].process->Wait();
  const int ok_at_kill = ok.load();
  for (int t = 0; t < 1200 && ok.load() < ok_at_kill + 24; ++t) usleep(50'000);
  stop = true;
  for (auto& th : load) th.join();
  EXPECT_GE(ok.load(), ok_at_kill + 24);
  // Non-streamed requests send nothing to the client before the answer is
  // complete, so every one of them, including those the dead replica held,
  // must have been retried elsewhere.
  EXPECT_EQ(failed.load(), 0);
  EXPECT_TRUE(WaitHealthy(client, address, false));

  // Restart on the same port and KV-event address: readmitted.
  StartReplica(victim, (*replicas_)[victim].port);
  EXPECT_TRUE(WaitHealthy(client, address, true));
  // It serves again: with the others busy-free, some requests reach it.
  auto metrics_before = client.Request({.url = *base_ + "/metrics"});
  for (int i = 0; i < 24; ++i) Chat(client, "after restart " + std::to_string(i), 1);
  auto metrics = client.Request({.url = *base_ + "/metrics"});
  ASSERT_TRUE(metrics.ok());
  std::regex served("gateway_requests_total\\{pool=\"llm\",endpoint=\"" + std::regex_replace(address, std::regex("\\."), "\\.") +
                    "\",outcome=\"ok\"\\} (\\d+)");
  std::smatch before_m, after_m;
  ASSERT_TRUE(std::regex_search(metrics->body, after_m, served)) << metrics->body;
  int before = std::regex_search(metrics_before->body, before_m, served) ? std::stoi(before_m[1]) : 0;
  EXPECT_GT(std::stoi(after_m[1]), before);
}

// Deterministic retry: an endpoint that refuses connections, picked in turn
// by round-robin (health checks too slow to notice first), must cost the
// client nothing, and the proxy's failure ejects it.
TEST_F(GatewayIntegrationTest, UnreachableEndpointIsRetriedAndEjected) {
  uint16_t dead_port;
  {
    HttpServer closed(HttpServerOptions{.port = 0, .access_log = false});
    ASSERT_TRUE(closed.Start().ok());
    dead_port = closed.port();
  }  // nothing listens there now
  const std::string dead = "127.0.0.1:" + std::to_string(dead_port);
  std::string config = *dir_ + "/retry.yaml";
  std::ofstream(config) << "plugins: [{type: health-filter}, {type: round-robin-picker}]\n"
                        << "schedulingProfiles: [{name: rr, plugins: [{pluginRef: health-filter}, "
                        << "{pluginRef: round-robin-picker}]}]\n"
                        << "pools: [{name: llm, role: llm, models: [omni-demo], endpoints: [\"" << dead
                        << "\", \"127.0.0.1:" << (*replicas_)[1].port << "\"]}]\n";
  Child gateway({"gateway", "--config", config, "--port", "0", "--health-interval-ms", "60000"});
  std::string port = gateway.WaitForOutput(std::regex(R"(gateway: listening on http://127\.0\.0\.1:(\d+))"));
  ASSERT_FALSE(port.empty()) << gateway.output();
  const std::string base = "http://127.0.0.1:" + port;
  HttpClient client;
  Json body = {{"model", "omni-demo"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}};
  for (int i = 0; i < 4; ++i) {
    auto r = client.Request({.method = HttpMethod::kPost, .url = base + "/v1/chat/completions", .headers = {},
                             .body = body.dump()});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200) << r->body;
  }
  auto metrics = client.Request({.url = base + "/metrics"});
  ASSERT_TRUE(metrics.ok());
  std::smatch retried;
  ASSERT_TRUE(std::regex_search(metrics->body, retried, std::regex(R"(gateway_retries_total\{pool="llm"\} (\d+))")))
      << metrics->body;
  EXPECT_EQ(retried[1], "1");  // the first pick of the dead endpoint; then it was ejected
  auto debug = client.Request({.url = base + "/debug/endpoints"});
  ASSERT_TRUE(debug.ok());
  Json d = Json::parse(debug->body);
  EXPECT_EQ(d["pools"][0]["router"]["endpoints"][0]["address"], dead);
  EXPECT_EQ(d["pools"][0]["router"]["endpoints"][0]["healthy"], false) << debug->body;
}

// The upstream sees the client's address in X-Forwarded-For, without its
// port, appended to whatever the client already sent. The backend here is an
// in-process server that echoes the header it received.
TEST_F(GatewayIntegrationTest, ForwardsTheClientAddressInXForwardedFor) {
  HttpServer echo(HttpServerOptions{.port = 0, .access_log = false});
  echo.RouteInline(HttpMethod::kPost, "/v1/chat/completions", [](const HttpRequest& r) {
    auto xff = r.headers.Get("x-forwarded-for");
    return JsonResponse(200, Json{{"xff", xff ? std::string(*xff) : std::string("(none)")}}.dump());
  });
  ASSERT_TRUE(echo.Start().ok());
  std::string config = *dir_ + "/xff.yaml";
  std::ofstream(config) << "plugins: [{type: round-robin-picker}]\n"
                        << "schedulingProfiles: [{name: rr, plugins: [{pluginRef: round-robin-picker}]}]\n"
                        << "pools: [{name: echo, role: llm, models: [echo], endpoints: [\"127.0.0.1:" << echo.port()
                        << "\"]}]\n";
  Child gateway({"gateway", "--config", config, "--port", "0"});
  std::string port = gateway.WaitForOutput(std::regex(R"(gateway: listening on http://127\.0\.0\.1:(\d+))"));
  ASSERT_FALSE(port.empty()) << gateway.output();
  HttpClient client;
  auto call = [&](HttpHeaders headers) {
    auto r = client.Request({.method = HttpMethod::kPost, .url = "http://127.0.0.1:" + port + "/v1/chat/completions",
                             .headers = std::move(headers), .body = R"({"model":"echo","messages":[]})"});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return std::string();
    EXPECT_EQ(r->status, 200) << r->body;
    return Json::parse(r->body, nullptr, false).value("xff", std::string());
  };
  EXPECT_EQ(call({}), "127.0.0.1");
  HttpHeaders prior;
  prior.Set("X-Forwarded-For", "203.0.113.7, 198.51.100.2");
  EXPECT_EQ(call(std::move(prior)), "203.0.113.7, 198.51.100.2, 127.0.0.1");
}

}  // namespace
}  // namespace omni
