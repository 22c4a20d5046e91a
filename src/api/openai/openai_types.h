// Typed OpenAI requests of the LLM server, produced once at the HTTP edge
// (openai_parse.h) and consumed by LlmService. Nothing below the edge sees
// JSON. docs/LLM_SERVER.md describes the wire shapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <variant>
#include <vector>

#include "engine/sampler.h"
#include "text/chat_template.h"

namespace omni::openai {

// The tool through which the Omni model draws, and its image argument
// (spec/omni-model.md, "What the model emits for media").
inline constexpr std::string_view kImageTool = "t2i_model_generation";
inline constexpr std::string_view kImageToolParam = "discrete_image_token";

// Options shared by chat and completions.
struct GenerationOptions {
  SamplingParams sampling;        // validated by SamplingParams::Validate in the service
  bool max_tokens_set = false;    // absent: up to the context length (as vLLM)
  std::vector<std::string> stop;  // stop strings, matched on the detokenized text
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  std::string cache_salt;         // requests with different salts never share cached KV
};

// A chat content part's media: for the LLM server an embedding object (an
// encoder's output), for the orchestrator the medium itself.
struct MediaPart {
  int message_index = 0;
  int part_index = 0;
  ContentKind kind = ContentKind::kImage;
  std::string part_type;  // as sent: "image_url", "audio_url", "video_url", "input_audio"
  // s3://bucket/key, file:///path or an http:// presigned URL; raw media
  // (MediaForm::kRawMedia) may also be a data: URL.
  std::string url;
};

// A tool parameter's JSON-schema type, which types its argument values
// (tool-call parsing) and constrains them (forced tool calls).
enum class ParamType { kString, kInteger, kNumber, kBoolean, kObject, kArray, kAny };

struct ToolParameter {
  std::string name;
  ParamType type = ParamType::kAny;
  // "enum": each allowed value as it is written in <arg_value> (a string
  // verbatim, anything else as JSON text).
  std::vector<std::string> enum_values;
  bool required = false;
};

// What the server needs of a tool beyond its prompt rendering.
struct ToolSpec {
  std::string name;
  std::vector<ToolParameter> parameters;  // in the schema's "properties" order
  const ToolParameter* Find(std::string_view param) const;
};

struct ToolChoice {
  enum class Mode { kAuto, kNone, kRequired, kNamed };
  Mode mode = Mode::kAuto;
  std::string name;  // kNamed
};

struct ChatRequest {
  std::string model;  // empty: the served model
  std::vector<ChatMessage> messages;
  std::vector<ToolDefinition> tools;  // the prompt's tool listing
  std::vector<ToolSpec> tool_specs;   // [tools.size()], the same tools typed
  ToolChoice tool_choice;
  std::vector<MediaPart> media;  // one per media part of `messages`, in order
  bool skip_reasoning = false;   // chat_template_kwargs.skip_reasoning
  // OmniServe's extra: the thought is closed after this many tokens.
  std::optional<int> thinking_token_budget;
  // omniserve's extra (the orchestrator's audio output): after the thought
  // the answer is a spoken block, returned as raw text in content.
  bool force_audio = false;
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
