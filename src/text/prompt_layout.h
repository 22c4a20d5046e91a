// The token layout of a rendered chat prompt with its media expanded: the
// one piece of code that both the LLM server (services/llm/prompt_builder.h,
// which injects the media) and the gateway (services/gateway/prompt_tokens.h,
// which only predicts the server's token ids and block keys to route by)
// lay prompts out with, so the two cannot drift apart.
//
// The text between media placeholders is tokenized segment by segment (each
// placeholder is an added token, so cutting there changes no token); each
// expanding placeholder (<|DISCRETE_IMAGE_PAD|>, <|IMAGE_PAD|>,
// <|DISCRETE_AUDIO_PAD|>, <|AUDIO_PAD|>, <|VIDEO_PAD|>) is replaced by the ids
// its expander returns. Duration placeholders stay in the text.
//
// Thread-safety: pure function (the expander is called on the caller's thread).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace omni {

// What one expanding placeholder becomes.
struct PlaceholderExpansion {
  std::vector<int32_t> token_ids;
  // The prompt ends here instead: before this placeholder's medium block
  // (MediaPlaceholder::block_offset), or, when an earlier placeholder of the
  // same medium was already expanded, right after it. For a caller that can
  // lay out only a prefix (the gateway without the medium's metadata).
  bool stop = false;
};

// `start`: the position the expansion's first id will take.
using PlaceholderExpander = std::function<StatusOr<PlaceholderExpansion>(const MediaPlaceholder& ph, size_t start)>;

struct PromptLayout {
  std::vector<int32_t> token_ids;
  bool stopped = false;  // an expander asked to stop: token_ids is a prefix
};

// The text's own placeholder token for `kind` ("<|IMAGE_PAD|>", ...).
std::string_view PlaceholderText(PlaceholderKind kind);
// Whether the placeholder expands to media positions (not a duration token).
bool IsExpandingPlaceholder(PlaceholderKind kind);
// Discrete ids (<|visionN|>, <|audioN|>) rather than injected rows.
bool IsDiscretePlaceholder(PlaceholderKind kind);

// Errors: the tokenizer's, and the expander's as they are.
StatusOr<PromptLayout> LayOutPrompt(const Tokenizer& tokenizer, const RenderedPrompt& rendered,
                                    const PlaceholderExpander& expand);

}  // namespace omni
