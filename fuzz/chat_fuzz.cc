// libFuzzer target for the chat edge of the LLM server and the orchestrator,
// both directions: ParseChatRequest (api/openai/openai_parse.h), in both
// media forms, on the input as a request body, and OutputParser (services/llm/output_parser.h) on the input as model
// output, pushed in pieces whose sizes come from the input itself. Seeds:
// fuzz/corpus/chat.
//
// Requests: any input is a ChatRequest or InvalidArgument, never a crash or
// another code; a parsed request's tool_choice names one of its tools; the
// orchestrator's form (raw media) accepts whatever the LLM server's does.
// Output: no crash or out-of-bounds read; every tool call's arguments are a
// JSON object; the streamed fragments of each call join to its arguments;
// the same text in one piece parses to the same result (splits never matter).
//
// llm_chat_corpus_test also links this file and replays the corpus.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/openai/openai_parse.h"
#include "core/check.h"
#include "services/llm/output_parser.h"

namespace {

using omni::llm::OutputDelta;
using omni::llm::OutputParser;
using omni::llm::ParsedToolCall;

struct Result {
  std::string reasoning, content;
  std::vector<ParsedToolCall> calls;
  std::map<int, std::string> streamed_args;
  std::map<int, std::string> names;
};

Result Parse(std::string_view text, const std::vector<omni::openai::ToolSpec>& tools, bool reasoning,
             const std::vector<size_t>& cuts) {
  int next = 0;
  OutputParser p({.starts_in_reasoning = reasoning, .tools = tools,
                  .new_call_id = [&] { return "id" + std::to_string(next++); }});
  Result r;
  auto take = [&](const OutputDelta& d) {
    r.reasoning += d.reasoning;
    r.content += d.content;
    for (const auto& t : d.tool_calls) {
      if (!t.name.empty()) r.names[t.index] = t.name;
      r.streamed_args[t.index] += t.arguments;
    }
  };
  size_t at = 0;
  for (size_t cut : cuts) {
    cut = std::min(cut, text.size());
    if (cut < at) continue;
    take(p.Push(text.substr(at, cut - at)));
    at = cut;
  }
  take(p.Push(text.substr(at)));
  take(p.Finish());
  r.calls = p.calls();
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  omni::StatusOr<omni::openai::ChatRequest> req = omni::openai::ParseChatRequest(input);
  if (!req.ok()) {
    OMNI_CHECK(req.status().code() == omni::StatusCode::kInvalidArgument) << req.status().ToString();
  } else if (req->tool_choice.mode == omni::openai::ToolChoice::Mode::kNamed) {
    bool found = false;
    for (const auto& t : req->tool_specs) found = found || t.name == req->tool_choice.name;
    OMNI_CHECK(found);
  }
  // As the orchestrator parses it: raw media forms are a superset of
  // embedding-object references, so whatever the LLM server accepts it
  // accepts too, with the same media parts.
  omni::StatusOr<omni::openai::ChatRequest> raw =
      omni::openai::ParseChatRequest(input, omni::openai::MediaForm::kRawMedia);
  if (!raw.ok()) OMNI_CHECK(raw.status().code() == omni::StatusCode::kInvalidArgument) << raw.status().ToString();
  if (req.ok()) {
    OMNI_CHECK(raw.ok()) << raw.status().ToString();
    OMNI_CHECK(raw->media.size() == req->media.size());
  }

  // As model output, with two tools of every parameter kind.
  using omni::openai::ParamType;
  const std::vector<omni::openai::ToolSpec> tools = {
      {.name = "f", .parameters = {{.name = "s", .type = ParamType::kString}, {.name = "n", .type = ParamType::kInteger}}},
      {.name = "get_weather", .parameters = {{.name = "city", .type = ParamType::kString}}}};
  std::vector<size_t> cuts;
  for (size_t i = 0; i < std::min<size_t>(size, 8); ++i) cuts.push_back(static_cast<size_t>(data[i]) * (i + 1));
  const bool reasoning = size > 0 && (data[0] & 1);
  const Result split = Parse(input, tools, reasoning, cuts);
  const Result whole = Parse(input, tools, reasoning, {});
  OMNI_CHECK(split.reasoning == whole.reasoning);
  OMNI_CHECK(split.content == whole.content);
  OMNI_CHECK(split.calls.size() == whole.calls.size());
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    OMNI_CHECK(split.calls[i].arguments == whole.calls[i].arguments);
    const nlohmann::json args = nlohmann::json::parse(whole.calls[i].arguments, nullptr, false);
    OMNI_CHECK(!args.is_discarded() && args.is_object()) << whole.calls[i].arguments;
  }
  // Every completed call's streamed fragments join to its arguments.
  for (const ParsedToolCall& c : whole.calls) {
    bool matched = false;
    for (const auto& [index, args] : whole.streamed_args) matched = matched || args == c.arguments;
    OMNI_CHECK(matched) << c.arguments;
  }
  return 0;
}
