#include "services/llm/prompt_builder.h"

#include <string>

#include "text/omni_tokens.h"
#include "text/prompt_layout.h"

namespace omni::llm {
namespace {

Status MessagesError(std::string message) { return InvalidArgument(std::move(message)).WithParam("messages"); }

const FetchedEmbedding* FindEmbedding(const std::vector<PlacedEmbedding>& all, const MediaPlaceholder& p) {
  for (const PlacedEmbedding& e : all) {
    if (e.message_index == p.message_index && e.part_index == p.part_index) return e.embedding.get();
  }
  return nullptr;
}

std::string_view MediumName(PlaceholderKind kind) {
  return kind == PlaceholderKind::kDiscreteImage || kind == PlaceholderKind::kImage ? "image"
         : kind == PlaceholderKind::kVideo                                           ? "video"
                                                                                     : "audio";
}

// An object that lacks what its placeholder needs would otherwise expand to
// nothing and the model would answer about a medium it never saw.
Status MissingTensor(const MediaPlaceholder& ph, std::string_view tensor, std::string_view what) {
  return MessagesError("the embedding object of message " + std::to_string(ph.message_index) + ", part " +
                       std::to_string(ph.part_index) + " has no '" + std::string(tensor) + "' tensor (" +
                       std::string(what) + " of the " + std::string(MediumName(ph.kind)) +
                       "); encode the medium again with an encoder that writes both");
}

Status AppendDiscrete(const Tokenizer& tokenizer, const Tensor& ids, PlaceholderKind kind,
                      std::vector<int32_t>* out) {
  Tensor c = ids.Contiguous();
  const int32_t* p = c.data<int32_t>();
  for (int64_t i = 0; i < c.numel(); ++i) {
    std::string token = kind == PlaceholderKind::kDiscreteImage ? VisionCodeToken(p[i]) : AudioCodeToken(p[i]);
    std::optional<int32_t> id = p[i] >= 0 ? tokenizer.TokenToId(token) : std::nullopt;
    if (!id) return MessagesError("discrete media id " + std::to_string(p[i]) + " has no token in this model");
    out->push_back(*id);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<EnginePrompt> BuildEnginePrompt(const Tokenizer& tokenizer, const RenderedPrompt& rendered,
                                         const std::vector<PlacedEmbedding>& embeddings, int64_t hidden_size) {
  EnginePrompt out;
  auto expand = [&](const MediaPlaceholder& ph, size_t start) -> StatusOr<PlaceholderExpansion> {
    const FetchedEmbedding* emb = FindEmbedding(embeddings, ph);
    if (emb == nullptr) return MessagesError("a media placeholder has no embedding object");
    PlaceholderExpansion expansion;
    MediaSpan span;
    span.start = static_cast<int32_t>(start);
    span.sha256 = emb->sha256;
    if (IsDiscretePlaceholder(ph.kind)) {
      if (!emb->object.ids.defined() || emb->object.ids.numel() == 0) return MissingTensor(ph, "ids", "the discrete tokens");
      OMNI_RETURN_IF_ERROR(AppendDiscrete(tokenizer, emb->object.ids, ph.kind, &expansion.token_ids));
      // The ids key their blocks by value; the span adds the object's digest
      // so KV events name the medium (media_span.h).
      span.length = static_cast<int32_t>(expansion.token_ids.size());
      span.key_only = true;
      out.media.push_back(std::move(span));
      return expansion;
    }
    const Tensor& rows = emb->object.rows;
    if (!rows.defined() || rows.dim(0) == 0) return MissingTensor(ph, "rows", "the continuous embedding");
    if (rows.dim(1) != hidden_size) {
      return MessagesError("embedding rows are " + std::to_string(rows.dim(1)) + " wide; this model's hidden size is " +
                           std::to_string(hidden_size));
    }
    const std::string_view pad = PlaceholderText(ph.kind);
    std::optional<int32_t> pad_id = tokenizer.TokenToId(pad);
    if (!pad_id) return Internal("the tokenizer has no " + std::string(pad) + " token");
    span.length = static_cast<int32_t>(rows.dim(0));
    span.rows = rows;
    expansion.token_ids.assign(static_cast<size_t>(span.length), *pad_id);
    out.media.push_back(std::move(span));
    return expansion;
  };
  OMNI_ASSIGN_OR_RETURN(PromptLayout layout, LayOutPrompt(tokenizer, rendered, expand));
  out.token_ids = std::move(layout.token_ids);
  return out;
}

}  // namespace omni::llm
