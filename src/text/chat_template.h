// The Omni prompt layout (spec/omni-model.md), rendered from typed messages.
//
// Follows OmniServe's track_b chat_template.jinja (the template the model was
// served with) byte for byte: system and tools block, user turns whose parts
// are joined by "\n", media blocks with mime lines, assistant turns with
// <think> for the turns after the last user message, tool calls as
// <tool_call>name\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>,
// consecutive tool results in one "tool" turn as <tool_response> blocks, and
// the generation prompt "<|im_start|>assistant\n<think>\n" (plus the empty
// thought "\n</think>\n\n" with skip_reasoning). docs/TOKENIZER.md shows it.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace omni {

enum class Role { kSystem, kUser, kAssistant, kTool };

enum class ContentKind { kText, kImage, kAudio, kVideo };

struct ContentPart {
  ContentKind kind = ContentKind::kText;
  std::string text;  // kText only
  // Media only: the mime line's "type" and "filename". Empty means the
  // template's defaults (image/jpeg image.jpg, audio/mpeg user_query.wav,
  // video/mp4 video.mp4).
  std::string mime_type;
  std::string filename;
  // Audio and video only: the duration hint's value (MediaDurationText).
  // Empty: the <|audio_meta_duration|> / <|video_meta_duration|> token, as
  // OmniServe leaves it.
  std::string duration;
};

// The duration hint's value for a medium of `seconds` (as the encoder
// measured it): seconds with two decimals, "3.00". The LLM server and the
// gateway both render it from the embedding object's "seconds" metadata, so
// they lay out the same tokens. Empty for a value that is not a finite,
// non-negative number.
std::string MediaDurationText(std::string_view seconds);

struct ToolCallArgument {
  std::string key;
  // Rendered verbatim: a string argument as is, any other JSON value as its
  // JSON text (the template's `v | tojson if v is not string else v`).
  std::string value;
};

struct ToolCall {
  std::string id;
  std::string name;
  std::vector<ToolCallArgument> arguments;  // in the request's key order
};

struct ChatMessage {
  Role role = Role::kUser;
  std::vector<ContentPart> parts;  // media only in user messages
  // Assistant only. When unset, a "...</think>" prefix of the text is taken
  // as the reasoning, as the template does.
  bool has_reasoning_content = false;
  std::string reasoning_content;
  std::vector<ToolCall> tool_calls;  // assistant only
  std::string tool_call_id;          // tool only (not rendered; kept for the edge)
  std::string name;                  // tool only: the function whose result this is
};

struct ToolDefinition {
  std::string name;
  std::string description;  // omitted from the listing when empty
  // The JSON schema object, inserted verbatim. To match the training format
  // it should be serialized like Python's json.dumps (", " and ": ").
  std::string parameters_json = "{}";
};

struct ChatTemplateOptions {
  bool add_generation_prompt = true;
  bool skip_reasoning = false;  // chat_template_kwargs.skip_reasoning
};

// Where a media placeholder token sits in the rendered text, so the engine can
// expand it to the media's rows after tokenization.
enum class PlaceholderKind {
  kDiscreteImage,  // <|DISCRETE_IMAGE_PAD|> -> 729 rows
  kImage,          // <|IMAGE_PAD|> -> N continuous rows
  kDiscreteAudio,  // <|DISCRETE_AUDIO_PAD|> -> T rows
  kAudio,          // <|AUDIO_PAD|> -> T rows
  kVideo,          // <|VIDEO_PAD|>
  kAudioDuration,  // <|audio_meta_duration|> inside the duration hint
  kVideoDuration,  // <|video_meta_duration|>
};

struct MediaPlaceholder {
  PlaceholderKind kind;
  size_t byte_offset = 0;   // of the token's text in RenderedPrompt::text
  // Where the medium's block (its mime line) begins in the text: the text
  // before it does not depend on the medium at all.
  size_t block_offset = 0;
  int media_index = 0;      // per media kind, in prompt order: image_00 is 0
  int message_index = 0;
  int part_index = 0;
};

struct RenderedPrompt {
  std::string text;  // tokenize with special tokens recognised
  std::vector<MediaPlaceholder> placeholders;  // in text order
};

// Fails with kInvalidArgument for an empty conversation, media outside user
// messages, tool calls outside assistant messages, or an empty tool name.
StatusOr<RenderedPrompt> RenderChatPrompt(std::span<const ChatMessage> messages,
                                          std::span<const ToolDefinition> tools,
                                          const ChatTemplateOptions& options);

std::string_view RoleName(Role role);

}  // namespace omni
