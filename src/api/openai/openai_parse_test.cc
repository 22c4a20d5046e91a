// The structured-output fields of chat requests: tool_choice, the typed tool
// parameters, thinking_token_budget, logit_bias, min_tokens, cache_salt, and
// the one serializer of tool JSON in prompts (the template's tojson:
// ensure_ascii=False, Python separators); and media parts as the LLM server
// (embedding objects) and the orchestrator (raw media) take them.
#include "api/openai/openai_parse.h"

#include <gtest/gtest.h>

#include "api/openai/python_json.h"

namespace omni::openai {
namespace {

constexpr const char* kTools = R"("tools":[{"type":"function","function":{"name":"book","description":"예약",
  "parameters":{"type":"object","properties":{"guests":{"type":"integer"},"outdoor":{"type":"boolean"},
  "meal":{"type":"string","enum":["lunch","dinner"]},"price":{"type":"number"},"extra":{}},"required":["guests"]}}}])";

std::string Chat(const std::string& extra) {
  return R"({"messages":[{"role":"user","content":"hi"}],)" + std::string(kTools) + (extra.empty() ? "" : "," + extra) + "}";
}

TEST(OpenAiParseTest, ToolParametersAreTypedInSchemaOrder) {
  StatusOr<ChatRequest> r = ParseChatRequest(Chat(""));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tool_specs.size(), 1u);
  const ToolSpec& t = r->tool_specs[0];
  EXPECT_EQ(t.name, "book");
  ASSERT_EQ(t.parameters.size(), 5u);
  EXPECT_EQ(t.parameters[0].name, "guests");
  EXPECT_EQ(t.parameters[0].type, ParamType::kInteger);
  EXPECT_TRUE(t.parameters[0].required);
  EXPECT_EQ(t.parameters[1].type, ParamType::kBoolean);
  EXPECT_FALSE(t.parameters[1].required);
  EXPECT_EQ(t.parameters[2].enum_values, (std::vector<std::string>{"lunch", "dinner"}));
  EXPECT_EQ(t.parameters[3].type, ParamType::kNumber);
  EXPECT_EQ(t.parameters[4].type, ParamType::kAny);
  EXPECT_EQ(t.Find("price"), &t.parameters[3]);
  EXPECT_EQ(t.Find("nope"), nullptr);
  // The prompt's copy of the schema: Python separators, Korean as is.
  EXPECT_NE(r->tools[0].parameters_json.find(R"({"type": "object", "properties": {"guests": {"type": "integer"})"),
            std::string::npos);
  EXPECT_EQ(r->tools[0].description, "예약");
  EXPECT_EQ(r->tool_choice.mode, ToolChoice::Mode::kAuto);
}

TEST(OpenAiParseTest, ToolChoiceForms) {
  EXPECT_EQ(ParseChatRequest(Chat(R"("tool_choice":"none")"))->tool_choice.mode, ToolChoice::Mode::kNone);
  EXPECT_EQ(ParseChatRequest(Chat(R"("tool_choice":"required")"))->tool_choice.mode, ToolChoice::Mode::kRequired);
  StatusOr<ChatRequest> named = ParseChatRequest(Chat(R"("tool_choice":{"type":"function","function":{"name":"book"}})"));
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->tool_choice.mode, ToolChoice::Mode::kNamed);
  EXPECT_EQ(named->tool_choice.name, "book");
  struct Bad {
    std::string body, param;
  };
  const std::vector<Bad> bad = {
      {Chat(R"("tool_choice":"sometimes")"), "tool_choice"},
      {Chat(R"("tool_choice":3)"), "tool_choice"},
      {Chat(R"("tool_choice":{"type":"function","function":{"name":"other"}})"), "tool_choice.function.name"},
      {Chat(R"("tool_choice":{"type":"function"})"), "tool_choice.function"},
      {R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":"required"})", "tool_choice"},
      {R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a"}},
          {"type":"function","function":{"name":"a"}}]})", "tools[1].function.name"},
      {R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a",
          "parameters":{"properties":{"x":{"enum":[]}}}}}]})", "tools[0].function.parameters.properties.x.enum"},
  };
  for (const Bad& b : bad) {
    StatusOr<ChatRequest> r = ParseChatRequest(b.body);
    ASSERT_FALSE(r.ok()) << b.body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().param(), b.param) << r.status().ToString();
  }
}

TEST(OpenAiParseTest, BudgetBiasMinTokensAndSalt) {
  StatusOr<ChatRequest> r = ParseChatRequest(
      Chat(R"("thinking_token_budget":12,"logit_bias":{"5":-100,"17":2.5},"min_tokens":3,"cache_salt":"tenant-7")"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->thinking_token_budget, 12);
  const auto& bias = r->options.sampling.logit_bias;
  ASSERT_EQ(bias.size(), 2u);
  EXPECT_EQ(bias[0], (std::pair<int32_t, float>{5, -100.0f}));
  EXPECT_EQ(bias[1], (std::pair<int32_t, float>{17, 2.5f}));
  EXPECT_EQ(r->options.sampling.min_tokens, 3);
  EXPECT_EQ(r->options.cache_salt, "tenant-7");
  EXPECT_FALSE(ParseChatRequest(Chat("")).value().thinking_token_budget.has_value());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"("thinking_token_budget":-1)", "thinking_token_budget"},
      {R"("thinking_token_budget":"x")", "thinking_token_budget"},
      {R"("logit_bias":{"abc":1})", "logit_bias"},
      {R"("logit_bias":{"-4":1})", "logit_bias"},
      {R"("logit_bias":{"4":"up"})", "logit_bias"},
      {R"("logit_bias":[1])", "logit_bias"},
      {R"("min_tokens":-2)", "min_tokens"},
      {R"("cache_salt":"")", "cache_salt"},
      {R"("cache_salt":5)", "cache_salt"},
  };
  for (const auto& [extra, param] : bad) {
    StatusOr<ChatRequest> b = ParseChatRequest(Chat(extra));
    ASSERT_FALSE(b.ok()) << extra;
    EXPECT_EQ(b.status().param(), param) << extra << ": " << b.status().ToString();
  }
}

TEST(OpenAiParseTest, ForceAudioIsABooleanAndExcludesAForcedToolCall) {
  EXPECT_FALSE(ParseChatRequest(Chat("")).value().force_audio);
  EXPECT_TRUE(ParseChatRequest(Chat(R"("force_audio":true)")).value().force_audio);
  EXPECT_FALSE(ParseChatRequest(Chat(R"("force_audio":null)")).value().force_audio);
  EXPECT_TRUE(ParseChatRequest(Chat(R"("force_audio":true,"tool_choice":"none")")).value().force_audio);
  EXPECT_TRUE(ParseChatRequest(Chat(R"("force_audio":true,"tool_choice":"auto")")).value().force_audio);
  for (const char* extra : {R"("force_audio":"yes")", R"("force_audio":1)", R"("force_audio":{})",
                            R"("force_audio":true,"tool_choice":"required")",
                            R"("force_audio":true,"tool_choice":{"type":"function","function":{"name":"book"}})"}) {
    StatusOr<ChatRequest> b = ParseChatRequest(Chat(extra));
    ASSERT_FALSE(b.ok()) << extra;
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument) << extra;
    EXPECT_EQ(b.status().param(), "force_audio") << extra << ": " << b.status().ToString();
  }
  EXPECT_EQ(ParseChatRequest(Chat(R"("force_audio":true,"tool_choice":"required")")).status().message(),
            "cannot force both a tool call and speech");
}

TEST(OpenAiParseTest, ToolJsonIsWrittenAsTheTemplatesTojson) {
  // json.dumps(x, ensure_ascii=False) of the same value, written by hand.
  const nlohmann::ordered_json v = nlohmann::ordered_json::parse(R"({"city":"서울","n":[1,2.5,true,null],"q":"a\"b\n"})");
  EXPECT_EQ(PythonJsonDumps(v), "{\"city\": \"서울\", \"n\": [1, 2.5, true, null], \"q\": \"a\\\"b\\n\"}");
}

// Whole floats are integers to JavaScript clients; ones outside int64 are
// refused, 2^63 included (it is what INT64_MAX rounds to as a double).
TEST(OpenAiParseTest, WholeFloatsAsIntegersAtInt64Edges) {
  auto seed = [](const std::string& v) {
    return ParseChatRequest(R"({"messages":[{"role":"user","content":"hi"}],"seed":)" + v + "}");
  };
  StatusOr<ChatRequest> r = seed("4096.0");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->options.sampling.seed, 4096u);
  r = seed("-9223372036854775808.0");  // -2^63, the smallest int64
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->options.sampling.seed, uint64_t{1} << 63);
  for (const char* bad : {"9223372036854775808.0", "9223372036854775807.0", "1e19", "-1e19", "2.5"}) {
    r = seed(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.status().param(), "seed") << bad;
  }
  StatusOr<ChatRequest> m = ParseChatRequest(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2147483648.0})");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().param(), "max_tokens");
}

std::string WithPart(const std::string& part) {
  return R"({"messages":[{"role":"user","content":[{"type":"text","text":"see"},)" + part + "]}]}";
}

TEST(OpenAiParseTest, MediaPartsAsEmbeddingObjectsAndAsRawMedia) {
  const std::string data_image = WithPart(R"({"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}})");
  const std::string object = WithPart(R"({"type":"audio_url","audio_url":{"url":"s3://b/emb/a.safetensors"}})");
  const std::string inline_audio = WithPart(R"({"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}})");

  // The LLM server takes embedding objects only.
  auto refused = ParseChatRequest(data_image);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().param(), "messages[0].content[1].image_url.url");
  EXPECT_FALSE(ParseChatRequest(inline_audio).ok());
  auto accepted = ParseChatRequest(object);
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  ASSERT_EQ(accepted->media.size(), 1u);
  EXPECT_EQ(accepted->media[0].part_type, "audio_url");

  // The orchestrator takes the media themselves, input_audio as a data: URL.
  auto image = ParseChatRequest(data_image, MediaForm::kRawMedia);
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  ASSERT_EQ(image->media.size(), 1u);
  EXPECT_EQ(image->media[0].message_index, 0);
  EXPECT_EQ(image->media[0].part_index, 1);
  EXPECT_EQ(image->media[0].kind, ContentKind::kImage);
  EXPECT_EQ(image->media[0].url, "data:image/png;base64,AAAA");
  auto audio = ParseChatRequest(inline_audio, MediaForm::kRawMedia);
  ASSERT_TRUE(audio.ok()) << audio.status().ToString();
  EXPECT_EQ(audio->media[0].kind, ContentKind::kAudio);
  EXPECT_EQ(audio->media[0].part_type, "input_audio");
  EXPECT_EQ(audio->media[0].url, "data:audio/wav;base64,UklGRg==");

  auto no_format = ParseChatRequest(WithPart(R"({"type":"input_audio","input_audio":{"data":"UklGRg=="}})"),
                                    MediaForm::kRawMedia);
  ASSERT_FALSE(no_format.ok());
  EXPECT_EQ(no_format.status().param(), "messages[0].content[1].input_audio.format");
  auto bad_scheme = ParseChatRequest(WithPart(R"({"type":"image_url","image_url":{"url":"ftp://x/y.png"}})"),
                                     MediaForm::kRawMedia);
  ASSERT_FALSE(bad_scheme.ok());
  EXPECT_EQ(bad_scheme.status().param(), "messages[0].content[1].image_url.url");
}

}  // namespace
}  // namespace omni::openai
