// Builds the tokenizer.json of omniserve's demo model: a small byte-level BPE
// trained on a built-in English + Korean corpus, the Qwen2-style pre-tokenizer
// regex, and every added token of the Omni vocabulary.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "text/omni_tokens.h"

namespace omni {

struct DemoTokenizerSpec {
  int num_merges = 400;                     // at most; stops early if the corpus runs out of pairs
  int num_vision_codes = kNumVisionCodes;   // <|visionN|> for N in [0, num_vision_codes)
  int num_audio_codes = kNumAudioCodes;     // <|audioN|> for N in [0, num_audio_codes)
};

// Ids: 0..255 the bytes (in byte order), then one per merge, then the added
// tokens in OmniAddedTokens() order. Same spec, same bytes.
StatusOr<std::string> MakeDemoTokenizerJson(const DemoTokenizerSpec& spec);

// The corpus the demo merges are learned from.
std::string_view DemoTrainingCorpus();

}  // namespace omni
