// The LLM server end to end over loopback: LlmService + HttpServer on port 0
// over a tiny demo model written to a temp dir.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/hyperclovax/demo_model.h"
#include "modelfile/tensor_object.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/sse.h"
#include "services/llm/llm_http.h"
#include "services/llm/llm_service.h"
#include "services/llm/stop_strings.h"
#include "storage/content_hash.h"
#include "text/demo_tokenizer.h"
#include "text/tokenizer.h"

namespace omni::llm {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

constexpr int kHidden = 64;

// Removes the test's temp folder when the binary exits.
struct RemoveAtExit {
  std::string dir;
  ~RemoveAtExit() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// Writes the demo model (and its tokenizer) once per test binary.
const std::string& DemoModelDir() {
  static const std::string dir = [] {
    std::string d = (fs::temp_directory_path() / ("omni_llm_test_" + std::to_string(::getpid()))).string();
    static RemoveAtExit cleanup{d};
    fs::create_directories(d + "/demo-llm");
    auto tok = MakeDemoTokenizerJson(DemoTokenizerSpec{.num_merges = 300, .num_vision_codes = 16, .num_audio_codes = 16});
    OMNI_CHECK(tok.ok()) << tok.status().ToString();
    auto t = Tokenizer::FromJson(*tok);
    OMNI_CHECK(t.ok());
    models::DemoLlmSpec spec = models::LlamaLikeDemoSpec();
    spec.vocab_size = ((*t)->vocab_size() + 63) / 64 * 64;
    spec.tokenizer_json = *tok;
    Status s = models::WriteDemoLlm(spec, d + "/demo-llm");
    OMNI_CHECK(s.ok()) << s.ToString();
    fs::create_directories(d + "/store/emb/m");
    return d;
  }();
  return dir;
}

struct TestServer {
  explicit TestServer(LlmServiceOptions o, LlmHttpOptions http_options = {},
                      std::chrono::milliseconds drain_timeout = std::chrono::seconds(30))
      : server(HttpServerOptions{.io_threads = 2, .drain_timeout = drain_timeout, .access_log = false,
                                 .metrics = &registry}) {
    o.model_dir = DemoModelDir() + "/demo-llm";
    o.store_uri = "file://" + DemoModelDir() + "/store";
    o.metrics = &registry;
    service = std::move(LlmService::Create(std::move(o))).value();
    adapter = std::make_unique<LlmHttpAdapter>(*service, registry, http_options);
    adapter->RegisterRoutes(server);
    OMNI_CHECK(server.Start().ok());
    Status s = service->Load();
    OMNI_CHECK(s.ok()) << s.ToString();
    base = "http://127.0.0.1:" + std::to_string(server.port());
  }
  ~TestServer() {
    server.Shutdown();
    service->Shutdown();
    adapter->WaitIdle();
  }

  HttpClientResponse Post(const std::string& path, const std::string& body) {
    auto r = client.Request({.method = HttpMethod::kPost, .url = base + path, .body = body});
    OMNI_CHECK(r.ok()) << r.status().ToString();
    return *r;
  }
  Json PostJson(const std::string& path, const Json& body, int want_status = 200) {
    HttpClientResponse r = Post(path, body.dump());
    EXPECT_EQ(r.status, want_status) << r.body;
    return Json::parse(r.body);
  }
  HttpClientResponse Get(const std::string& path) {
    auto r = client.Request({.method = HttpMethod::kGet, .url = base + path});
    OMNI_CHECK(r.ok());
    return *r;
  }
  // The data of every SSE event of a streamed POST.
  std::vector<std::string> PostStream(const std::string& path, const Json& body) {
    SseParser parser;
    std::vector<std::string> events;
    auto r = client.Stream({.method = HttpMethod::kPost, .url = base + path, .body = body.dump(),
                            .timeout = std::chrono::seconds(60)},
                           {.on_headers = [](int status, const HttpHeaders&) { return status == 200; },
                            .on_body = [&](std::string_view b) {
                              parser.Feed(b, [&](SseEvent&& e) { events.push_back(e.data); });
                              return true;
                            }});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return events;
  }
  double Metric(const std::string& name_with_labels) {
    std::string text = Get("/metrics").body;
    size_t pos = text.find("\n" + name_with_labels);
    if (pos == std::string::npos) return -1;
    size_t sp = text.find(' ', pos + 1);
    return std::stod(text.substr(sp + 1, text.find('\n', sp) - sp - 1));
  }

  MetricsRegistry registry;
  HttpServer server;
  std::unique_ptr<LlmService> service;
  std::unique_ptr<LlmHttpAdapter> adapter;
  HttpClient client;
  std::string base;
};

TestServer& Shared() {
  static TestServer* s = new TestServer(LlmServiceOptions{.num_kv_blocks = 512, .max_model_len = 1024});
  return *s;
}

// The thought is skipped: the demo model's random text would otherwise all be
// reasoning_content, and these tests look at `content`.
Json Chat(const std::string& text, int max_tokens, Json extra = Json::object()) {
  Json j = {{"model", "demo-llm"},
            {"messages", {{{"role", "user"}, {"content", text}}}},
            {"max_tokens", max_tokens},
            {"temperature", 0},
            {"chat_template_kwargs", {{"skip_reasoning", true}}}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}

std::string StreamedText(const std::vector<std::string>& events, bool chat, Json* usage = nullptr) {
  std::string text;
  EXPECT_FALSE(events.empty());
  if (events.empty()) return text;
  EXPECT_EQ(events.back(), "[DONE]");
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    Json c = Json::parse(events[i]);
    if (c.contains("usage") && !c["usage"].is_null() && usage != nullptr) *usage = c["usage"];
    for (auto& ch : c["choices"]) {
      if (chat) {
        if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
      } else {
        text += ch["text"].get<std::string>();
      }
    }
  }
  return text;
}

TEST(LlmServer, ModelsHealthAndTokenizeRoundTrip) {
  TestServer& s = Shared();
  EXPECT_EQ(s.Get("/health").status, 200);
  Json models = Json::parse(s.Get("/v1/models").body);
  EXPECT_EQ(models["data"][0]["id"], "demo-llm");
  Json tok = s.PostJson("/tokenize", {{"model", "demo-llm"}, {"prompt", "Hello world, 안녕하세요"}});
  EXPECT_EQ(tok["count"].get<int>(), static_cast<int>(tok["tokens"].size()));
  EXPECT_EQ(tok["max_model_len"], 1024);
  Json detok = s.PostJson("/detokenize", {{"model", "demo-llm"}, {"tokens", tok["tokens"]}});
  EXPECT_EQ(detok["prompt"], "Hello world, 안녕하세요");
}

TEST(LlmServer, ChatNonStreamAndStreamAgreeWithUsage) {
  TestServer& s = Shared();
  Json a = s.PostJson("/v1/chat/completions", Chat("Tell me a story", 12, {{"ignore_eos", true}}));
  EXPECT_EQ(a["object"], "chat.completion");
  EXPECT_EQ(a["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(a["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(a["usage"]["completion_tokens"], 12);
  Json tok = s.PostJson("/tokenize", {{"model", "demo-llm"},
                                      {"messages", {{{"role", "user"}, {"content", "Tell me a story"}}}},
                                      {"chat_template_kwargs", {{"skip_reasoning", true}}}});
  EXPECT_EQ(a["usage"]["prompt_tokens"], tok["count"]);
  EXPECT_EQ(a["usage"]["total_tokens"].get<int>(), tok["count"].get<int>() + 12);

  Json usage;
  auto events = s.PostStream("/v1/chat/completions",
                             Chat("Tell me a story", 12, {{"ignore_eos", true}, {"stream", true},
                                                          {"stream_options", {{"include_usage", true}}}}));
  EXPECT_EQ(StreamedText(events, true, &usage), a["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_EQ(usage["completion_tokens"], 12);
  EXPECT_EQ(usage["prompt_tokens"], tok["count"]);
  Json first = Json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
}

size_t CountUnits(const std::string& text) {
  size_t n = 0;
  for (size_t p = text.find("<|audio"); p != std::string::npos; p = text.find("<|audio", p + 1)) ++n;
  return n;
}

// force_audio (the orchestrator's audio output) makes the random demo model
// speak: the block is raw content, each unit streamed in its own token's
// delta. The demo tokenizer spells the tags in ~93 tokens, so 40 is too few.
TEST(LlmServer, ForceAudioSpeaksAsRawContentStreamedUnitByUnit) {
  TestServer& s = Shared();
  const std::vector<Json> variants = {
      {{"temperature", 0}},
      {{"temperature", 1.0}, {"seed", 11}},
      {{"temperature", 1.0}, {"seed", 12}, {"chat_template_kwargs", {{"skip_reasoning", false}}}},
      {{"temperature", 0}, {"thinking_token_budget", 4}, {"chat_template_kwargs", {{"skip_reasoning", false}}}}};
  for (const Json& variant : variants) {
    SCOPED_TRACE(variant.dump());
    Json body = Chat("Say hello", 140, {{"force_audio", true}});
    body.update(variant);
    Json a = s.PostJson("/v1/chat/completions", body);
    const Json& message = a["choices"][0]["message"];
    const std::string content = message["content"];
    EXPECT_TRUE(content.starts_with("<assistant_transcript>")) << content;
    EXPECT_NE(content.find("</assistant_transcript>\n<audio_decoder_call><speaker_info>{}</speaker_info>"
                           "<discrete_audio><|audio"),
              std::string::npos)
        << content;
    EXPECT_TRUE(content.ends_with("|></discrete_audio></audio_decoder_call>")) << content;
    EXPECT_GE(CountUnits(content), 3u) << content;
    EXPECT_TRUE(message["tool_calls"].empty());
    EXPECT_EQ(a["choices"][0]["finish_reason"], "stop");
    EXPECT_LE(a["usage"]["completion_tokens"].get<int>(), 140);

    body["stream"] = true;
    const std::vector<std::string> events = s.PostStream("/v1/chat/completions", body);
    EXPECT_EQ(StreamedText(events, true), content);
    size_t unit_deltas = 0;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
      const Json delta = Json::parse(events[i])["choices"][0]["delta"];
      if (!delta.contains("content")) continue;
      const size_t units = CountUnits(delta["content"].get<std::string>());
      EXPECT_LE(units, 1u) << delta;
      unit_deltas += units;
    }
    EXPECT_EQ(unit_deltas, CountUnits(content));
  }
  HttpClientResponse small = s.Post("/v1/chat/completions", Chat("Say hello", 40, {{"force_audio", true}}).dump());
  EXPECT_EQ(small.status, 400);
  Json error = Json::parse(small.body)["error"];
  EXPECT_EQ(error["param"], "max_tokens");
  EXPECT_NE(error["message"].get<std::string>().find("needs max_tokens of at least"), std::string::npos) << error;
  HttpClientResponse typed = s.Post("/v1/chat/completions", Chat("Say hello", 140, {{"force_audio", "yes"}}).dump());
  EXPECT_EQ(typed.status, 400);
  EXPECT_EQ(Json::parse(typed.body)["error"]["param"], "force_audio");
}

TEST(LlmServer, CompletionsTextAndTokenIdsStreamAndEcho) {
  TestServer& s = Shared();
  Json body = {{"model", "demo-llm"}, {"prompt", "The quick brown fox"}, {"max_tokens", 10},
               {"temperature", 0}, {"ignore_eos", true}};
  Json a = s.PostJson("/v1/completions", body);
  EXPECT_EQ(a["object"], "text_completion");
  EXPECT_EQ(a["usage"]["completion_tokens"], 10);
  Json tok = s.PostJson("/tokenize", {{"prompt", "The quick brown fox"}});
  EXPECT_EQ(a["usage"]["prompt_tokens"], tok["count"]);
  Json by_ids = body;
  by_ids["prompt"] = tok["tokens"];
  Json b = s.PostJson("/v1/completions", by_ids);
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
  Json streamed = body;
  streamed["stream"] = true;
  EXPECT_EQ(StreamedText(s.PostStream("/v1/completions", streamed), false), a["choices"][0]["text"].get<std::string>());
  Json echo = body;
  echo["echo"] = true;
  EXPECT_EQ(s.PostJson("/v1/completions", echo)["choices"][0]["text"].get<std::string>(),
            "The quick brown fox" + a["choices"][0]["text"].get<std::string>());
}

TEST(LlmServer, SeedsReproduceAndGreedyIsDeterministic) {
  TestServer& s = Shared();
  Json seeded = Chat("Write a poem", 16, {{"temperature", 1.0}, {"seed", 1234}, {"ignore_eos", true}});
  std::string a = s.PostJson("/v1/chat/completions", seeded)["choices"][0]["message"]["content"];
  std::string b = s.PostJson("/v1/chat/completions", seeded)["choices"][0]["message"]["content"];
  EXPECT_EQ(a, b);
  seeded["seed"] = 99;
  std::string c = s.PostJson("/v1/chat/completions", seeded)["choices"][0]["message"]["content"];
  EXPECT_NE(a, c);
  Json greedy = Chat("Write a poem", 16, {{"ignore_eos", true}});
  EXPECT_EQ(s.PostJson("/v1/chat/completions", greedy)["choices"][0]["message"]["content"],
            s.PostJson("/v1/chat/completions", greedy)["choices"][0]["message"]["content"]);
}

TEST(LlmServer, StopStringsTruncate) {
  TestServer& s = Shared();
  Json body = Chat("Say something", 24, {{"ignore_eos", true}});
  std::string full = s.PostJson("/v1/chat/completions", body)["choices"][0]["message"]["content"];
  ASSERT_GE(full.size(), 6u);
  // A stop string taken from the middle of the greedy answer, whole characters.
  auto boundary = [&](size_t at) {
    while (at < full.size() && (static_cast<unsigned char>(full[at]) & 0xC0) == 0x80) ++at;
    return at;
  };
  const size_t from = boundary(3);
  std::string stop = full.substr(from, boundary(from + 2) - from);
  std::string expected = full.substr(0, full.find(stop));
  body["stop"] = {stop};
  Json r = s.PostJson("/v1/chat/completions", body);
  EXPECT_EQ(r["choices"][0]["message"]["content"], expected);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  body["stream"] = true;
  EXPECT_EQ(StreamedText(s.PostStream("/v1/chat/completions", body), true), expected);
}

TEST(LlmServer, LogprobsAndN) {
  TestServer& s = Shared();
  Json r = s.PostJson("/v1/chat/completions",
                      Chat("Hi", 5, {{"ignore_eos", true}, {"logprobs", true}, {"top_logprobs", 3}}));
  auto& content = r["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 5u);
  for (auto& e : content) {
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    ASSERT_EQ(e["top_logprobs"].size(), 3u);
    // Greedy: the chosen token is the most likely one.
    EXPECT_NEAR(e["top_logprobs"][0]["logprob"].get<double>(), e["logprob"].get<double>(), 1e-5);
  }
  Json c = s.PostJson("/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 4}, {"logprobs", 2}, {"ignore_eos", true},
                                          {"temperature", 0}});
  EXPECT_EQ(c["choices"][0]["logprobs"]["tokens"].size(), 4u);
  EXPECT_EQ(c["choices"][0]["logprobs"]["top_logprobs"][0].size(), 2u);

  Json n2 = s.PostJson("/v1/chat/completions",
                       Chat("Hi", 6, {{"ignore_eos", true}, {"n", 2}, {"temperature", 1.0}, {"seed", 5}}));
  ASSERT_EQ(n2["choices"].size(), 2u);
  EXPECT_EQ(n2["choices"][1]["index"], 1);
  EXPECT_EQ(n2["usage"]["completion_tokens"], 12);
}

TEST(LlmServer, PrefixCacheHitsOnRepeatedLongPrompt) {
  TestServer& s = Shared();
  std::string text;
  for (int i = 0; i < 16; ++i) text += "sentence " + std::to_string(i) + " of a long shared prompt. ";
  Json body = Chat(text, 2, {{"ignore_eos", true}});
  const double hits_before = s.Metric("vllm:prefix_cache_hits_total{model_name=\"demo-llm\"}");
  Json first = s.PostJson("/v1/chat/completions", body);
  Json second = s.PostJson("/v1/chat/completions", body);
  const int prompt = second["usage"]["prompt_tokens"];
  const int cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GT(prompt, 200);
  EXPECT_GE(cached, prompt * 9 / 10);
  EXPECT_GE(s.Metric("vllm:prefix_cache_hits_total{model_name=\"demo-llm\"}"), hits_before + cached);
  EXPECT_GT(s.Metric("vllm:prefix_cache_queries_total{model_name=\"demo-llm\"}"), 0);
  EXPECT_EQ(s.Metric("vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"512\"}"), 1);
}

// Writes an embedding object under the test store; returns its file:// URL.
std::string WriteEmbedding(int rows, uint32_t seed, bool with_ids) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 0.5f);
  std::vector<float> values(static_cast<size_t>(rows) * kHidden);
  for (float& v : values) v = dist(rng);
  EmbeddingObject obj;
  obj.rows = Tensor::FromFloats(values, {rows, kHidden});
  if (with_ids) {
    std::vector<float> ids = {1, 2, 3, 4};
    obj.ids = Tensor::FromFloats(ids, {4}).To(DType::kI32);
  }
  auto bytes = SerializeEmbeddingObject(obj);
  OMNI_CHECK(bytes.ok()) << bytes.status().ToString();
  std::string path = DemoModelDir() + "/store/emb/m/" + Sha256Hex(*bytes) + ".safetensors";
  std::ofstream(path, std::ios::binary) << *bytes;
  return "file://" + path;
}

Json ImageChat(const std::string& url, const std::string& prefix_text) {
  return {{"model", "demo-llm"},
          {"max_tokens", 2},
          {"temperature", 0},
          {"ignore_eos", true},
          {"messages",
           {{{"role", "system"}, {"content", prefix_text}},
            {{"role", "user"},
             {"content",
              {{{"type", "image_url"}, {"image_url", {{"url", url}}}}, {{"type", "text"}, {"text", "What is this?"}}}}}}}};
}

TEST(LlmServer, EmbeddingInjectionKeysTheCacheByObject) {
  TestServer& s = Shared();
  std::string prefix;
  for (int i = 0; i < 12; ++i) prefix += "You are a careful assistant number " + std::to_string(i) + ". ";
  const std::string a = WriteEmbedding(40, 1, true);
  const std::string b = WriteEmbedding(40, 2, true);  // same shape and ids, other rows
  Json tok = s.PostJson("/tokenize", ImageChat(a, prefix));
  // The prompt holds 4 discrete ids and 40 continuous rows.
  auto pad = s.service->tokenizer().TokenToId("<|IMAGE_PAD|>");
  ASSERT_TRUE(pad.has_value());
  int first_row = -1, num_rows = 0;
  for (size_t i = 0; i < tok["tokens"].size(); ++i) {
    if (tok["tokens"][i] == *pad) {
      if (first_row < 0) first_row = static_cast<int>(i);
      ++num_rows;
    }
  }
  ASSERT_EQ(num_rows, 40);
  ASSERT_GT(first_row, 64);

  Json r1 = s.PostJson("/v1/chat/completions", ImageChat(a, prefix));
  Json r2 = s.PostJson("/v1/chat/completions", ImageChat(a, prefix));
  EXPECT_EQ(r2["usage"]["prompt_tokens"], tok["count"]);
  EXPECT_GT(r2["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), first_row + 40);
  Json r3 = s.PostJson("/v1/chat/completions", ImageChat(b, prefix));
  const int cached_b = r3["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_LE(cached_b, first_row);
  EXPECT_GE(cached_b, first_row / 16 * 16 - 16);
}

TEST(LlmServer, MimeLineSaysWhatTheEncoderSaw) {
  TestServer& s = Shared();
  EmbeddingObject obj;
  obj.rows = Tensor::FromFloats(std::vector<float>(2 * kHidden, 0.1f), {2, kHidden});
  obj.ids = Tensor::FromFloats(std::vector<float>{5, 6}, {2}).To(DType::kI32);
  obj.metadata = {{"filename", "cat.png"}, {"mime", "image/png"}};
  const std::string bytes = SerializeEmbeddingObject(obj).value();
  const std::string path = DemoModelDir() + "/store/emb/m/" + Sha256Hex(bytes) + ".safetensors";
  std::ofstream(path, std::ios::binary) << bytes;
  Json tok = s.PostJson("/tokenize", ImageChat("file://" + path, "x"));
  Json detok = s.PostJson("/detokenize", {{"model", "demo-llm"}, {"tokens", tok["tokens"]}});
  const std::string text = detok["prompt"];
  EXPECT_NE(text.find(R"("type": "image/png", "filename": "cat.png")"), std::string::npos) << text;
  // Without metadata, the template's defaults.
  Json plain = s.PostJson("/detokenize", {{"model", "demo-llm"},
                                          {"tokens", s.PostJson("/tokenize", ImageChat(WriteEmbedding(2, 9, true), "x"))["tokens"]}});
  EXPECT_NE(plain["prompt"].get<std::string>().find(R"("type": "image/jpeg", "filename": "image.jpg")"),
            std::string::npos);
}

TEST(LlmServer, BadInputGetsOpenAiErrorsAndServerKeepsServing) {
  TestServer& s = Shared();
  auto expect_error = [&](const std::string& path, const std::string& body, int status, const std::string& param) {
    HttpClientResponse r = s.Post(path, body);
    EXPECT_EQ(r.status, status) << body << " -> " << r.body;
    Json j = Json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.contains("error")) << r.body;
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
    if (!param.empty()) {
      EXPECT_EQ(j["error"]["param"], param) << r.body;
    }
  };
  expect_error("/v1/chat/completions", "{not json", 400, "");
  expect_error("/v1/chat/completions", R"({"messages":"hi"})", 400, "messages");
  expect_error("/v1/chat/completions", R"({"messages":[{"role":"user","content":5}]})", 400, "messages[0].content");
  expect_error("/v1/chat/completions", Chat("hi", 4, {{"max_tokens", "4"}}).dump(), 400, "max_tokens");
  expect_error("/v1/chat/completions", Chat("hi", 4, {{"temperature", 5}}).dump(), 400, "temperature");
  expect_error("/v1/chat/completions", Chat("hi", 4, {{"top_p", 0}}).dump(), 400, "top_p");
  expect_error("/v1/chat/completions", Chat("hi", 4, {{"stop", 3}}).dump(), 400, "stop");
  expect_error("/v1/completions", R"({"prompt":[1,-2]})", 400, "prompt[1]");
  expect_error("/v1/completions", R"({"prompt":"hi","max_tokens":0})", 400, "max_tokens");
  HttpClientResponse unknown = s.Post("/v1/chat/completions", Chat("hi", 4, {{"model", "gpt-9"}}).dump());
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(Json::parse(unknown.body)["error"]["code"], "model_not_found");
  std::string huge;
  for (int i = 0; i < 1200; ++i) huge += "word ";
  expect_error("/v1/completions", Json{{"prompt", huge}}.dump(), 400, "prompt");
  expect_error("/v1/completions", Json{{"prompt", "hi"}, {"max_tokens", 5000}}.dump(), 400, "max_tokens");
  // Media: missing object, corrupt object, raw media.
  const std::string missing = "file://" + DemoModelDir() + "/store/emb/m/" + std::string(64, 'a') + ".safetensors";
  expect_error("/v1/chat/completions", ImageChat(missing, "x").dump(), 404, "messages[1].content[0]");
  const std::string corrupt = DemoModelDir() + "/store/emb/m/corrupt.safetensors";
  std::ofstream(corrupt) << "this is not a safetensors file";
  expect_error("/v1/chat/completions", ImageChat("file://" + corrupt, "x").dump(), 400, "messages[1].content[0]");
  expect_error("/v1/chat/completions", ImageChat("data:image/png;base64,AAAA", "x").dump(), 400,
               "messages[1].content[0].image_url.url");
  // An object without the tensor a placeholder needs: a precise 400, not
  // an image silently expanded to nothing.
  expect_error("/v1/chat/completions", ImageChat(WriteEmbedding(8, 3, /*with_ids=*/false), "x").dump(), 400,
               "messages");
  {
    HttpClientResponse r = s.Post("/v1/chat/completions", ImageChat(WriteEmbedding(8, 3, false), "x").dump());
    EXPECT_NE(r.body.find("has no 'ids' tensor"), std::string::npos) << r.body;
  }
  // An object whose metadata names another medium than its key.
  {
    EmbeddingObject obj;
    obj.rows = Tensor::FromFloats(std::vector<float>(2 * kHidden, 0.1f), {2, kHidden});
    obj.ids = Tensor::FromFloats(std::vector<float>{1, 2}, {2}).To(DType::kI32);
    obj.metadata = {{"sha256", std::string(64, 'b')}};
    const std::string path = DemoModelDir() + "/store/emb/m/" + std::string(64, 'c') + ".safetensors";
    std::ofstream(path, std::ios::binary) << SerializeEmbeddingObject(obj).value();
    HttpClientResponse r = s.Post("/v1/chat/completions", ImageChat("file://" + path, "x").dump());
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find("not the one its name says"), std::string::npos) << r.body;
  }
  // Outside the store reads as missing: no existence oracle.
  expect_error("/v1/chat/completions", ImageChat("file:///etc/passwd", "x").dump(), 404, "messages[1].content[0]");
  // Still serving.
  EXPECT_EQ(s.PostJson("/v1/chat/completions", Chat("hi", 3, {{"ignore_eos", true}}))["usage"]["completion_tokens"], 3);
}

TEST(LlmServer, ClientDisconnectFreesBlocks) {
  TestServer& s = Shared();
  std::atomic<int> chunks{0};
  auto r = s.client.Stream({.method = HttpMethod::kPost, .url = s.base + "/v1/chat/completions",
                            .body = Chat("Go on forever", 900, {{"ignore_eos", true}, {"stream", true}}).dump()},
                           {.on_headers = [](int, const HttpHeaders&) { return true; },
                            .on_body = [&](std::string_view) { return ++chunks < 3; }});
  EXPECT_FALSE(r.ok());  // we hung up
  bool freed = false;
  for (int i = 0; i < 2000 && !freed; ++i) {  // safety net only; normally at once
    EngineMetrics m = s.service->engine_metrics();
    freed = m.num_running == 0 && m.num_waiting == 0 && m.kv_cache_usage == 0;
    if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(freed);
  EXPECT_EQ(s.Metric("vllm:num_requests_running{model_name=\"demo-llm\"}"), 0);
  EXPECT_EQ(s.Metric("vllm:kv_cache_usage_perc{model_name=\"demo-llm\"}"), 0);
}

TEST(LlmServer, ConcurrentStreamsUnderPreemptionMatchSoloRuns) {
  // 32 sequences of ~60 tokens need ~130 blocks; 40 forces preemption.
  TestServer s(LlmServiceOptions{.num_kv_blocks = 40, .max_model_len = 256, .max_num_batched_tokens = 256});
  constexpr int kClients = 32;
  auto body = [](int i) {
    Json j = Chat("Client " + std::to_string(i) + " asks about topic " + std::to_string(i * 7), 32, {{"ignore_eos", true}});
    j["stream"] = true;
    return j;
  };
  std::vector<std::string> solo(kClients), together(kClients);
  for (int i = 0; i < kClients; ++i) solo[i] = StreamedText(s.PostStream("/v1/chat/completions", body(i)), true);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] { together[i] = StreamedText(s.PostStream("/v1/chat/completions", body(i)), true); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(together[i], solo[i]) << "client " << i;
  EXPECT_GT(s.Metric("vllm:num_preemptions_total{model_name=\"demo-llm\"}"), 0);
  EXPECT_EQ(s.service->engine_metrics().num_running, 0);
}

int ThreadCount() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Streams that stay open until the test lets them go; each counts its events.
struct HeldStreams {
  HeldStreams(TestServer& s, int count, int max_tokens) {
    for (int i = 0; i < count; ++i) {
      auto state = std::make_shared<State>();
      states.push_back(state);
      Json body = Chat("Held stream " + std::to_string(i), max_tokens, {{"ignore_eos", true}, {"stream", true}});
      handles.push_back(s.client.StreamAsync(
          {.method = HttpMethod::kPost, .url = s.base + "/v1/chat/completions", .body = body.dump(),
           .timeout = std::chrono::seconds(120)},
          {.on_headers = [state](int status, const HttpHeaders&) {
             state->status = status;
             return true;
           },
           .on_body = [state](std::string_view b) {
             std::lock_guard lock(state->mu);
             state->parser.Feed(b, [&](SseEvent&& e) { state->events.push_back(e.data); });
             return true;
           }},
          [state](StatusOr<int>) { state->done.set_value(); }));
    }
  }
  ~HeldStreams() {
    for (auto& h : handles) h->Cancel();
    for (auto& st : states) st->finished.wait_for(kWait);
  }
  bool WaitAllStarted() {
    for (int i = 0; i < 1000; ++i) {  // a bound for hangs, not a timing assertion
      bool all = true;
      for (auto& st : states) {
        std::lock_guard lock(st->mu);
        all = all && !st->events.empty();
      }
      if (all) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  struct State {
    std::mutex mu;
    SseParser parser;
    std::vector<std::string> events;  // guarded by mu
    std::atomic<int> status{0};
    std::promise<void> done;
    std::shared_future<void> finished = done.get_future().share();
  };
  static constexpr auto kWait = std::chrono::seconds(30);
  std::vector<std::shared_ptr<State>> states;
  std::vector<std::shared_ptr<HttpCallHandle>> handles;
};

// Requests hold no thread: 48 open streams add none to the process, where
// the old adapter started one per request.
TEST(LlmServer, OpenStreamsHoldNoThreads) {
  TestServer s(LlmServiceOptions{.num_kv_blocks = 512, .max_model_len = 1024});
  const int before = ThreadCount();
  HeldStreams held(s, 48, 900);
  ASSERT_TRUE(held.WaitAllStarted());
  EXPECT_EQ(s.adapter->pending_requests(), 48);
  EXPECT_LE(ThreadCount(), before + 1) << "threads grew with the number of requests";
}

// Beyond --max-pending-requests a request gets 429 with Retry-After and an
// OpenAI error; the held ones go on, and a slot freed is usable again.
TEST(LlmServer, AdmissionLimitAnswers429WithRetryAfter) {
  TestServer s(LlmServiceOptions{.num_kv_blocks = 512, .max_model_len = 1024}, LlmHttpOptions{.max_pending_requests = 2});
  {
    HeldStreams held(s, 2, 900);
    ASSERT_TRUE(held.WaitAllStarted());
    HttpClientResponse busy = s.Post("/v1/chat/completions", Chat("one more", 4).dump());
    EXPECT_EQ(busy.status, 429) << busy.body;
    EXPECT_EQ(busy.headers.GetOr("retry-after", ""), "1");
    EXPECT_EQ(Json::parse(busy.body)["error"]["code"], "server_busy");
    EXPECT_EQ(s.Metric("omni_llm_requests_rejected_total"), 1);
  }
  // The held streams were cancelled; their slots come back.
  for (int i = 0; i < 1000 && s.adapter->pending_requests() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Json ok = s.PostJson("/v1/chat/completions", Chat("now there is room", 4));
  EXPECT_EQ(ok["object"], "chat.completion");
}

// SIGTERM's drain: past the deadline the streams still running end with an
// error event and [DONE] (not a cut connection), a unary request gets 503,
// and Shutdown returns.
TEST(LlmServer, DrainDeadlineEndsStreamsWithAnErrorEventAndDone) {
  auto s = std::make_unique<TestServer>(LlmServiceOptions{.num_kv_blocks = 512, .max_model_len = 8192},
                                        LlmHttpOptions{}, std::chrono::milliseconds(300));
  HeldStreams held(*s, 3, 8000);
  ASSERT_TRUE(held.WaitAllStarted());
  std::promise<StatusOr<HttpClientResponse>> unary;
  std::thread unary_thread([&] {
    unary.set_value(s->client.Request({.method = HttpMethod::kPost, .url = s->base + "/v1/chat/completions",
                                       .body = Chat("long unary", 8000, {{"ignore_eos", true}}).dump(),
                                       .timeout = std::chrono::seconds(120)}));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the unary request start
  auto stopped = std::async(std::launch::async, [&] { s->server.Shutdown(); });
  ASSERT_EQ(stopped.wait_for(HeldStreams::kWait), std::future_status::ready) << "Shutdown hung";
  for (auto& st : held.states) {
    ASSERT_EQ(st->finished.wait_for(HeldStreams::kWait), std::future_status::ready);
    std::lock_guard lock(st->mu);
    ASSERT_GE(st->events.size(), 2u);
    EXPECT_EQ(st->events.back(), "[DONE]");
    Json err = Json::parse(st->events[st->events.size() - 2]);
    ASSERT_TRUE(err.contains("error")) << err.dump();
    EXPECT_NE(err["error"]["message"].get<std::string>().find("shutting down"), std::string::npos);
  }
  unary_thread.join();
  StatusOr<HttpClientResponse> u = unary.get_future().get();
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->status, 503) << u->body;
  EXPECT_TRUE(s->adapter->WaitIdle());
}

TEST(StopStringMatcher, HoldsBackPossibleStartsAndCuts) {
  StopStringMatcher m({"END", "stop"});
  EXPECT_EQ(m.Push("hello E"), "hell");
  EXPECT_EQ(m.Push("N"), "o");
  EXPECT_EQ(m.Push("D more"), " ");
  EXPECT_TRUE(m.stopped());
  StopStringMatcher none({});
  EXPECT_EQ(none.Push("abc"), "abc");
  StopStringMatcher tail({"xyz"});
  EXPECT_EQ(tail.Push("ab"), "");
  EXPECT_EQ(tail.Flush(), "ab");
}

}  // namespace
}  // namespace omni::llm
