// The spoken part of an LLM answer, taken out of its text. With
// `force_audio` the LLM answers (docs/LLM_SERVER.md, "Speech"):
//
//   <assistant_transcript>Hello there.</assistant_transcript>
//   <audio_decoder_call><speaker_info>{}</speaker_info><discrete_audio>
//   <|audio12|><|audio4051|>...</discrete_audio></audio_decoder_call>
//
// SpeechTextScrubber reads that text in pieces (stream deltas) and splits
// it: transcript text (inside <assistant_transcript>, and any text outside
// every tag) is handed back to pass on; the units of every <|audioN|> are
// collected; <speaker_info> JSON is kept; <user_transcript> blocks and the
// tags themselves are dropped. Text that may be the start of a tag or unit
// is held back until it is known, and a tag or unit that removing another
// would form from the text around it is removed too, so no tag or unit ever
// reaches a client. A unit token of more than 5 digits is dropped.
//
// Thread-safety: not thread-safe (one per choice).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace omni::orchestrator {

class SpeechTextScrubber {
 public:
  struct Out {
    std::string transcript;        // text to pass on
    std::vector<int32_t> units;    // units found in this piece, in order
  };
  Out Push(std::string_view piece);
  // The end of the text: held text that is no tag is released.
  Out Finish();

  // Everything seen so far.
  const std::vector<int32_t>& units() const { return units_; }
  const std::string& speaker_info() const { return speaker_info_; }
  // An audio block was opened and not closed (the answer was cut short).
  bool block_open() const { return in_audio_; }

 private:
  enum class Where { kText, kUserTranscript, kSpeakerInfo, kAudio };
  void Scan(Out* out, bool final);
  void Emit(std::string_view text, Out* out);
  void Guard(Out* out, bool final);

  std::string held_;
  std::string text_;  // transcript text not yet released (Guard)
  Where where_ = Where::kText;
  bool in_audio_ = false;
  std::vector<int32_t> units_;
  std::string speaker_info_;
};

}  // namespace omni::orchestrator
