#include "services/llm/prompt_builder.h"

#include <string>

#include "text/omni_tokens.h"

namespace omni::llm {
namespace {

Status MessagesError(std::string message) { return InvalidArgument(std::move(message)).WithParam("messages"); }

std::string_view PadText(PlaceholderKind kind) {
  switch (kind) {
    case PlaceholderKind::kDiscreteImage: return kDiscreteImagePad;
    case PlaceholderKind::kImage: return kImagePad;
    case PlaceholderKind::kDiscreteAudio: return kDiscreteAudioPad;
    case PlaceholderKind::kAudio: return kAudioPad;
    case PlaceholderKind::kVideo: return kVideoPad;
    case PlaceholderKind::kAudioDuration: return kAudioMetaDuration;
    case PlaceholderKind::kVideoDuration: return kVideoMetaDuration;
  }
  return {};
}

bool IsDiscrete(PlaceholderKind k) {
  return k == PlaceholderKind::kDiscreteImage || k == PlaceholderKind::kDiscreteAudio;
}
bool IsContinuous(PlaceholderKind k) {
  return k == PlaceholderKind::kImage || k == PlaceholderKind::kAudio || k == PlaceholderKind::kVideo;
}

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
  size_t pos = 0;
  for (const MediaPlaceholder& ph : rendered.placeholders) {
    if (!IsDiscrete(ph.kind) && !IsContinuous(ph.kind)) continue;  // duration tokens stay as text
    const std::string_view pad = PadText(ph.kind);
    OMNI_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                          tokenizer.Encode(std::string_view(rendered.text).substr(pos, ph.byte_offset - pos)));
    out.token_ids.insert(out.token_ids.end(), ids.begin(), ids.end());
    pos = ph.byte_offset + pad.size();
    const FetchedEmbedding* emb = FindEmbedding(embeddings, ph);
    if (emb == nullptr) return MessagesError("a media placeholder has no embedding object");
    if (IsDiscrete(ph.kind)) {
      if (!emb->object.ids.defined() || emb->object.ids.numel() == 0) return MissingTensor(ph, "ids", "the discrete tokens");
      OMNI_RETURN_IF_ERROR(AppendDiscrete(tokenizer, emb->object.ids, ph.kind, &out.token_ids));
      continue;
    }
    const Tensor& rows = emb->object.rows;
    if (!rows.defined() || rows.dim(0) == 0) return MissingTensor(ph, "rows", "the continuous embedding");
    if (rows.dim(1) != hidden_size) {
      return MessagesError("embedding rows are " + std::to_string(rows.dim(1)) + " wide; this model's hidden size is " +
                           std::to_string(hidden_size));
    }
    std::optional<int32_t> pad_id = tokenizer.TokenToId(pad);
    if (!pad_id) return Internal("the tokenizer has no " + std::string(pad) + " token");
    MediaSpan span;
    span.start = static_cast<int32_t>(out.token_ids.size());
    span.length = static_cast<int32_t>(rows.dim(0));
    span.sha256 = emb->sha256;
    span.rows = rows;
    out.token_ids.insert(out.token_ids.end(), static_cast<size_t>(span.length), *pad_id);
    out.media.push_back(std::move(span));
  }
  OMNI_ASSIGN_OR_RETURN(std::vector<int32_t> tail, tokenizer.Encode(std::string_view(rendered.text).substr(pos)));
  out.token_ids.insert(out.token_ids.end(), tail.begin(), tail.end());
  return out;
}

}  // namespace omni::llm
