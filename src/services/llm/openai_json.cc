#include "services/llm/openai_json.h"

#include <nlohmann/json.hpp>

namespace omni::llm {
namespace {

using Json = nlohmann::ordered_json;

// Invalid UTF-8 in token text (a token holding part of a character) must not
// make dump() throw: replace it.
std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json Bytes(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

Json ChatLogprobs(const std::vector<LogprobEntry>& entries) {
  Json content = Json::array();
  for (const LogprobEntry& e : entries) {
    Json top = Json::array();
    for (const TopLogprob& t : e.top) top.push_back({{"token", t.token}, {"logprob", t.logprob}, {"bytes", Bytes(t.token)}});
    content.push_back({{"token", e.token}, {"logprob", e.logprob}, {"bytes", Bytes(e.token)}, {"top_logprobs", top}});
  }
  return Json{{"content", content}};
}

Json CompletionLogprobs(const std::vector<LogprobEntry>& entries, size_t text_offset) {
  Json tokens = Json::array(), lps = Json::array(), tops = Json::array(), offsets = Json::array();
  for (const LogprobEntry& e : entries) {
    tokens.push_back(e.token);
    lps.push_back(e.logprob);
    Json top = Json::object();
    for (const TopLogprob& t : e.top) top[t.token] = t.logprob;
    tops.push_back(top);
    offsets.push_back(text_offset);
    text_offset += e.token.size();
  }
  return Json{{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

Json UsageObject(const Usage& u) {
  return Json{{"prompt_tokens", u.prompt_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"completion_tokens", u.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

Json Header(const PreparedGeneration& r, std::string_view object) {
  return Json{{"id", r.id}, {"object", object}, {"created", r.created}, {"model", r.model}};
}

Json FinishValue(const std::string& reason) { return reason.empty() ? Json(nullptr) : Json(reason); }

Json ToolCallsArray(const std::vector<ParsedToolCall>& calls) {
  Json arr = Json::array();
  for (const ParsedToolCall& c : calls) {
    arr.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return arr;
}

// vLLM's streamed tool-call deltas: the first carries id, type and name.
Json ToolCallDeltas(const std::vector<ToolCallDelta>& deltas) {
  Json arr = Json::array();
  for (const ToolCallDelta& d : deltas) {
    Json fn = Json::object();
    if (!d.name.empty()) fn["name"] = d.name;
    fn["arguments"] = d.arguments;
    Json item = {{"index", d.index}};
    if (!d.id.empty()) {
      item["id"] = d.id;
      item["type"] = "function";
    }
    item["function"] = fn;
    arr.push_back(item);
  }
  return arr;
}

}  // namespace

std::string ChatCompletionJson(const PreparedGeneration& r, const std::vector<ChoiceResult>& choices,
                               const Usage& usage) {
  Json j = Header(r, "chat.completion");
  Json arr = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    // No content beside tool calls is null, as OpenAI answers.
    Json content = c.text.empty() && !c.tool_calls.empty() ? Json(nullptr) : Json(c.text);
    Json message = {{"role", "assistant"},
                    {"content", content},
                    {"reasoning_content", c.has_reasoning ? Json(c.reasoning) : Json(nullptr)},
                    {"tool_calls", ToolCallsArray(c.tool_calls)}};
    arr.push_back({{"index", i},
                   {"message", message},
                   {"logprobs", r.sampling.logprobs ? ChatLogprobs(c.logprobs) : Json(nullptr)},
                   {"finish_reason", FinishValue(c.finish_reason)}});
  }
  j["choices"] = arr;
  j["usage"] = UsageObject(usage);
  return Dump(j);
}

std::string CompletionJson(const PreparedGeneration& r, const std::vector<ChoiceResult>& choices, const Usage& usage) {
  Json j = Header(r, "text_completion");
  Json arr = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    arr.push_back({{"index", i},
                   {"text", r.echo_text + c.text},
                   {"logprobs", r.sampling.logprobs ? CompletionLogprobs(c.logprobs, r.echo_text.size()) : Json(nullptr)},
                   {"finish_reason", FinishValue(c.finish_reason)}});
  }
  j["choices"] = arr;
  j["usage"] = UsageObject(usage);
  return Dump(j);
}

std::string ChatChunkJson(const PreparedGeneration& r, const GenerationEvent& e, bool first) {
  Json j = Header(r, "chat.completion.chunk");
  Json delta = Json::object();
  if (first) delta["role"] = "assistant";
  const bool structured = !e.reasoning.empty() || !e.tool_calls.empty();
  if (!e.reasoning.empty()) delta["reasoning_content"] = e.reasoning;
  if (!e.text.empty() || ((e.kind == GenerationEvent::Kind::kDelta || first) && !structured)) delta["content"] = e.text;
  if (!e.tool_calls.empty()) delta["tool_calls"] = ToolCallDeltas(e.tool_calls);
  Json choice = {{"index", e.choice},
                 {"delta", delta},
                 {"logprobs", e.logprobs.empty() ? Json(nullptr) : ChatLogprobs(e.logprobs)},
                 {"finish_reason", e.kind == GenerationEvent::Kind::kFinish ? FinishValue(e.finish_reason) : Json(nullptr)}};
  j["choices"] = Json::array({choice});
  if (r.include_usage) j["usage"] = nullptr;
  return Dump(j);
}

std::string CompletionChunkJson(const PreparedGeneration& r, const GenerationEvent& e, bool first) {
  Json j = Header(r, "text_completion");
  std::string text = (first ? r.echo_text : std::string()) + e.text;
  Json choice = {{"index", e.choice},
                 {"text", text},
                 {"logprobs", e.logprobs.empty() ? Json(nullptr) : CompletionLogprobs(e.logprobs, 0)},
                 {"finish_reason", e.kind == GenerationEvent::Kind::kFinish ? FinishValue(e.finish_reason) : Json(nullptr)}};
  j["choices"] = Json::array({choice});
  if (r.include_usage) j["usage"] = nullptr;
  return Dump(j);
}

std::string UsageChunkJson(const PreparedGeneration& r, const Usage& usage) {
  Json j = Header(r, r.chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = Json::array();
  j["usage"] = UsageObject(usage);
  return Dump(j);
}

std::string ModelsJson(const std::string& name, int max_model_len) {
  Json model = {{"id", name}, {"object", "model"}, {"created", 0}, {"owned_by", "omniserve"},
                {"root", name}, {"parent", nullptr}, {"max_model_len", max_model_len}};
  return Dump(Json{{"object", "list"}, {"data", Json::array({model})}});
}

std::string TokenizeJson(const TokenizeResult& result) {
  return Dump(Json{{"count", result.tokens.size()}, {"max_model_len", result.max_model_len}, {"tokens", result.tokens}});
}

std::string DetokenizeJson(const std::string& text) { return Dump(Json{{"prompt", text}}); }

}  // namespace omni::llm
