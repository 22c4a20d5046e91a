#include "services/loadgen/openai_stream.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace omni::loadgen {
namespace {

using nlohmann::json;

std::string ChatChunk(std::string_view content) {
  return json{{"object", "chat.completion.chunk"},
              {"choices", {{{"index", 0}, {"delta", {{"content", content}}}, {"finish_reason", nullptr}}}}}
      .dump();
}

std::string UsageChunk(int prompt, int completion, int cached) {
  return json{{"choices", json::array()},
              {"usage",
               {{"prompt_tokens", prompt},
                {"completion_tokens", completion},
                {"prompt_tokens_details", {{"cached_tokens", cached}}}}}}
      .dump();
}

SseEvent Data(std::string d) { return SseEvent{.data = std::move(d)}; }

TEST(RequestBodyTest, ChatStreamsWithUsageAndControlledLength) {
  std::vector<ChatMessage> m = {{"system", "be brief"}, {"user", "hi there"}};
  json body = json::parse(BuildRequestBody(Endpoint::kChat, "demo", m, {.max_tokens = 7}));
  EXPECT_EQ(body["model"], "demo");
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["max_tokens"], 7);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_FALSE(body.contains("temperature"));
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["content"], "hi there");
}

TEST(RequestBodyTest, CompletionsSendsTheRenderedPrompt) {
  std::vector<ChatMessage> m = {{"system", "be brief"}, {"user", "hi there"}};
  json body = json::parse(
      BuildRequestBody(Endpoint::kCompletions, "demo", m, {.max_tokens = 3, .ignore_eos = false, .temperature = 0.5}));
  EXPECT_EQ(body["prompt"], "be brief\n\nhi there");
  EXPECT_FALSE(body.contains("messages"));
  EXPECT_FALSE(body.contains("ignore_eos"));
  EXPECT_EQ(body["temperature"], 0.5);
  EXPECT_EQ(EndpointPath(Endpoint::kCompletions), "/v1/completions");
}

TEST(StreamAccumulatorTest, TimesContentDeltasAndReadsUsage) {
  StreamAccumulator acc(Endpoint::kChat);
  acc.OnStatus(200);
  // The role-only first chunk carries no token.
  acc.OnEvent(Data(json{{"choices", {{{"delta", {{"role", "assistant"}, {"content", ""}}}}}}}.dump()), 0.05);
  acc.OnEvent(Data(ChatChunk("a")), 0.10);
  acc.OnEvent(Data(ChatChunk(" b")), 0.15);
  acc.OnEvent(Data(ChatChunk(" c")), 0.30);
  acc.OnEvent(Data(UsageChunk(40, 3, 32)), 0.31);
  acc.OnEvent(Data("[DONE]"), 0.31);
  RequestRecord r;
  acc.Finish(Status::Ok(), 0.32, &r);
  EXPECT_TRUE(r.ok) << r.error_kind << " " << r.error_message;
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.10);
  EXPECT_DOUBLE_EQ(r.e2e_s, 0.32);
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_NEAR(r.itl_s[0], 0.05, 1e-12);
  EXPECT_NEAR(r.itl_s[1], 0.15, 1e-12);
  EXPECT_EQ(r.output_text, "a b c");
  EXPECT_TRUE(r.usage_reported);
  EXPECT_TRUE(r.cached_tokens_reported);
  EXPECT_EQ(r.prompt_tokens, 40);
  EXPECT_EQ(r.completion_tokens, 3);
  EXPECT_EQ(r.cached_tokens, 32);
}

TEST(StreamAccumulatorTest, ParsesBytesSplitAnywhereAndCountsDeltasWithoutUsage) {
  std::string wire = EncodeSseEvent(R"({"choices":[{"text":"x"}]})") + EncodeSseEvent(R"({"choices":[{"text":"y"}]})") +
                     EncodeSseEvent("[DONE]");
  StreamAccumulator acc(Endpoint::kCompletions);
  acc.OnStatus(200);
  for (size_t i = 0; i < wire.size(); ++i) acc.OnBody(wire.substr(i, 1), static_cast<double>(i));
  RequestRecord r;
  acc.Finish(Status::Ok(), 1000, &r);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.output_text, "xy");
  EXPECT_FALSE(r.usage_reported);
  EXPECT_FALSE(r.cached_tokens_reported);
  EXPECT_EQ(r.completion_tokens, 2);
}

TEST(StreamAccumulatorTest, ClassifiesFailures) {
  {
    StreamAccumulator acc(Endpoint::kChat);
    acc.OnStatus(404);
    acc.OnBody(R"({"error":{"message":"no such model"}})", 0.01);
    RequestRecord r;
    acc.Finish(Status::Ok(), 0.02, &r);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error_kind, "http_404");
    EXPECT_NE(r.error_message.find("no such model"), std::string::npos);
  }
  {
    StreamAccumulator acc(Endpoint::kChat);
    acc.OnStatus(200);
    acc.OnEvent(Data(ChatChunk("a")), 0.1);
    RequestRecord r;
    acc.Finish(Status::Ok(), 0.2, &r);
    EXPECT_EQ(r.error_kind, "truncated");
  }
  {
    StreamAccumulator acc(Endpoint::kChat);
    acc.OnStatus(200);
    acc.OnEvent(Data(R"({"error":{"message":"engine died"}})"), 0.1);
    acc.OnEvent(Data("[DONE]"), 0.1);
    RequestRecord r;
    acc.Finish(Status::Ok(), 0.2, &r);
    EXPECT_EQ(r.error_kind, "stream_error");
    EXPECT_EQ(r.error_message, "engine died");
  }
  {
    StreamAccumulator acc(Endpoint::kChat);
    acc.OnStatus(200);
    acc.OnEvent(Data("{not json"), 0.1);
    acc.OnEvent(Data("[DONE]"), 0.1);
    RequestRecord r;
    acc.Finish(Status::Ok(), 0.2, &r);
    EXPECT_EQ(r.error_kind, "bad_response");
  }
  {
    StreamAccumulator acc(Endpoint::kChat);
    RequestRecord r;
    acc.Finish(Unavailable("connection refused"), 0.01, &r);
    EXPECT_EQ(r.error_kind, "connect");
  }
  EXPECT_EQ(TransportErrorKind(DeadlineExceeded("x")), "timeout");
}

TEST(EndpointTest, ParsesNames) {
  EXPECT_EQ(*ParseEndpoint("chat"), Endpoint::kChat);
  EXPECT_EQ(*ParseEndpoint("completions"), Endpoint::kCompletions);
  EXPECT_FALSE(ParseEndpoint("embeddings").ok());
}

}  // namespace
}  // namespace omni::loadgen
