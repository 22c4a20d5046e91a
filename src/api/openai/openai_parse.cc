#include "api/openai/openai_parse.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/openai/python_json.h"
#include "core/base64.h"
#include "core/whole_number.h"

namespace omni::openai {
namespace {

using Json = nlohmann::ordered_json;

Status FieldError(const std::string& param, const std::string& message) {
  return InvalidArgument(message).WithParam(param);
}
Status TypeError(const std::string& param, std::string_view expected) {
  return FieldError(param, "'" + param + "' must be " + std::string(expected));
}

StatusOr<Json> ParseBody(std::string_view body) {
  Json root = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidArgument("the request body is not valid JSON").WithErrorCode("invalid_json");
  if (!root.is_object()) return InvalidArgument("the request body must be a JSON object");
  return root;
}

// Null and absent are the same (OpenAI clients send explicit nulls).
const Json* Find(const Json& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Status OptString(const Json& obj, std::string_view key, const std::string& param, std::string* out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_string()) return TypeError(param, "a string");
  *out = v->get<std::string>();
  return Status::Ok();
}

Status OptBool(const Json& obj, std::string_view key, const std::string& param, bool* out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return TypeError(param, "a boolean");
  *out = v->get<bool>();
  return Status::Ok();
}

Status IntValue(const Json& v, const std::string& param, int64_t lo, int64_t hi, int64_t* out) {
  if (!v.is_number_integer()) {
    // 3.0 is an integer to JavaScript clients.
    if (v.is_number_float()) {
      const std::optional<int64_t> x = WholeInt64(v.get<double>());
      if (x && *x >= lo && *x <= hi) {
        *out = *x;
        return Status::Ok();
      }
    }
    return TypeError(param, "an integer");
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return FieldError(param, "'" + param + "' is out of range");
  }
  int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) {
    return FieldError(param, "'" + param + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = x;
  return Status::Ok();
}

Status OptInt(const Json& obj, std::string_view key, const std::string& param, int64_t lo, int64_t hi, int* out,
              bool* set = nullptr) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  int64_t x = 0;
  OMNI_RETURN_IF_ERROR(IntValue(*v, param, lo, hi, &x));
  *out = static_cast<int>(x);
  if (set != nullptr) *set = true;
  return Status::Ok();
}

Status OptFloat(const Json& obj, std::string_view key, const std::string& param, float* out) {
  const Json* v = Find(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number()) return TypeError(param, "a number");
  double d = v->get<double>();
  if (!std::isfinite(d)) return TypeError(param, "a finite number");
  *out = static_cast<float>(d);
  return Status::Ok();
}

Status TokenIdList(const Json& v, const std::string& param, std::vector<int32_t>* out) {
  if (!v.is_array()) return TypeError(param, "an array of token ids");
  out->clear();
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t id = 0;
    OMNI_RETURN_IF_ERROR(IntValue(v[i], param + "[" + std::to_string(i) + "]", 0,
                                  std::numeric_limits<int32_t>::max(), &id));
    out->push_back(static_cast<int32_t>(id));
  }
  return Status::Ok();
}

constexpr int kMaxInt = std::numeric_limits<int>::max();

// The sampling and streaming fields shared by chat and completions.
Status ParseGenerationOptions(const Json& root, GenerationOptions* g) {
  SamplingParams& s = g->sampling;
  OMNI_RETURN_IF_ERROR(OptBool(root, "stream", "stream", &g->stream));
  if (const Json* so = Find(root, "stream_options")) {
    if (!so->is_object()) return TypeError("stream_options", "an object");
    OMNI_RETURN_IF_ERROR(OptBool(*so, "include_usage", "stream_options.include_usage", &g->include_usage));
  }
  // max_completion_tokens is the newer name; it wins when both are given.
  OMNI_RETURN_IF_ERROR(OptInt(root, "max_tokens", "max_tokens", 1, kMaxInt, &s.max_tokens, &g->max_tokens_set));
  OMNI_RETURN_IF_ERROR(
      OptInt(root, "max_completion_tokens", "max_completion_tokens", 1, kMaxInt, &s.max_tokens, &g->max_tokens_set));
  OMNI_RETURN_IF_ERROR(OptFloat(root, "temperature", "temperature", &s.temperature));
  OMNI_RETURN_IF_ERROR(OptFloat(root, "top_p", "top_p", &s.top_p));
  OMNI_RETURN_IF_ERROR(OptInt(root, "top_k", "top_k", -1, kMaxInt, &s.top_k));
  if (s.top_k == 0) s.top_k = -1;  // vLLM: 0 also means off
  OMNI_RETURN_IF_ERROR(OptFloat(root, "min_p", "min_p", &s.min_p));
  OMNI_RETURN_IF_ERROR(OptFloat(root, "presence_penalty", "presence_penalty", &s.presence_penalty));
  OMNI_RETURN_IF_ERROR(OptFloat(root, "frequency_penalty", "frequency_penalty", &s.frequency_penalty));
  OMNI_RETURN_IF_ERROR(OptFloat(root, "repetition_penalty", "repetition_penalty", &s.repetition_penalty));
  OMNI_RETURN_IF_ERROR(OptInt(root, "n", "n", 1, 128, &s.n));
  OMNI_RETURN_IF_ERROR(OptBool(root, "ignore_eos", "ignore_eos", &s.ignore_eos));
  if (const Json* seed = Find(root, "seed")) {
    int64_t x = 0;
    OMNI_RETURN_IF_ERROR(IntValue(*seed, "seed", std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max(), &x));
    s.seed = static_cast<uint64_t>(x);
  }
  if (const Json* stop = Find(root, "stop")) {
    if (stop->is_string()) {
      g->stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (size_t i = 0; i < stop->size(); ++i) {
        if (!(*stop)[i].is_string()) return TypeError("stop[" + std::to_string(i) + "]", "a string");
        g->stop.push_back((*stop)[i].get<std::string>());
      }
    } else {
      return TypeError("stop", "a string or an array of strings");
    }
    for (const std::string& st : g->stop) {
      if (st.empty()) return FieldError("stop", "stop strings must not be empty");
    }
  }
  if (const Json* ids = Find(root, "stop_token_ids")) {
    OMNI_RETURN_IF_ERROR(TokenIdList(*ids, "stop_token_ids", &s.stop_token_ids));
  }
  OMNI_RETURN_IF_ERROR(OptInt(root, "min_tokens", "min_tokens", 0, kMaxInt, &s.min_tokens));
  if (const Json* bias = Find(root, "logit_bias")) {
    if (!bias->is_object()) return TypeError("logit_bias", "an object mapping token ids to biases");
    for (const auto& [key, value] : bias->items()) {
      int32_t id = 0;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc() || end != key.data() + key.size() || id < 0) {
        return FieldError("logit_bias", "logit_bias keys must be token ids, got '" + ShownValue(key) + "'");
      }
      float b = 0;
      OMNI_RETURN_IF_ERROR(OptFloat(*bias, key, "logit_bias", &b));
      s.logit_bias.emplace_back(id, b);
    }
  }
  OMNI_RETURN_IF_ERROR(OptString(root, "cache_salt", "cache_salt", &g->cache_salt));
  if (Find(root, "cache_salt") != nullptr && g->cache_salt.empty()) {
    return FieldError("cache_salt", "'cache_salt' must be a non-empty string");
  }
  return Status::Ok();
}

StatusOr<std::string> MediaUrl(const Json& part, std::string_view field, const std::string& param, MediaForm form) {
  const Json* holder = Find(part, field);
  if (holder == nullptr) return FieldError(param, "'" + param + "." + std::string(field) + "' is required");
  std::string url;
  const std::string url_param = param + "." + std::string(field) + ".url";
  if (holder->is_string()) {
    url = holder->get<std::string>();
  } else if (holder->is_object()) {
    const Json* u = Find(*holder, "url");
    if (u == nullptr || !u->is_string()) return TypeError(url_param, "a string");
    url = u->get<std::string>();
  } else {
    return TypeError(param + "." + std::string(field), "an object with a 'url'");
  }
  const bool object_url = url.starts_with("s3://") || url.starts_with("file://") || url.starts_with("http://") ||
                          url.starts_with("https://");
  if (form == MediaForm::kRawMedia) {
    if (!object_url && !url.starts_with("data:")) {
      return FieldError(url_param, "expected a data:, http(s)://, s3:// or file:// URL");
    }
  } else if (!object_url) {
    return FieldError(url_param,
                      "the LLM server takes media as embedding objects (s3://, file:// or http:// URLs of the "
                      "safetensors an encoder wrote); send raw media (data: URLs, images, audio) to the "
                      "orchestrator");
  }
  return url;
}

bool IsRemoteUrl(std::string_view s) {
  return s.starts_with("http://") || s.starts_with("https://") || s.starts_with("s3://");
}

// OpenAI's inline audio, {"data": base64 bytes, "format": "wav"}, as a data:
// URL; and OmniServe's forms of it: "data" holding a URL, or the base64 of
// one (standard or URL-safe), which is fetched like an audio_url. The format
// only names the bytes (they are sniffed), but it must be a plain token.
StatusOr<std::string> InlineAudioUrl(const Json& part, const std::string& param) {
  const Json* audio = Find(part, "input_audio");
  if (audio == nullptr || !audio->is_object()) return TypeError(param + ".input_audio", "an object");
  const Json* data = Find(*audio, "data");
  if (data == nullptr || !data->is_string()) return TypeError(param + ".input_audio.data", "a base64 string");
  const std::string& text = data->get_ref<const std::string&>();
  if (text.empty()) return FieldError(param + ".input_audio.data", "the audio data is empty");
  if (IsRemoteUrl(text)) return text;
  // A URL in base64 is short; audio bytes are not tried.
  if (text.size() <= 8192) {
    std::optional<std::string> decoded = Base64Decode(text);
    if (!decoded) decoded = Base64UrlDecode(text);
    if (decoded && IsRemoteUrl(*decoded)) return *decoded;
  }
  const Json* format = Find(*audio, "format");
  if (format == nullptr || !format->is_string()) return TypeError(param + ".input_audio.format", "a string");
  const std::string& f = format->get_ref<const std::string&>();
  if (f.empty() || f.size() > 16 || !std::all_of(f.begin(), f.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      })) {
    return FieldError(param + ".input_audio.format",
                      "the audio format '" + ShownValue(f) + "' is not a format name (e.g. wav, mp3)");
  }
  return "data:audio/" + f + ";base64," + text;
}

Status ParseContentParts(const Json& content, int message_index, const std::string& param, MediaForm form,
                         ChatMessage* msg, std::vector<MediaPart>* media) {
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string p = param + "[" + std::to_string(i) + "]";
    if (!part.is_object()) return TypeError(p, "an object");
    std::string type;
    OMNI_RETURN_IF_ERROR(OptString(part, "type", p + ".type", &type));
    ContentPart cp;
    if (type == "text") {
      const Json* t = Find(part, "text");
      if (t == nullptr || !t->is_string()) return TypeError(p + ".text", "a string");
      cp.kind = ContentKind::kText;
      cp.text = t->get<std::string>();
    } else if (type == "image_url" || type == "audio_url" || type == "video_url") {
      cp.kind = type == "image_url" ? ContentKind::kImage
                : type == "audio_url" ? ContentKind::kAudio
                                      : ContentKind::kVideo;
      OMNI_ASSIGN_OR_RETURN(std::string url, MediaUrl(part, type, p, form));
      media->push_back(MediaPart{message_index, static_cast<int>(msg->parts.size()), cp.kind, type, std::move(url)});
    } else if (type == "input_audio" && form == MediaForm::kRawMedia) {
      cp.kind = ContentKind::kAudio;
      OMNI_ASSIGN_OR_RETURN(std::string url, InlineAudioUrl(part, p));
      media->push_back(MediaPart{message_index, static_cast<int>(msg->parts.size()), cp.kind, type, std::move(url)});
    } else if (type == "input_audio") {
      return FieldError(p, "inline audio is not accepted by the LLM server; reference the audio encoder's "
                           "embedding object with {\"type\":\"audio_url\",\"audio_url\":{\"url\":...}}");
    } else {
      return FieldError(p + ".type", "unknown content part type '" + ShownValue(type) +
                                         "' (expected text, image_url, audio_url or video_url)");
    }
    msg->parts.push_back(std::move(cp));
  }
  return Status::Ok();
}

Status ParseToolCalls(const Json& calls, const std::string& param, ChatMessage* msg) {
  if (!calls.is_array()) return TypeError(param, "an array");
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string p = param + "[" + std::to_string(i) + "]";
    const Json& c = calls[i];
    if (!c.is_object()) return TypeError(p, "an object");
    ToolCall call;
    OMNI_RETURN_IF_ERROR(OptString(c, "id", p + ".id", &call.id));
    const Json* fn = Find(c, "function");
    if (fn == nullptr || !fn->is_object()) return TypeError(p + ".function", "an object");
    OMNI_RETURN_IF_ERROR(OptString(*fn, "name", p + ".function.name", &call.name));
    if (const Json* args = Find(*fn, "arguments")) {
      Json obj;
      if (args->is_string()) {
        obj = Json::parse(args->get<std::string>(), nullptr, false);
        if (obj.is_discarded()) return FieldError(p + ".function.arguments", "arguments are not valid JSON");
      } else {
        obj = *args;
      }
      if (!obj.is_object()) return TypeError(p + ".function.arguments", "a JSON object");
      for (const auto& [k, v] : obj.items()) {
        call.arguments.push_back({k, v.is_string() ? v.get<std::string>() : PythonJsonDumps(v)});
      }
    }
    msg->tool_calls.push_back(std::move(call));
  }
  return Status::Ok();
}

Status ParseMessages(const Json& root, MediaForm form, ChatRequest* req) {
  const Json* msgs = Find(root, "messages");
  if (msgs == nullptr) return FieldError("messages", "'messages' is required");
  if (!msgs->is_array()) return TypeError("messages", "an array");
  if (msgs->empty()) return FieldError("messages", "'messages' must not be empty");
  for (size_t i = 0; i < msgs->size(); ++i) {
    const std::string p = "messages[" + std::to_string(i) + "]";
    const Json& m = (*msgs)[i];
    if (!m.is_object()) return TypeError(p, "an object");
    ChatMessage msg;
    std::string role;
    OMNI_RETURN_IF_ERROR(OptString(m, "role", p + ".role", &role));
    if (role == "system" || role == "developer") {
      msg.role = Role::kSystem;
    } else if (role == "user") {
      msg.role = Role::kUser;
    } else if (role == "assistant") {
      msg.role = Role::kAssistant;
    } else if (role == "tool") {
      msg.role = Role::kTool;
    } else {
      return FieldError(p + ".role", "unknown role '" + ShownValue(role) + "' (system, developer, user, assistant, tool)");
    }
    if (const Json* content = Find(m, "content")) {
      if (content->is_string()) {
        msg.parts.push_back(ContentPart{.kind = ContentKind::kText, .text = content->get<std::string>()});
      } else if (content->is_array()) {
        OMNI_RETURN_IF_ERROR(ParseContentParts(*content, static_cast<int>(i), p + ".content", form, &msg, &req->media));
      } else {
        return TypeError(p + ".content", "a string or an array of content parts");
      }
    }
    if (const Json* rc = Find(m, "reasoning_content")) {
      if (!rc->is_string()) return TypeError(p + ".reasoning_content", "a string");
      msg.has_reasoning_content = true;
      msg.reasoning_content = rc->get<std::string>();
    }
    if (const Json* calls = Find(m, "tool_calls")) OMNI_RETURN_IF_ERROR(ParseToolCalls(*calls, p + ".tool_calls", &msg));
    OMNI_RETURN_IF_ERROR(OptString(m, "tool_call_id", p + ".tool_call_id", &msg.tool_call_id));
    OMNI_RETURN_IF_ERROR(OptString(m, "name", p + ".name", &msg.name));
    req->messages.push_back(std::move(msg));
  }
  return Status::Ok();
}

ParamType ParamTypeOf(const Json& schema) {
  const Json* type = Find(schema, "type");
  if (type == nullptr || !type->is_string()) return ParamType::kAny;
  const std::string t = type->get<std::string>();
  if (t == "string") return ParamType::kString;
  if (t == "integer") return ParamType::kInteger;
  if (t == "number") return ParamType::kNumber;
  if (t == "boolean") return ParamType::kBoolean;
  if (t == "object") return ParamType::kObject;
  if (t == "array") return ParamType::kArray;
  return ParamType::kAny;
}

// The typed parameter list of a JSON schema {"type":"object","properties":{..},"required":[..]}.
Status ParseToolParameters(const Json& schema, const std::string& param, ToolSpec* spec) {
  const Json* props = Find(schema, "properties");
  if (props == nullptr) return Status::Ok();
  if (!props->is_object()) return TypeError(param + ".properties", "an object");
  for (const auto& [name, sub] : props->items()) {
    const std::string where = param + ".properties." + ShownValue(name);
    if (!sub.is_object()) return TypeError(where, "a JSON schema object");
    ToolParameter tp{.name = name, .type = ParamTypeOf(sub)};
    if (const Json* values = Find(sub, "enum")) {
      if (!values->is_array() || values->empty()) {
        return TypeError(where + ".enum", "a non-empty array");
      }
      for (const Json& v : *values) tp.enum_values.push_back(v.is_string() ? v.get<std::string>() : PythonJsonDumps(v));
    }
    spec->parameters.push_back(std::move(tp));
  }
  if (const Json* required = Find(schema, "required")) {
    if (!required->is_array()) return TypeError(param + ".required", "an array of property names");
    for (const Json& r : *required) {
      if (!r.is_string()) return TypeError(param + ".required", "an array of property names");
      for (ToolParameter& tp : spec->parameters) tp.required = tp.required || tp.name == r.get<std::string>();
    }
  }
  return Status::Ok();
}

Status ParseToolChoice(const Json& root, ChatRequest* req) {
  const Json* choice = Find(root, "tool_choice");
  if (choice == nullptr) return Status::Ok();
  ToolChoice& tc = req->tool_choice;
  if (choice->is_string()) {
    const std::string mode = choice->get<std::string>();
    if (mode == "auto") {
      tc.mode = ToolChoice::Mode::kAuto;
    } else if (mode == "none") {
      tc.mode = ToolChoice::Mode::kNone;
    } else if (mode == "required") {
      tc.mode = ToolChoice::Mode::kRequired;
    } else {
      return FieldError("tool_choice", "unknown tool_choice '" + ShownValue(mode) +
                                           "' (none, auto, required or {\"type\":\"function\",\"function\":{\"name\":...}})");
    }
  } else if (choice->is_object()) {
    const Json* fn = Find(*choice, "function");
    if (fn == nullptr || !fn->is_object()) return TypeError("tool_choice.function", "an object with a 'name'");
    OMNI_RETURN_IF_ERROR(OptString(*fn, "name", "tool_choice.function.name", &tc.name));
    if (tc.name.empty()) return FieldError("tool_choice.function.name", "the forced tool needs a name");
    tc.mode = ToolChoice::Mode::kNamed;
  } else {
    return TypeError("tool_choice", "a string or an object");
  }
  const bool needs_tool = tc.mode == ToolChoice::Mode::kRequired || tc.mode == ToolChoice::Mode::kNamed;
  if (needs_tool && req->tools.empty()) {
    return FieldError("tool_choice", "tool_choice forces a tool call but the request has no 'tools'");
  }
  if (tc.mode == ToolChoice::Mode::kNamed) {
    bool found = false;
    for (const ToolSpec& t : req->tool_specs) found = found || t.name == tc.name;
    if (!found) return FieldError("tool_choice.function.name", "tool_choice names '" + ShownValue(tc.name) + "', which is not in 'tools'");
  }
  return Status::Ok();
}

Status ParseTools(const Json& root, ChatRequest* req) {
  const Json* tools = Find(root, "tools");
  if (tools == nullptr) return Status::Ok();
  if (!tools->is_array()) return TypeError("tools", "an array");
  for (size_t i = 0; i < tools->size(); ++i) {
    const std::string p = "tools[" + std::to_string(i) + "]";
    const Json& t = (*tools)[i];
    if (!t.is_object()) return TypeError(p, "an object");
    const Json* fn = Find(t, "function");
    if (fn == nullptr || !fn->is_object()) return TypeError(p + ".function", "an object");
    ToolDefinition def;
    OMNI_RETURN_IF_ERROR(OptString(*fn, "name", p + ".function.name", &def.name));
    if (def.name.empty()) return FieldError(p + ".function.name", "a tool needs a name");
    OMNI_RETURN_IF_ERROR(OptString(*fn, "description", p + ".function.description", &def.description));
    ToolSpec spec{.name = def.name};
    if (const Json* params = Find(*fn, "parameters")) {
      if (!params->is_object()) return TypeError(p + ".function.parameters", "an object");
      def.parameters_json = PythonJsonDumps(*params);
      OMNI_RETURN_IF_ERROR(ParseToolParameters(*params, p + ".function.parameters", &spec));
    }
    for (const ToolDefinition& earlier : req->tools) {
      if (earlier.name == def.name) return FieldError(p + ".function.name", "two tools are named '" + ShownValue(def.name) + "'");
    }
    req->tools.push_back(std::move(def));
    req->tool_specs.push_back(std::move(spec));
  }
  return Status::Ok();
}

StatusOr<ChatRequest> ParseChatFields(const Json& root, MediaForm form) {
  ChatRequest req;
  OMNI_RETURN_IF_ERROR(OptString(root, "model", "model", &req.model));
  OMNI_RETURN_IF_ERROR(ParseMessages(root, form, &req));
  OMNI_RETURN_IF_ERROR(ParseTools(root, &req));
  OMNI_RETURN_IF_ERROR(ParseToolChoice(root, &req));
  if (const Json* budget = Find(root, "thinking_token_budget")) {
    int64_t b = 0;
    OMNI_RETURN_IF_ERROR(IntValue(*budget, "thinking_token_budget", 0, kMaxInt, &b));
    req.thinking_token_budget = static_cast<int>(b);
  }
  OMNI_RETURN_IF_ERROR(OptBool(root, "force_audio", "force_audio", &req.force_audio));
  const ToolChoice::Mode mode = req.tool_choice.mode;
  if (req.force_audio && (mode == ToolChoice::Mode::kNamed || mode == ToolChoice::Mode::kRequired)) {
    return FieldError("force_audio", "cannot force both a tool call and speech");
  }
  if (const Json* kw = Find(root, "chat_template_kwargs")) {
    if (!kw->is_object()) return TypeError("chat_template_kwargs", "an object");
    OMNI_RETURN_IF_ERROR(
        OptBool(*kw, "skip_reasoning", "chat_template_kwargs.skip_reasoning", &req.skip_reasoning));
  }
  OMNI_RETURN_IF_ERROR(ParseGenerationOptions(root, &req.options));
  SamplingParams& s = req.options.sampling;
  OMNI_RETURN_IF_ERROR(OptBool(root, "logprobs", "logprobs", &s.logprobs));
  OMNI_RETURN_IF_ERROR(OptInt(root, "top_logprobs", "top_logprobs", 0, kMaxTopLogprobs, &s.top_logprobs));
  if (s.top_logprobs > 0 && !s.logprobs) {
    return FieldError("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  return req;
}

// Exceptions from the JSON library become InvalidArgument here, at the edge.
template <typename F>
auto Guard(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("malformed request: ") + e.what());
  }
}

}  // namespace

const ToolParameter* ToolSpec::Find(std::string_view param) const {
  for (const ToolParameter& p : parameters) {
    if (p.name == param) return &p;
  }
  return nullptr;
}

StatusOr<ChatRequest> ParseChatRequest(std::string_view body, MediaForm media) {
  return Guard([&]() -> StatusOr<ChatRequest> {
    OMNI_ASSIGN_OR_RETURN(Json root, ParseBody(body));
    return ParseChatFields(root, media);
  });
}

StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body) {
  return Guard([&]() -> StatusOr<CompletionRequest> {
    OMNI_ASSIGN_OR_RETURN(Json root, ParseBody(body));
    CompletionRequest req;
    OMNI_RETURN_IF_ERROR(OptString(root, "model", "model", &req.model));
    const Json* prompt = Find(root, "prompt");
    if (prompt == nullptr) return FieldError("prompt", "'prompt' is required");
    // A list holding one prompt is accepted; batches of prompts are not.
    const Json* single = prompt;
    if (prompt->is_array() && prompt->size() == 1 && ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
      single = &(*prompt)[0];
    }
    if (single->is_string()) {
      req.prompt = single->get<std::string>();
    } else if (single->is_array()) {
      if (!single->empty() && (*single)[0].is_string()) {
        return FieldError("prompt", "batched prompts are not supported; send one prompt per request");
      }
      std::vector<int32_t> ids;
      OMNI_RETURN_IF_ERROR(TokenIdList(*single, "prompt", &ids));
      req.prompt = std::move(ids);
    } else {
      return TypeError("prompt", "a string or an array of token ids");
    }
    OMNI_RETURN_IF_ERROR(OptBool(root, "echo", "echo", &req.echo));
    OMNI_RETURN_IF_ERROR(ParseGenerationOptions(root, &req.options));
    int k = -1;
    OMNI_RETURN_IF_ERROR(OptInt(root, "logprobs", "logprobs", 0, kMaxTopLogprobs, &k));
    if (k >= 0) {
      req.options.sampling.logprobs = true;
      req.options.sampling.top_logprobs = k;
    }
    return req;
  });
}

StatusOr<TokenizeRequest> ParseTokenizeRequest(std::string_view body) {
  return Guard([&]() -> StatusOr<TokenizeRequest> {
    OMNI_ASSIGN_OR_RETURN(Json root, ParseBody(body));
    TokenizeRequest req;
    OMNI_RETURN_IF_ERROR(OptString(root, "model", "model", &req.model));
    if (Find(root, "messages") != nullptr) {
      OMNI_ASSIGN_OR_RETURN(ChatRequest chat, ParseChatFields(root, MediaForm::kEmbeddingObjects));
      req.chat = std::move(chat);
      return req;
    }
    const Json* prompt = Find(root, "prompt");
    if (prompt == nullptr) return FieldError("prompt", "'prompt' or 'messages' is required");
    if (!prompt->is_string()) return TypeError("prompt", "a string");
    req.prompt = prompt->get<std::string>();
    return req;
  });
}

StatusOr<DetokenizeRequest> ParseDetokenizeRequest(std::string_view body) {
  return Guard([&]() -> StatusOr<DetokenizeRequest> {
    OMNI_ASSIGN_OR_RETURN(Json root, ParseBody(body));
    DetokenizeRequest req;
    OMNI_RETURN_IF_ERROR(OptString(root, "model", "model", &req.model));
    const Json* tokens = Find(root, "tokens");
    if (tokens == nullptr) return FieldError("tokens", "'tokens' is required");
    OMNI_RETURN_IF_ERROR(TokenIdList(*tokens, "tokens", &req.tokens));
    return req;
  });
}

}  // namespace omni::openai
