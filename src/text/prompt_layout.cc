#include "text/prompt_layout.h"

#include <algorithm>

#include "text/omni_tokens.h"

namespace omni {

std::string_view PlaceholderText(PlaceholderKind kind) {
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

bool IsDiscretePlaceholder(PlaceholderKind kind) {
  return kind == PlaceholderKind::kDiscreteImage || kind == PlaceholderKind::kDiscreteAudio;
}

bool IsExpandingPlaceholder(PlaceholderKind kind) {
  return IsDiscretePlaceholder(kind) || kind == PlaceholderKind::kImage || kind == PlaceholderKind::kAudio ||
         kind == PlaceholderKind::kVideo;
}

StatusOr<PromptLayout> LayOutPrompt(const Tokenizer& tokenizer, const RenderedPrompt& rendered,
                                    const PlaceholderExpander& expand) {
  const std::string_view text = rendered.text;
  PromptLayout out;
  auto append_text = [&](size_t from, size_t to) -> Status {
    if (to <= from) return Status::Ok();
    OMNI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.Encode(text.substr(from, to - from)));
    out.token_ids.insert(out.token_ids.end(), ids.begin(), ids.end());
    return Status::Ok();
  };
  size_t pos = 0;
  for (const MediaPlaceholder& ph : rendered.placeholders) {
    if (!IsExpandingPlaceholder(ph.kind)) continue;  // duration tokens stay as text
    const size_t before_text = out.token_ids.size();
    OMNI_RETURN_IF_ERROR(append_text(pos, ph.byte_offset));
    OMNI_ASSIGN_OR_RETURN(PlaceholderExpansion expansion, expand(ph, out.token_ids.size()));
    if (expansion.stop) {
      // Only the text before the medium's block: its mime line already
      // names the medium. An earlier placeholder of the same medium stays.
      out.token_ids.resize(before_text);
      OMNI_RETURN_IF_ERROR(append_text(pos, std::clamp(ph.block_offset, pos, ph.byte_offset)));
      out.stopped = true;
      return out;
    }
    out.token_ids.insert(out.token_ids.end(), expansion.token_ids.begin(), expansion.token_ids.end());
    pos = ph.byte_offset + PlaceholderText(ph.kind).size();
  }
  OMNI_RETURN_IF_ERROR(append_text(pos, text.size()));
  return out;
}

}  // namespace omni
