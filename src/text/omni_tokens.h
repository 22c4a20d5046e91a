// The added tokens of the Omni model's vocabulary (spec/omni-model.md and
// OmniServe's chat template), shared by the demo tokenizer and the template.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace omni {

inline constexpr std::string_view kImStart = "<|im_start|>";
inline constexpr std::string_view kImEnd = "<|im_end|>";
inline constexpr std::string_view kEndOfText = "<|endoftext|>";
inline constexpr std::string_view kThinkStart = "<think>";
inline constexpr std::string_view kThinkEnd = "</think>";
inline constexpr std::string_view kToolCallStart = "<tool_call>";
inline constexpr std::string_view kToolCallEnd = "</tool_call>";
inline constexpr std::string_view kArgKeyStart = "<arg_key>";
inline constexpr std::string_view kArgKeyEnd = "</arg_key>";
inline constexpr std::string_view kArgValueStart = "<arg_value>";
inline constexpr std::string_view kArgValueEnd = "</arg_value>";
inline constexpr std::string_view kMimeStart = "<|mime_start|>";
inline constexpr std::string_view kMimeEnd = "<|mime_end|>";
inline constexpr std::string_view kDiscreteImageStart = "<|discrete_image_start|>";
inline constexpr std::string_view kDiscreteImageEnd = "<|discrete_image_end|>";
inline constexpr std::string_view kDiscreteImagePad = "<|DISCRETE_IMAGE_PAD|>";
inline constexpr std::string_view kImageStart = "<|image_start|>";
inline constexpr std::string_view kImageEnd = "<|image_end|>";
inline constexpr std::string_view kImagePad = "<|IMAGE_PAD|>";
inline constexpr std::string_view kDiscreteAudioStart = "<|discrete_audio_start|>";
inline constexpr std::string_view kDiscreteAudioEnd = "<|discrete_audio_end|>";
inline constexpr std::string_view kDiscreteAudioPad = "<|DISCRETE_AUDIO_PAD|>";
inline constexpr std::string_view kAudioStart = "<|audio_start|>";
inline constexpr std::string_view kAudioEnd = "<|audio_end|>";
inline constexpr std::string_view kAudioPad = "<|AUDIO_PAD|>";
inline constexpr std::string_view kVideoStart = "<|video_start|>";
inline constexpr std::string_view kVideoEnd = "<|video_end|>";
inline constexpr std::string_view kVideoPad = "<|VIDEO_PAD|>";
// OmniServe's template (track_b) adds a duration hint line before audio and
// video; the engine replaces the meta token with the clip's duration.
inline constexpr std::string_view kAudioAuxStart = "<|audio_aux_start|>";
inline constexpr std::string_view kAudioAuxEnd = "<|audio_aux_end|>";
inline constexpr std::string_view kAudioMetaDuration = "<|audio_meta_duration|>";
inline constexpr std::string_view kVideoAuxStart = "<|video_aux_start|>";
inline constexpr std::string_view kVideoAuxEnd = "<|video_aux_end|>";
inline constexpr std::string_view kVideoMetaDuration = "<|video_meta_duration|>";
inline constexpr std::string_view kVisionToken = "<|vision_token|>";
inline constexpr std::string_view kVisionEol = "<|vision_eol|>";
inline constexpr std::string_view kVisionEof = "<|vision_eof|>";
inline constexpr std::string_view kSpeakerInfoStart = "<speaker_info>";
inline constexpr std::string_view kSpeakerInfoEnd = "</speaker_info>";

inline constexpr int kNumVisionCodes = 65536;  // <|vision0|> .. <|vision65535|>
inline constexpr int kNumAudioCodes = 6561;    // <|audio0|> .. <|audio6560|> (3^8 FSQ codes)

// "W:H" of every <|vision_ratio_W:H|> token.
const std::vector<std::string_view>& VisionRatios();

std::string VisionCodeToken(int code);  // "<|vision12|>"
std::string AudioCodeToken(int code);   // "<|audio12|>"

struct OmniAddedToken {
  std::string content;
  // Special tokens are dropped by skip_special_tokens. The chat structure and
  // input placeholders are special; what the model writes for tools, thought,
  // images and speech (<think>, <tool_call>, <|visionN|>, <|audioN|>, ...) is
  // not, so a decode with skip_special_tokens still shows it to the parsers.
  bool special = false;
};

// Every added token in a fixed order: structure and media tokens, ratios,
// then the vision codes and the audio codes.
std::vector<OmniAddedToken> OmniAddedTokens(int num_vision_codes = kNumVisionCodes,
                                            int num_audio_codes = kNumAudioCodes);

}  // namespace omni
