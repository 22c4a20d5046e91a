// Typed results -> OpenAI JSON (chat.completion, chat.completion.chunk,
// text_completion, usage, logprobs), the edge's output half.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "services/llm/llm_service.h"

namespace omni::llm {

std::string ChatCompletionJson(const PreparedGeneration& r, const std::vector<ChoiceResult>& choices,
                               const Usage& usage);
std::string CompletionJson(const PreparedGeneration& r, const std::vector<ChoiceResult>& choices, const Usage& usage);

// One streamed chunk for an event. `first` adds the assistant role (chat) or
// the echoed prompt (completions). Empty if the event carries nothing.
std::string ChatChunkJson(const PreparedGeneration& r, const GenerationEvent& e, bool first);
std::string CompletionChunkJson(const PreparedGeneration& r, const GenerationEvent& e, bool first);
// The final chunk with `choices: []` and the usage (stream_options.include_usage).
std::string UsageChunkJson(const PreparedGeneration& r, const Usage& usage);

std::string ModelsJson(const std::string& name, int max_model_len);
std::string TokenizeJson(const TokenizeResult& result);
std::string DetokenizeJson(const std::string& text);

}  // namespace omni::llm
