#include "services/gateway/model_peek.h"

#include <gtest/gtest.h>


namespace omni {
namespace {

std::string Peek(std::string_view body) {
  StatusOr<std::string> model = PeekJsonModel(body);
  EXPECT_TRUE(model.ok()) << model.status().ToString() << " for " << body;
  return model.ok() ? *model : "<error>";
}

std::string PeekError(std::string_view body) {
  StatusOr<std::string> model = PeekJsonModel(body);
  EXPECT_FALSE(model.ok()) << "accepted " << body;
  if (model.ok()) return "<accepted>";
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  return model.status().message();
}

TEST(ModelPeekTest, ReadsTopLevelModel) {
  EXPECT_EQ(Peek(R"({"model":"omni-demo"})"), "omni-demo");
  EXPECT_EQ(Peek(" \t\r\n{ \n\"model\" :\t\"m\" , \"stream\": true }"), "m");
  EXPECT_EQ(Peek("\xEF\xBB\xBF{\"model\":\"bom\"}"), "bom");
  EXPECT_EQ(Peek(R"({"model":""})"), "");
}

TEST(ModelPeekTest, SkipsEveryKindOfValueBeforeModel) {
  std::string_view body = R"({
    "messages": [{"role": "user", "content": [
      {"type": "text", "text": "say \"model\": \"wrong\" {[}]"},
      {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}],
    "n": -1.25e+3, "m": 0, "k": 0.5E-2, "z": 12,
    "t": true, "f": false, "x": null,
    "empty_obj": {}, "empty_arr": [ ], "nested": {"model": "inner", "a": [[], [{}], [1, [2, [3]]]]},
    "backslashes": "\\", "quote_after_backslashes": "a\\\"b\\\\",
    "unicode": "\u00e9\ud83d\ude00 é",
    "model": "outer"
  })";
  EXPECT_EQ(Peek(body), "outer");
}

TEST(ModelPeekTest, ComparesKeysAfterUnescaping) {
  EXPECT_EQ(Peek(R"({"mod\u0065l":"a"})"), "a");
  EXPECT_EQ(Peek(R"({"\u006D\u006f\u0064\u0065\u006c":"b"})"), "b");
  EXPECT_EQ(Peek(R"({"model\u0000":"no","model ":"no","Model":"no","model":"c"})"), "c");
}

TEST(ModelPeekTest, UnescapesTheModelValue) {
  EXPECT_EQ(Peek(R"({"model":"a\"b\\c\/d\b\f\n\r\te"})"), "a\"b\\c/d\b\f\n\r\te");
  EXPECT_EQ(Peek(R"({"model":"caf\u00e9"})"), "caf\xC3\xA9");
  EXPECT_EQ(Peek(R"({"model":"\u20AC"})"), "\xE2\x82\xAC");
  EXPECT_EQ(Peek(R"({"model":"\ud83d\ude00"})"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(Peek(R"({"model":"\uDBFF\uDFFF"})"), "\xF4\x8F\xBF\xBF");
  EXPECT_EQ(Peek(R"({"model":"HyperCLOVAX-SEED-Omni-8B"})"), "HyperCLOVAX-SEED-Omni-8B");
  EXPECT_EQ(Peek("{\"model\":\"\xED\x95\x9C\xEA\xB5\xAD\"}"), "\xED\x95\x9C\xEA\xB5\xAD");  // raw UTF-8
}

TEST(ModelPeekTest, FirstModelWinsAndTheRestIsNotRead) {
  EXPECT_EQ(Peek(R"({"model":"first","model":"second"})"), "first");
  EXPECT_EQ(Peek(R"({"model":"m", this is not JSON)"), "m");
  EXPECT_EQ(Peek(R"({"model":"m")"), "m");
}

TEST(ModelPeekTest, NotAnObject) {
  for (std::string_view body : {"", "   ", "[]", "[{\"model\":\"m\"}]", "\"model\"", "null", "1", "model"}) {
    EXPECT_EQ(PeekError(body), "request body is not a JSON object") << body;
  }
}

TEST(ModelPeekTest, ModelNotAString) {
  for (std::string_view body : {R"({"model":1})", R"({"model":null})", R"({"model":["m"]})",
                                R"({"model":{"name":"m"}})", R"({"model":true})"}) {
    StatusOr<std::string> model = PeekJsonModel(body);
    ASSERT_FALSE(model.ok()) << body;
    EXPECT_EQ(model.status().message(), "`model` must be a string");
    EXPECT_EQ(model.status().param(), "model");
  }
}

TEST(ModelPeekTest, MissingModel) {
  for (std::string_view body : {"{}", " { } ", R"({"a":1})", R"({"messages":[{"model":"m"}],"n":{"model":"x"}})"}) {
    StatusOr<std::string> model = PeekJsonModel(body);
    ASSERT_FALSE(model.ok()) << body;
    EXPECT_EQ(model.status().message(), "missing `model`");
    EXPECT_EQ(model.status().param(), "model");
  }
}

TEST(ModelPeekTest, MalformedNamesTheByte) {
  // Offsets are 0-based, counted by hand.
  EXPECT_EQ(PeekError(R"({"a":})"), "malformed JSON at byte 5: unexpected character");
  EXPECT_EQ(PeekError(R"({"a":1)"), "malformed JSON at byte 6: unexpected end of input");
  EXPECT_EQ(PeekError(R"({"a" 1})"), "malformed JSON at byte 5: expected ':' after a key");
  EXPECT_EQ(PeekError(R"({a:1})"), "malformed JSON at byte 1: expected a string key");
  EXPECT_EQ(PeekError(R"({"a":1,})"), "malformed JSON at byte 7: expected a string key");
  EXPECT_EQ(PeekError(R"({"a":1 "b":2})"), "malformed JSON at byte 7: expected ',' or '}' after a value");
  EXPECT_EQ(PeekError(R"({"a":tru})"), "malformed JSON at byte 5: invalid literal");
  EXPECT_EQ(PeekError(R"({"a":nul)"), "malformed JSON at byte 5: invalid literal");
  EXPECT_EQ(PeekError(R"({"a":01})"), "malformed JSON at byte 6: expected ',' or '}' after a value");
  EXPECT_EQ(PeekError(R"({"a":-})"), "malformed JSON at byte 5: invalid number");
  EXPECT_EQ(PeekError(R"({"a":1.})"), "malformed JSON at byte 5: invalid number");
  EXPECT_EQ(PeekError(R"({"a":1e+})"), "malformed JSON at byte 5: invalid number");
  EXPECT_EQ(PeekError(R"({"a":+1})"), "malformed JSON at byte 5: unexpected character");
  EXPECT_EQ(PeekError(R"({"a":"abc)"), "malformed JSON at byte 9: unterminated string");
  EXPECT_EQ(PeekError(R"({"a":"abc\"})"), "malformed JSON at byte 12: unterminated string");
  EXPECT_EQ(PeekError(R"({"a":[1,2})"), "malformed JSON at byte 9: expected ',' or ']'");
  EXPECT_EQ(PeekError(R"({"a":{"b" 1}})"), "malformed JSON at byte 10: expected ':' after a key");
  EXPECT_EQ(PeekError(R"({"a":{1:2}})"), "malformed JSON at byte 6: expected a string key");
  EXPECT_EQ(PeekError(R"({"a":[)"), "malformed JSON at byte 6: unexpected end of input");
  EXPECT_EQ(PeekError(R"({"a":{"b":1)"), "malformed JSON at byte 11: unexpected end of input");
  EXPECT_EQ(PeekError("{"), "malformed JSON at byte 1: unexpected end of input");
  EXPECT_EQ(PeekError(R"({"model")"), "malformed JSON at byte 8: unexpected end of input");
  EXPECT_EQ(PeekError(R"({"model":)"), "malformed JSON at byte 9: unexpected end of input");
}

TEST(ModelPeekTest, MalformedStringsWhereTheyAreRead) {
  EXPECT_EQ(PeekError("{\"model\":\"a\x01\"}"), "malformed JSON at byte 11: control character in string");
  EXPECT_EQ(PeekError("{\"mo\tdel\":\"a\"}"), "malformed JSON at byte 4: control character in string");
  EXPECT_EQ(PeekError(R"({"model":"\q"})"), "malformed JSON at byte 10: invalid escape");
  EXPECT_EQ(PeekError(R"({"model":"\u12"})"), "malformed JSON at byte 10: invalid \\u escape");
  EXPECT_EQ(PeekError(R"({"model":"\u12G4"})"), "malformed JSON at byte 10: invalid \\u escape");
  EXPECT_EQ(PeekError(R"({"model":"\ud83d"})"), "malformed JSON at byte 10: lone high surrogate in \\u escape");
  EXPECT_EQ(PeekError(R"({"model":"\ud83dx"})"), "malformed JSON at byte 10: lone high surrogate in \\u escape");
  EXPECT_EQ(PeekError(R"({"model":"\ud83d\u0041"})"), "malformed JSON at byte 10: lone high surrogate in \\u escape");
  EXPECT_EQ(PeekError(R"({"model":"\ud83d\uZZZZ"})"), "malformed JSON at byte 16: invalid \\u escape");
  EXPECT_EQ(PeekError(R"({"model":"\ude00"})"), "malformed JSON at byte 10: lone low surrogate in \\u escape");
  EXPECT_EQ(PeekError("{\"model\":\"\xC3\"}"), "malformed JSON at byte 9: invalid UTF-8 in string");
  EXPECT_EQ(PeekError("{\"model\":\"\xED\xA0\x80\"}"), "malformed JSON at byte 9: invalid UTF-8 in string");
  EXPECT_EQ(PeekError(R"({"model":"abc)"), "malformed JSON at byte 13: unterminated string");
  EXPECT_EQ(PeekError(R"({"model":"abc\)"), "malformed JSON at byte 14: unterminated string");
  EXPECT_EQ(PeekError(R"({"mod\el":"m"})"), "malformed JSON at byte 5: invalid escape");
}

TEST(ModelPeekTest, NestingLimit) {
  auto nested = [](int levels) {
    return "{\"a\":" + std::string(levels, '[') + std::string(levels, ']') + ",\"model\":\"deep\"}";
  };
  // The top-level object is level 1, so 255 arrays reach level 256.
  EXPECT_EQ(Peek(nested(kMaxPeekDepth - 1)), "deep");
  EXPECT_EQ(PeekError(nested(kMaxPeekDepth)),
            "malformed JSON at byte " + std::to_string(5 + kMaxPeekDepth - 1) + ": nested deeper than 256 levels");
  // Far past the limit must fail the same way, not overflow the stack.
  EXPECT_EQ(PeekError("{\"a\":" + std::string(100000, '{')),
            "malformed JSON at byte 6: expected a string key");
  EXPECT_EQ(PeekError("{\"a\":" + std::string(100000, '[')),
            "malformed JSON at byte " + std::to_string(5 + kMaxPeekDepth - 1) + ": nested deeper than 256 levels");
}

// Bodies carry base64 media; the model usually comes after the messages
// (the OpenAI Python client writes "messages" first).
TEST(ModelPeekTest, SkipsLargeMedia) {
  std::string body = R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,)";
  body.append(32 << 20, 'A');
  body += R"("}}]}],"model":"omni-vision"})";
  EXPECT_EQ(Peek(body), "omni-vision");
}

TEST(ModelPeekTest, SkippedStringsEndAtTheFirstUnescapedQuote) {
  // Runs of backslashes before a quote: odd escapes it, even does not.
  EXPECT_EQ(Peek(R"({"a":"\\","model":"m1"})"), "m1");
  EXPECT_EQ(Peek(R"({"a":"\"","model":"m2"})"), "m2");
  EXPECT_EQ(Peek(R"({"a":"\\\"\\\\","model":"m3"})"), "m3");
  EXPECT_EQ(Peek(R"({"a":"x\\\\\"y\"","model":"m4"})"), "m4");
  EXPECT_EQ(Peek(R"({"a":["\\",{"\"":"\\\\"}],"model":"m5"})"), "m5");
}

}  // namespace
}  // namespace omni

namespace omni {
namespace {

TEST(PeekJsonRawMember, ReturnsTheValueTextAsSent) {
  const std::string body = R"({"model":"m","stream":true,"messages": [{"role":"user","content":"a \"b\" }"}] ,"n":1})";
  auto messages = PeekJsonRawMember(body, "messages");
  ASSERT_TRUE(messages.ok());
  ASSERT_TRUE(messages->has_value());
  EXPECT_EQ(**messages, R"([{"role":"user","content":"a \"b\" }"}])");
  auto n = PeekJsonRawMember(body, "n");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(**n, "1");
  auto absent = PeekJsonRawMember(body, "prompt");
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());
}

TEST(PeekJsonRawMember, MalformedBeforeOrInTheValueIsAnError) {
  EXPECT_FALSE(PeekJsonRawMember(R"({"a": [1, 2}, "messages": []})", "messages").ok());
  EXPECT_FALSE(PeekJsonRawMember(R"({"messages": [1, )", "messages").ok());
  EXPECT_FALSE(PeekJsonRawMember("[]", "messages").ok());
}

}  // namespace
}  // namespace omni
