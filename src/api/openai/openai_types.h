// Typed OpenAI requests of the LLM server, produced once at the HTTP edge
// (openai_parse.h) and consumed by LlmService. Nothing below the edge sees
// JSON. docs/LLM_SERVER.md describes the wire shapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/sampler.h"
#include "text/chat_template.h"

namespace omni::openai {

// Options shared by chat and completions.
struct GenerationOptions {
  SamplingParams sampling;        // validated by SamplingParams::Validate in the service
  bool max_tokens_set = false;    // absent: up to the context length (as vLLM)
  std::vector<std::string> stop;  // stop strings, matched on the detokenized text
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
};

// A chat content part that references an embedding object (an encoder's
// output) instead of carrying media bytes.
struct MediaPart {
  int message_index = 0;
  int part_index = 0;
  ContentKind kind = ContentKind::kImage;
  std::string url;  // s3://bucket/key, file:///path or an http:// presigned URL
};

struct ChatRequest {
  std::string model;  // empty: the served model
  std::vector<ChatMessage> messages;
  std::vector<ToolDefinition> tools;
  std::vector<MediaPart> media;  // one per media part of `messages`, in order
  bool skip_reasoning = false;   // chat_template_kwargs.skip_reasoning
  GenerationOptions options;
};

struct CompletionRequest {
  std::string model;
  std::variant<std::string, std::vector<int32_t>> prompt;
  bool echo = false;
  GenerationOptions options;
};

// vLLM's POST /tokenize: either a prompt or chat messages.
struct TokenizeRequest {
  std::string model;
  std::optional<std::string> prompt;
  std::optional<ChatRequest> chat;  // set when "messages" was given
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};

}  // namespace omni::openai
