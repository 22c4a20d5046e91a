// The bench end to end over sockets, against a fake OpenAI streaming server
// on 127.0.0.1 port 0 whose answers and usage are known in advance:
//   prompt_tokens     = words in the prompt (all messages for chat)
//   cached_tokens     = words of the system prompt (chat) or of the prompt up
//                       to its first blank line (completions)
//   completion tokens = max_tokens deltas "t0", " t1", ...
// No timing is asserted.
#include "services/loadgen/runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <nlohmann/json.hpp>

#include "net/http_server.h"
#include "net/sse.h"
#include "services/loadgen/calibrate.h"
#include "services/loadgen/report.h"

namespace omni::loadgen {
namespace {

using nlohmann::json;

constexpr std::string_view kModel = "fake-model";

class FakeOpenAiServer {
 public:
  FakeOpenAiServer() : server_(Options()) {
    for (Endpoint e : {Endpoint::kChat, Endpoint::kCompletions}) {
      server_.RouteStreaming(HttpMethod::kPost, std::string(EndpointPath(e)),
                             [this, e](HttpRequest req, std::shared_ptr<ResponseWriter> w) { Serve(e, req, *w); });
    }
    // Two tokens per word, so calibration has a known answer.
    server_.Route(HttpMethod::kPost, "/tokenize", [](const HttpRequest& req) {
      json body = json::parse(req.body, nullptr, false);
      if (body.is_discarded() || body.value("model", "") != kModel) return ErrorResponse(NotFound("model not found"));
      int words = CountWords(body.value("prompt", ""));
      return JsonResponse(200, json{{"count", 2 * words}, {"max_model_len", 4096}}.dump());
    });
    Status s = server_.Start();
    OMNI_CHECK(s.ok()) << s.ToString();
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }
  int requests() const { return requests_.load(); }
  int well_formed() const { return well_formed_.load(); }
  std::set<std::string> sessions() const {
    std::lock_guard lock(mu_);
    return sessions_;
  }

 private:
  static HttpServerOptions Options() {
    HttpServerOptions o;
    o.access_log = false;
    return o;
  }

  // Runs on an io thread; the whole answer is queued at once, which never
  // blocks there.
  void Serve(Endpoint endpoint, const HttpRequest& req, ResponseWriter& w) {
    ++requests_;
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded()) {
      w.Send(ErrorResponse(InvalidArgument("bad json")));
      return;
    }
    if (body.value("model", "") != kModel) {
      w.Send(ErrorResponse(NotFound("model not found")));
      return;
    }
    if (body.value("stream", false) && body["stream_options"].value("include_usage", false) &&
        body.value("ignore_eos", false)) {
      ++well_formed_;
    }
    {
      std::lock_guard lock(mu_);
      sessions_.insert(std::string(req.headers.GetOr("x-session-id", "")));
    }
    int prompt = 0;
    int cached = 0;
    if (endpoint == Endpoint::kChat) {
      for (const auto& m : body["messages"]) {
        int words = CountWords(m["content"].get<std::string>());
        prompt += words;
        if (m["role"] == "system") cached += words;
      }
    } else {
      std::string p = body["prompt"].get<std::string>();
      prompt = CountWords(p);
      size_t blank = p.find("\n\n");
      cached = blank == std::string::npos ? 0 : CountWords(p.substr(0, blank));
    }
    int n = body.value("max_tokens", 1);
    HttpHeaders h;
    h.Set("content-type", "text/event-stream");
    w.StartStream(200, std::move(h));
    if (endpoint == Endpoint::kChat) {
      w.WriteSseEvent(json{{"choices", {{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}}}}}.dump());
    }
    for (int i = 0; i < n; ++i) {
      std::string piece = (i == 0 ? "t" : " t") + std::to_string(i);
      json choice = endpoint == Endpoint::kChat ? json{{"index", 0}, {"delta", {{"content", piece}}}}
                                                : json{{"index", 0}, {"text", piece}};
      w.WriteSseEvent(json{{"choices", {choice}}, {"usage", nullptr}}.dump());
    }
    json usage = {{"prompt_tokens", prompt},
                  {"completion_tokens", n},
                  {"total_tokens", prompt + n},
                  {"prompt_tokens_details", {{"cached_tokens", cached}}}};
    w.WriteSseEvent(json{{"choices", json::array()}, {"usage", usage}}.dump());
    w.WriteSseEvent("[DONE]");
    w.Finish();
  }

  HttpServer server_;
  std::atomic<int> requests_{0};
  std::atomic<int> well_formed_{0};
  mutable std::mutex mu_;
  std::set<std::string> sessions_;  // guarded by mu_
};

struct Outcome {
  RunResult run;
  BenchSummary summary;
};

Outcome RunBench(const std::string& base_url, const WorkloadOptions& w, const LoadOptions& l) {
  auto workload = GenerateWorkload(w);
  OMNI_CHECK(workload.ok()) << workload.status().ToString();
  auto transport = HttpTransport::Create(base_url, 8, std::chrono::seconds(30));
  OMNI_CHECK(transport.ok()) << transport.status().ToString();
  BenchRunner runner(transport->get(), &Clock::Real(), l);
  Outcome o;
  o.run = runner.Run(*workload);
  o.summary = Summarize(o.run.records, o.run.duration_s);
  return o;
}

TEST(BenchRunnerTest, SharedPrefixChatCountsTokensAndCachedTokens) {
  FakeOpenAiServer fake;
  Outcome o = RunBench(fake.base_url(),
                       {.kind = WorkloadKind::kSharedPrefix, .num_requests = 12, .input_len = 10, .num_prefixes = 3,
                        .prefix_len = 20, .seed = 5},
                       {.endpoint = Endpoint::kChat, .model = std::string(kModel), .sampling = {.max_tokens = 5},
                        .concurrency = 4});
  const BenchSummary& s = o.summary;
  EXPECT_EQ(s.completed, 12) << (s.errors.empty() ? "" : s.errors.begin()->first);
  EXPECT_EQ(s.failed, 0);
  EXPECT_EQ(fake.requests(), 12);
  EXPECT_EQ(fake.well_formed(), 12);
  EXPECT_EQ(s.prompt_tokens, 12 * 30);
  EXPECT_EQ(s.completion_tokens, 12 * 5);
  EXPECT_EQ(s.cached_tokens, 12 * 20);
  EXPECT_DOUBLE_EQ(s.prefix_cache_hit_rate, 20.0 / 30.0);
  EXPECT_EQ(s.ttft_ms.count, 12u);
  EXPECT_EQ(s.tpot_ms.count, 12u);
  EXPECT_EQ(s.itl_ms.count, 12u * 4);
  EXPECT_GT(s.duration_s, 0);
  for (const auto& r : o.run.records) EXPECT_EQ(r.output_text, "t0 t1 t2 t3 t4");

  BenchConfig config{.base_url = fake.base_url(), .label = "test"};
  json report = json::parse(BenchReportJson(config, s, o.run.records));
  EXPECT_EQ(report["schema_version"], kReportSchemaVersion);
  EXPECT_EQ(report["results"]["completed"], 12);
  EXPECT_EQ(report["results"]["cached_tokens"], 240);
  EXPECT_EQ(report["requests"].size(), 12u);
  EXPECT_NE(FormatSummaryTable(config, s).find("Prefix-cache hit rate:"), std::string::npos);
}

TEST(BenchRunnerTest, MultiTurnCompletionsResendsEachAnswer) {
  FakeOpenAiServer fake;
  // 7 requests of 3 turns: conversations of 3, 3 and 1 turns.
  Outcome o = RunBench(fake.base_url() + "/v1",
                       {.kind = WorkloadKind::kMultiTurn, .num_requests = 7, .input_len = 4, .num_prefixes = 2,
                        .prefix_len = 8, .turns = 3, .seed = 9},
                       {.endpoint = Endpoint::kCompletions, .model = std::string(kModel),
                        .sampling = {.max_tokens = 3}, .concurrency = 2});
  const BenchSummary& s = o.summary;
  EXPECT_EQ(s.completed, 7);
  // Turn t (0-based) sends 8 prefix words + (t+1) * 4 user words + t * 3
  // answer words: 12, 19, 26.
  EXPECT_EQ(s.prompt_tokens, 2 * (12 + 19 + 26) + 12);
  EXPECT_EQ(s.completion_tokens, 7 * 3);
  EXPECT_EQ(s.cached_tokens, 7 * 8);
  ASSERT_EQ(o.run.records.size(), 7u);
  EXPECT_EQ(o.run.records[0].conversation_id, 0);
  EXPECT_EQ(o.run.records[2].turn, 2);
  EXPECT_EQ(o.run.records[2].prompt_tokens, 26);
  EXPECT_EQ(fake.sessions(), (std::set<std::string>{"conv-0", "conv-1", "conv-2"}));
}

TEST(BenchRunnerTest, PoissonArrivalsSendEveryRequest) {
  FakeOpenAiServer fake;
  Outcome o = RunBench(fake.base_url(), {.kind = WorkloadKind::kSynthetic, .num_requests = 6, .input_len = 7},
                       {.endpoint = Endpoint::kChat, .model = std::string(kModel), .sampling = {.max_tokens = 2},
                        .request_rate = 1000, .max_concurrency = 3, .seed = 1});
  EXPECT_EQ(o.summary.completed, 6);
  EXPECT_EQ(o.summary.prompt_tokens, 6 * 7);
  EXPECT_EQ(o.summary.completion_tokens, 6 * 2);
}

TEST(BenchRunnerTest, ErrorsAreCountedByKindAndFailedConversationsStop) {
  FakeOpenAiServer fake;
  Outcome o = RunBench(fake.base_url(),
                       {.kind = WorkloadKind::kMultiTurn, .num_requests = 4, .input_len = 3, .turns = 2},
                       {.endpoint = Endpoint::kChat, .model = "no-such-model", .sampling = {.max_tokens = 2},
                        .concurrency = 2});
  EXPECT_EQ(o.summary.completed, 0);
  EXPECT_EQ(o.summary.failed, 4);
  EXPECT_EQ(o.summary.errors.at("http_404"), 2);
  EXPECT_EQ(o.summary.errors.at("skipped"), 2);
  EXPECT_EQ(fake.requests(), 2);
  EXPECT_NE(o.run.records[0].error_message.find("model not found"), std::string::npos);
}

TEST(BenchRunnerTest, RefusedConnectionsAreConnectErrors) {
  std::string url;
  {
    FakeOpenAiServer gone;
    url = gone.base_url();
  }
  Outcome o = RunBench(url, {.num_requests = 2, .input_len = 2},
                       {.model = std::string(kModel), .sampling = {.max_tokens = 1}});
  EXPECT_EQ(o.summary.failed, 2);
  EXPECT_EQ(o.summary.errors.at("connect"), 2);
}

TEST(CalibrateTest, MeasuresTokensPerWordWithTokenize) {
  FakeOpenAiServer fake;
  HttpClient client;
  auto ratio = MeasureTokensPerWord(client, fake.base_url(), kModel);
  ASSERT_TRUE(ratio.ok()) << ratio.status().ToString();
  EXPECT_DOUBLE_EQ(*ratio, 2.0);
  auto missing = MeasureTokensPerWord(client, fake.base_url(), "other");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(WordsForTokens(100, 2.0), 50);
  EXPECT_EQ(WordsForTokens(1, 3.0), 1);
  EXPECT_EQ(WordsForTokens(0, 3.0), 0);
}

TEST(PoissonArrivalsTest, DeterministicIncreasingAndPositive) {
  auto a = PoissonArrivals(100, 5.0, 7);
  auto b = PoissonArrivals(100, 5.0, 7);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, PoissonArrivals(100, 5.0, 8));
  ASSERT_EQ(a.size(), 100u);
  EXPECT_GT(a[0], 0);
  for (size_t i = 1; i < a.size(); ++i) EXPECT_GT(a[i], a[i - 1]);
}

TEST(BaseUrlTest, DropsTrailingSlashAndV1) {
  EXPECT_EQ(*NormalizeBaseUrl("http://127.0.0.1:8000/v1/"), "http://127.0.0.1:8000");
  EXPECT_EQ(*NormalizeBaseUrl("http://127.0.0.1:8000"), "http://127.0.0.1:8000");
  EXPECT_FALSE(NormalizeBaseUrl("http://127.0.0.1:8000/api").ok());
  EXPECT_FALSE(NormalizeBaseUrl("ftp://x").ok());
}

}  // namespace
}  // namespace omni::loadgen
