#include "services/loadgen/openai_stream.h"

#include <nlohmann/json.hpp>

namespace omni::loadgen {
namespace {

using nlohmann::json;

constexpr size_t kMaxErrorBody = 2048;

// The text of one streamed choice: chat puts it in delta.content (and, for
// reasoning models, delta.reasoning_content), completions in text.
struct Delta {
  std::string content;  // what the answer says
  bool has_tokens = false;  // any content or reasoning text arrived
};

Delta ReadDelta(Endpoint endpoint, const json& choice) {
  Delta d;
  auto take = [](const json& obj, const char* key) -> std::string {
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (endpoint == Endpoint::kCompletions) {
    d.content = take(choice, "text");
    d.has_tokens = !d.content.empty();
    return d;
  }
  auto delta = choice.find("delta");
  if (delta == choice.end() || !delta->is_object()) return d;
  d.content = take(*delta, "content");
  d.has_tokens = !d.content.empty() || !take(*delta, "reasoning_content").empty();
  return d;
}

int64_t IntOr(const json& obj, const char* key, int64_t fallback) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

}  // namespace

std::string_view EndpointName(Endpoint endpoint) {
  return endpoint == Endpoint::kChat ? "chat" : "completions";
}

StatusOr<Endpoint> ParseEndpoint(std::string_view name) {
  if (name == "chat") return Endpoint::kChat;
  if (name == "completions") return Endpoint::kCompletions;
  return InvalidArgument("unknown endpoint '" + std::string(name) + "' (chat|completions)");
}

std::string_view EndpointPath(Endpoint endpoint) {
  return endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
}

std::string BuildRequestBody(Endpoint endpoint, std::string_view model, const std::vector<ChatMessage>& messages,
                             const SamplingOptions& sampling) {
  json body = {{"model", model},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"max_tokens", sampling.max_tokens}};
  if (endpoint == Endpoint::kChat) {
    json list = json::array();
    for (const auto& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(list);
  } else {
    body["prompt"] = RenderCompletionPrompt(messages);
  }
  if (sampling.ignore_eos) body["ignore_eos"] = true;
  if (sampling.temperature) body["temperature"] = *sampling.temperature;
  return body.dump();
}

std::string TransportErrorKind(const Status& status) {
  switch (status.code()) {
    case StatusCode::kUnavailable: return "connect";
    case StatusCode::kDeadlineExceeded: return "timeout";
    case StatusCode::kCancelled: return "cancelled";
    default: return "transport";
  }
}

void StreamAccumulator::Fail(std::string kind, std::string message) {
  if (!error_kind_.empty()) return;  // the first failure explains the rest
  error_kind_ = std::move(kind);
  error_message_ = std::move(message);
}

void StreamAccumulator::OnBody(std::string_view bytes, double t_s) {
  if (http_status_ != 200) {
    if (error_body_.size() < kMaxErrorBody) error_body_.append(bytes.substr(0, kMaxErrorBody - error_body_.size()));
    return;
  }
  parser_.Feed(bytes, [&](SseEvent&& e) { OnEvent(e, t_s); });
}

void StreamAccumulator::OnEvent(const SseEvent& event, double t_s) {
  if (event.data == "[DONE]") {
    done_ = true;
    return;
  }
  if (event.data.empty()) return;
  json chunk = json::parse(event.data, nullptr, /*allow_exceptions=*/false);
  if (chunk.is_discarded() || !chunk.is_object()) {
    Fail("bad_response", "stream chunk is not a JSON object: " + event.data.substr(0, 200));
    return;
  }
  if (auto err = chunk.find("error"); err != chunk.end() && !err->is_null()) {
    std::string msg = err->is_object() && err->contains("message") && (*err)["message"].is_string()
                          ? (*err)["message"].get<std::string>()
                          : err->dump();
    Fail("stream_error", msg);
    return;
  }
  if (auto choices = chunk.find("choices"); choices != chunk.end() && choices->is_array() && !choices->empty()) {
    // Benchmarks send n = 1; only the first choice is read.
    Delta d = ReadDelta(endpoint_, (*choices)[0]);
    if (d.has_tokens) token_times_.push_back(t_s);
    text_ += d.content;
  }
  if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
    usage_ = true;
    prompt_tokens_ = IntOr(*usage, "prompt_tokens", 0);
    completion_tokens_ = IntOr(*usage, "completion_tokens", 0);
    auto details = usage->find("prompt_tokens_details");
    if (details != usage->end() && details->is_object() && details->contains("cached_tokens")) {
      cached_reported_ = true;
      cached_tokens_ = IntOr(*details, "cached_tokens", 0);
    }
  }
}

void StreamAccumulator::Finish(const Status& transport, double end_s, RequestRecord* r) {
  if (!transport.ok()) {
    Fail(TransportErrorKind(transport), transport.ToString());
  } else if (http_status_ != 200) {
    Fail("http_" + std::to_string(http_status_), error_body_);
  } else if (!done_) {
    Fail("truncated", "the stream ended without data: [DONE]");
  }
  r->ok = error_kind_.empty();
  r->error_kind = error_kind_;
  r->error_message = error_message_;
  r->e2e_s = end_s;
  r->ttft_s = token_times_.empty() ? 0 : token_times_.front();
  r->itl_s.clear();
  for (size_t i = 1; i < token_times_.size(); ++i) r->itl_s.push_back(token_times_[i] - token_times_[i - 1]);
  r->usage_reported = usage_;
  r->cached_tokens_reported = cached_reported_;
  r->prompt_tokens = prompt_tokens_;
  r->completion_tokens = usage_ ? completion_tokens_ : static_cast<int64_t>(token_times_.size());
  r->cached_tokens = cached_tokens_;
  r->output_text = std::move(text_);
}

}  // namespace omni::loadgen
