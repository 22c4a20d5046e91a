#include "text/omni_tokens.h"

namespace omni {

const std::vector<std::string_view>& VisionRatios() {
  static const std::vector<std::string_view> ratios = {"1:1", "1:2", "2:1", "3:4",  "4:3",  "3:5", "5:3",
                                                       "4:5", "5:4", "6:9", "9:6", "9:16", "16:9"};
  return ratios;
}

std::string VisionCodeToken(int code) { return "<|vision" + std::to_string(code) + "|>"; }
std::string AudioCodeToken(int code) { return "<|audio" + std::to_string(code) + "|>"; }

std::vector<OmniAddedToken> OmniAddedTokens(int num_vision_codes, int num_audio_codes) {
  std::vector<OmniAddedToken> tokens;
  auto add = [&](std::string_view content, bool special) { tokens.push_back({std::string(content), special}); };
  for (std::string_view t : {kEndOfText, kImStart, kImEnd}) add(t, true);
  for (std::string_view t : {kThinkStart, kThinkEnd, kToolCallStart, kToolCallEnd, kArgKeyStart, kArgKeyEnd,
                             kArgValueStart, kArgValueEnd}) {
    add(t, false);
  }
  for (std::string_view t : {kMimeStart, kMimeEnd}) add(t, true);
  add(kDiscreteImageStart, false);
  add(kDiscreteImageEnd, false);
  for (std::string_view t : {kDiscreteImagePad, kImageStart, kImageEnd, kImagePad}) add(t, true);
  for (std::string_view t : {kDiscreteAudioStart, kDiscreteAudioEnd, kDiscreteAudioPad, kAudioStart, kAudioEnd,
                             kAudioPad, kVideoStart, kVideoEnd, kVideoPad, kAudioAuxStart, kAudioAuxEnd,
                             kAudioMetaDuration, kVideoAuxStart, kVideoAuxEnd, kVideoMetaDuration}) {
    add(t, true);
  }
  for (std::string_view r : VisionRatios()) add("<|vision_ratio_" + std::string(r) + "|>", false);
  for (std::string_view t : {kVisionToken, kVisionEol, kVisionEof, kSpeakerInfoStart, kSpeakerInfoEnd}) {
    add(t, false);
  }
  for (int i = 0; i < num_vision_codes; ++i) add(VisionCodeToken(i), false);
  for (int i = 0; i < num_audio_codes; ++i) add(AudioCodeToken(i), false);
  return tokens;
}

}  // namespace omni
