// JSON -> typed OpenAI requests, once, at the HTTP edge. Every malformed body,
// wrong type or out-of-range value is InvalidArgument with `param` naming the
// field (e.g. "messages[1].content[0].image_url.url", "temperature").
// Sampling ranges are checked later by SamplingParams::Validate, which also
// names the field.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "core/status.h"
#include "api/openai/openai_types.h"

namespace omni::openai {

StatusOr<ChatRequest> ParseChatRequest(std::string_view body);
StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body);
StatusOr<TokenizeRequest> ParseTokenizeRequest(std::string_view body);
StatusOr<DetokenizeRequest> ParseDetokenizeRequest(std::string_view body);

}  // namespace omni::openai
