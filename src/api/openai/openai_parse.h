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

// What a chat request's media parts carry.
enum class MediaForm {
  // For the LLM server: image_url, audio_url and video_url parts reference
  // an encoder's embedding object (s3://, file:// or http(s):// URLs);
  // data: URLs and input_audio parts are refused.
  kEmbeddingObjects,
  // For the orchestrator: the parts carry the media themselves, as data:,
  // http(s)://, s3:// or file:// URLs, or OpenAI's input_audio ({data:
  // base64, format}, kept as a data:audio/FORMAT;base64 URL).
  kRawMedia,
};

StatusOr<ChatRequest> ParseChatRequest(std::string_view body, MediaForm media = MediaForm::kEmbeddingObjects);
StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body);
StatusOr<TokenizeRequest> ParseTokenizeRequest(std::string_view body);
StatusOr<DetokenizeRequest> ParseDetokenizeRequest(std::string_view body);

}  // namespace omni::openai
