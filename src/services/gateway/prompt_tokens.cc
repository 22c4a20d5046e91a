#include "services/gateway/prompt_tokens.h"

#include <algorithm>
#include <optional>
#include <variant>

#include "api/openai/openai_parse.h"
#include "text/chat_template.h"
#include "text/omni_tokens.h"
#include "text/prompt_layout.h"

namespace omni::gateway {
namespace {

constexpr PlaceholderKind kExpandingKinds[] = {PlaceholderKind::kDiscreteImage, PlaceholderKind::kImage,
                                               PlaceholderKind::kDiscreteAudio, PlaceholderKind::kAudio,
                                               PlaceholderKind::kVideo};

// The object behind one media part, once looked up.
struct PartInfo {
  int message_index = 0;
  int part_index = 0;
  MediaObjectInfo info;
};

const MediaObjectInfo* FindInfo(const std::vector<PartInfo>& parts, const MediaPlaceholder& ph) {
  for (const PartInfo& p : parts) {
    if (p.message_index == ph.message_index && p.part_index == ph.part_index) return &p.info;
  }
  return nullptr;
}

}  // namespace

PromptTokenizer::PromptTokenizer(std::unique_ptr<Tokenizer> tokenizer, MediaInfoSource* media)
    : tokenizer_(std::move(tokenizer)), media_(media) {
  auto add = [&](std::string_view token) {
    if (std::optional<int32_t> id = tokenizer_->TokenToId(token)) media_token_ids_.push_back(*id);
  };
  for (PlaceholderKind kind : kExpandingKinds) add(PlaceholderText(kind));
  for (int i = 0; i < kNumVisionCodes; ++i) add(VisionCodeToken(i));
  for (int i = 0; i < kNumAudioCodes; ++i) add(AudioCodeToken(i));
  std::sort(media_token_ids_.begin(), media_token_ids_.end());
  media_token_ids_.erase(std::unique(media_token_ids_.begin(), media_token_ids_.end()), media_token_ids_.end());
}

StatusOr<std::unique_ptr<PromptTokenizer>> PromptTokenizer::FromModelDir(const std::string& dir,
                                                                        MediaInfoSource* media) {
  OMNI_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::FromFile(dir + "/tokenizer.json"));
  return FromTokenizer(std::move(tokenizer), media);
}

std::unique_ptr<PromptTokenizer> PromptTokenizer::FromTokenizer(std::unique_ptr<Tokenizer> tokenizer,
                                                                MediaInfoSource* media) {
  return std::unique_ptr<PromptTokenizer>(new PromptTokenizer(std::move(tokenizer), media));
}

StatusOr<PromptTokens> PromptTokenizer::ChatPromptTokens(std::string_view body, bool look_up_media) const {
  OMNI_ASSIGN_OR_RETURN(openai::ChatRequest request, openai::ParseChatRequest(body));
  // Look the parts up in order, up to the first that cannot be: the prompt
  // ends before it anyway. The mime line renders what the object says, as
  // the LLM server renders it.
  std::vector<PartInfo> parts;
  for (const openai::MediaPart& part : request.media) {
    if (media_ == nullptr || !look_up_media) break;
    StatusOr<MediaObjectInfo> info = media_->Lookup(part.url);
    if (!info.ok()) break;
    if (part.message_index >= 0 && part.message_index < static_cast<int>(request.messages.size())) {
      auto& content = request.messages[part.message_index].parts;
      if (part.part_index >= 0 && part.part_index < static_cast<int>(content.size())) {
        if (!info->mime.empty()) content[part.part_index].mime_type = info->mime;
        if (!info->filename.empty()) content[part.part_index].filename = info->filename;
        content[part.part_index].duration = info->duration;
      }
    }
    parts.push_back({part.message_index, part.part_index, std::move(info).value()});
  }
  OMNI_ASSIGN_OR_RETURN(
      RenderedPrompt rendered,
      RenderChatPrompt(request.messages, request.tools,
                       ChatTemplateOptions{.add_generation_prompt = true, .skip_reasoning = request.skip_reasoning}));
  PromptTokens out;
  auto expand = [&](const MediaPlaceholder& ph, size_t start) -> StatusOr<PlaceholderExpansion> {
    PlaceholderExpansion expansion;
    const MediaObjectInfo* info = FindInfo(parts, ph);
    const int64_t n = info == nullptr ? 0 : IsDiscretePlaceholder(ph.kind) ? info->ids : info->rows;
    const std::optional<int32_t> pad = tokenizer_->TokenToId(PlaceholderText(ph.kind));
    if (n <= 0 || !pad) {
      expansion.stop = true;  // the server would answer 400, or the gateway cannot tell
      return expansion;
    }
    expansion.token_ids.assign(static_cast<size_t>(n), *pad);
    out.media.push_back(MediaKeySpan{static_cast<int32_t>(start), static_cast<int32_t>(n), info->object_sha256});
    return expansion;
  };
  OMNI_ASSIGN_OR_RETURN(PromptLayout layout, LayOutPrompt(*tokenizer_, rendered, expand));
  out.token_ids = std::move(layout.token_ids);
  out.cut_at_media = layout.stopped;
  return out;
}

StatusOr<PromptTokens> PromptTokenizer::CompletionPromptTokens(std::string_view body) const {
  OMNI_ASSIGN_OR_RETURN(openai::CompletionRequest request, openai::ParseCompletionRequest(body));
  PromptTokens out;
  if (const auto* ids = std::get_if<std::vector<int32_t>>(&request.prompt)) {
    out.token_ids = *ids;
  } else {
    OMNI_ASSIGN_OR_RETURN(out.token_ids, tokenizer_->Encode(std::get<std::string>(request.prompt)));
  }
  return out;
}

}  // namespace omni::gateway
