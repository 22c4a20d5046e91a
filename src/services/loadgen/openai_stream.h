// The OpenAI wire side of `omniserve bench`, without sockets: the streaming
// request body for /v1/chat/completions or /v1/completions, and a consumer of
// the SSE events that comes back, which turns them into a RequestRecord.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "net/sse.h"
#include "services/loadgen/stats.h"
#include "services/loadgen/workload.h"

namespace omni::loadgen {

enum class Endpoint { kChat, kCompletions };

std::string_view EndpointName(Endpoint endpoint);  // "chat" | "completions"
StatusOr<Endpoint> ParseEndpoint(std::string_view name);
// "/v1/chat/completions" or "/v1/completions".
std::string_view EndpointPath(Endpoint endpoint);

struct SamplingOptions {
  int max_tokens = 128;
  // vLLM's extension: keep generating past EOS so output lengths are exactly
  // max_tokens. Servers that reject unknown fields need it off.
  bool ignore_eos = true;
  std::optional<double> temperature;  // unset: the server's default
};

// A streaming request body with `stream_options.include_usage`. Chat sends
// `messages`; completions sends RenderCompletionPrompt(messages).
std::string BuildRequestBody(Endpoint endpoint, std::string_view model, const std::vector<ChatMessage>& messages,
                             const SamplingOptions& sampling);

// Consumes one response. Feed it the HTTP status, the body bytes as they
// arrive with their arrival time (seconds since the request was sent), and
// the transport's outcome; Finish() fills the record. Not thread-safe: one
// request, one thread (the client's io thread) at a time.
class StreamAccumulator {
 public:
  explicit StreamAccumulator(Endpoint endpoint) : endpoint_(endpoint) {}

  void OnStatus(int http_status) { http_status_ = http_status; }
  void OnBody(std::string_view bytes, double t_s);
  // `transport` is the client's result; `end_s` when the response ended.
  // Sets ok/error_kind/error_message, times, tokens and output_text.
  void Finish(const Status& transport, double end_s, RequestRecord* record);

  // Exposed for tests: one parsed SSE event at time t_s.
  void OnEvent(const SseEvent& event, double t_s);

 private:
  void Fail(std::string kind, std::string message);

  Endpoint endpoint_;
  SseParser parser_;
  int http_status_ = 0;
  std::string error_body_;  // first bytes of a non-200 body
  bool done_ = false;       // saw "data: [DONE]"
  std::string error_kind_;
  std::string error_message_;
  std::vector<double> token_times_;  // arrival of each non-empty content delta
  std::string text_;
  bool usage_ = false;
  bool cached_reported_ = false;
  int64_t prompt_tokens_ = 0;
  int64_t completion_tokens_ = 0;
  int64_t cached_tokens_ = 0;
};

// Error kind of a transport failure: "connect", "timeout", "cancelled", "transport".
std::string TransportErrorKind(const Status& status);

}  // namespace omni::loadgen
