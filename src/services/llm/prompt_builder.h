// Rendered chat prompt + fetched embedding objects -> engine prompt: token
// ids with every media placeholder expanded, and the MediaSpans to inject.
//
//   <|DISCRETE_IMAGE_PAD|> -> the object's N discrete ids as the token ids
//       <|visionN|> (discrete audio: <|audioN|>). Embedding those tokens
//       through the LLM's table is exactly "the discrete ids through the
//       model's own embedding table", and the prefix cache keys them by
//       value; a key-only MediaSpan{start, N, sha256 of the object} adds the
//       object's digest to those blocks' keys, so KV events name the medium
//       (the gateway, which knows the object's metadata but not its ids,
//       routes by it).
//   <|IMAGE_PAD|> / <|AUDIO_PAD|> / <|VIDEO_PAD|> -> N copies of the pad id
//       plus a MediaSpan{start, N, sha256 of the object, rows [N, hidden]}.
//   An object without the ids (or rows) a placeholder needs is an error.
// The layout itself (text segments, expansion order) is text/prompt_layout.h,
// which the gateway shares.
//
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <vector>

#include "core/status.h"
#include "engine/media_span.h"
#include "services/llm/embedding_fetcher.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace omni::llm {

struct EnginePrompt {
  std::vector<int32_t> token_ids;
  std::vector<MediaSpan> media;  // sorted by start
};

// The fetched object of each media part, addressed like RenderChatPrompt's
// placeholders.
struct PlacedEmbedding {
  int message_index = 0;
  int part_index = 0;
  std::shared_ptr<const FetchedEmbedding> embedding;
};

// `hidden_size`: the width continuous rows must have. InvalidArgument (param
// "messages") for rows of the wrong width, discrete ids without a token, or a
// placeholder with no object.
StatusOr<EnginePrompt> BuildEnginePrompt(const Tokenizer& tokenizer, const RenderedPrompt& rendered,
                                         const std::vector<PlacedEmbedding>& embeddings, int64_t hidden_size);

}  // namespace omni::llm
