// Token ids of a request's prompt, as the LLM server will compute them, for
// the precise prefix scorer: chat messages go through the same chat template
// and tokenizer (loaded from the pool's `tokenizer` model folder).
//
// The prompt is cut at its first media placeholder: the server expands it to
// the media's rows, which the gateway cannot know without fetching the
// object, so only the text before the first media item is scored.
//
// Parses the whole body (unlike the model peek), so it runs only for pools
// whose profile has a precise-prefix-cache-scorer. Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/tokenizer.h"

namespace omni::gateway {

class PromptTokenizer {
 public:
  // Reads DIR/tokenizer.json.
  static StatusOr<std::unique_ptr<PromptTokenizer>> FromModelDir(const std::string& dir);

  StatusOr<std::vector<int32_t>> ChatPromptTokens(std::string_view body) const;
  StatusOr<std::vector<int32_t>> CompletionPromptTokens(std::string_view body) const;

 private:
  explicit PromptTokenizer(std::unique_ptr<Tokenizer> tokenizer) : tokenizer_(std::move(tokenizer)) {}

  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace omni::gateway
