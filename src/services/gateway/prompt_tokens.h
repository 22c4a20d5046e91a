// Token ids of a request's prompt, as the LLM server will compute them, for
// the precise prefix scorer: chat messages go through the same chat template,
// tokenizer (loaded from the pool's `tokenizer` model folder) and prompt
// layout (text/prompt_layout.h, the code the LLM server lays prompts out with).
//
// Media parts: with a MediaInfoSource (the gateway's `store`), each part's
// embedding object is looked up by a HEAD (media_info.h); its metadata give
// the rows and ids the server will expand the part's placeholders to, the
// mime line the server will render (mime, filename), and the key the server
// hashes those blocks with (object-sha256). Media positions hold placeholder
// ids here (the index hashes every media token as one value,
// precise_prefix_index.h) and are listed as MediaKeySpans in the server's
// MediaSpan order. The prompt ends before the medium block of the first part
// that cannot be looked up (no store, an http:// presigned URL, no such
// object, a timeout, metadata missing), or whose object lacks what a
// placeholder needs: routing is a hint, so a media part never fails a request
// here. Only the parts before that one are looked up.
//
// Parses the whole body (unlike the model peek), so it runs only for pools
// whose profile has a precise-prefix-cache-scorer. Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "services/gateway/media_info.h"
#include "services/gateway/precise_prefix_index.h"
#include "text/tokenizer.h"

namespace omni::gateway {

struct PromptTokens {
  std::vector<int32_t> token_ids;
  std::vector<MediaKeySpan> media;  // sorted by start
  bool cut_at_media = false;        // a media part could not be laid out: token_ids is a prefix
};

class PromptTokenizer {
 public:
  // Reads DIR/tokenizer.json. `media` may be null (prompts end at their first
  // media part) and must outlive the tokenizer.
  static StatusOr<std::unique_ptr<PromptTokenizer>> FromModelDir(const std::string& dir,
                                                                 MediaInfoSource* media = nullptr);
  static std::unique_ptr<PromptTokenizer> FromTokenizer(std::unique_ptr<Tokenizer> tokenizer,
                                                        MediaInfoSource* media = nullptr);

  // `look_up_media` false: no media part is looked up (no store call), so
  // the prompt ends before the first one; for callers that must not block.
  StatusOr<PromptTokens> ChatPromptTokens(std::string_view body, bool look_up_media = true) const;
  StatusOr<PromptTokens> CompletionPromptTokens(std::string_view body) const;

  // Every media token of the vocabulary (<|visionN|>, <|audioN|>, the pad
  // tokens), sorted: what the precise index hashes as one value.
  const std::vector<int32_t>& media_token_ids() const { return media_token_ids_; }

 private:
  PromptTokenizer(std::unique_ptr<Tokenizer> tokenizer, MediaInfoSource* media);

  std::unique_ptr<Tokenizer> tokenizer_;
  MediaInfoSource* media_;  // not owned; may be null
  std::vector<int32_t> media_token_ids_;
};

}  // namespace omni::gateway
