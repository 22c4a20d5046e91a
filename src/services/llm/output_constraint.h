// The Omni model's output grammar as a TokenConstraint (engine/token_constraint.h):
//
//   thought      free until "</think>"; with thinking_token_budget N the
//                "</think>" tokens are forced after N thought tokens
//   forced call  tool_choice named or required: after the thought, exactly
//                <tool_call>name\n then, per parameter (the schema's
//                required ones, or all when none is required),
//                <arg_key>k</arg_key>\n<arg_value>V</arg_value>\n, then
//                </tool_call> and the end of the turn. V is constrained by
//                the parameter's type: integer -?(0|[1-9][0-9]*), number
//                the same with an optional fraction, boolean and enum one
//                of their spellings, string (and object, array, untyped:
//                no JSON grammar here) any regular text up to
//                kMaxForcedStringTokens; t2i_model_generation's
//                discrete_image_token is a whole image block
//   tool_choice none  <tool_call> is never sampled
//   forced speech force_audio: after the thought, exactly
//                <assistant_transcript>, 0..T regular tokens,
//                </assistant_transcript>\n<audio_decoder_call><speaker_info>{}
//                </speaker_info><discrete_audio>, 3..U audio units,
//                </discrete_audio></audio_decoder_call> and the end of the
//                turn; T and U are sized (SizeSpeech) when the thought ends,
//                from the completion tokens left, and a thought without a
//                budget is closed early enough to leave room for 3 units
//   media blocks once <|discrete_image_start|> is sampled (in the thought
//                or after it), only what
//                completes it: a ratio token, <|vision_token|>, 27 rows of
//                27 <|visionN|> each closed by <|vision_eol|>, then
//                <|vision_eof|><|discrete_image_end|>; once an audio unit
//                is sampled, units until 3..2000 of them, then
//                "</discrete_audio>"
//
// Every allowed set is built from id ranges resolved once per tokenizer
// (OmniGrammarTokens) and literals tokenized once per request
// (OutputGrammar), so a step costs a few range writes, never a scan of the
// vocabulary.
//
// Thread-safety: OmniGrammarTokens and OutputGrammar are immutable and
// shared; one OutputConstraint per choice.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "api/openai/openai_types.h"
#include "core/status.h"
#include "engine/token_constraint.h"
#include "text/tokenizer.h"

namespace omni::llm {

using openai::kImageTool;
using openai::kImageToolParam;
inline constexpr int kImageRows = 27;  // 27 x 27 = 729 vision codes
inline constexpr int kMinAudioUnits = 3;
inline constexpr int kMaxAudioUnits = 2000;
inline constexpr int kMaxForcedStringTokens = 256;
inline constexpr int kMaxForcedNumberTokens = 6;  // digit tokens of one number part

// What a forced spoken answer may hold in `budget` completion tokens,
// `literal` of which its tags and the end of the turn take: a fifth of the
// room beyond the minimum units for the transcript (units run 25 a second,
// several per word, so most of the room is theirs), the rest for units.
// units < kMinAudioUnits: no spoken answer fits.
struct SpeechSize {
  int text = 0;   // T: most transcript tokens
  int units = 0;  // U: most audio units
};
SpeechSize SizeSpeech(int64_t budget, int literal);

struct OmniGrammarTokens {
  // Resolves the ids from `tokenizer`, which must outlive the result; `eos`
  // ends a chat turn (<|im_end|>).
  static std::shared_ptr<const OmniGrammarTokens> Resolve(const Tokenizer& tokenizer, int32_t eos);

  const Tokenizer* tokenizer = nullptr;
  int32_t vocab_size = 0;
  int32_t eos = -1;
  std::vector<int32_t> think_end;  // "</think>" tokenized
  // Single-token markers; -1 when the tokenizer has no such token (the
  // features needing one are then refused or off).
  int32_t tool_call_open = -1, arg_value_close = -1;
  int32_t image_start = -1, image_end = -1, vision_token = -1, vision_eol = -1, vision_eof = -1;
  std::vector<TokenRange> ratios, vision_codes, audio_codes;
  std::vector<int32_t> audio_end;  // "</discrete_audio>" tokenized
  std::vector<TokenRange> text;    // assigned, not added: what a free string may use
  // Text tokens made only of ASCII digits; the subset not starting with '0';
  // the token "0"; "-"; ".".
  std::vector<TokenRange> digits, digits_nonzero, zero, minus, dot;

  bool has_image_block() const { return image_start >= 0 && image_end >= 0 && vision_token >= 0 &&
                                        vision_eol >= 0 && vision_eof >= 0 && !ratios.empty() &&
                                        !vision_codes.empty(); }
};

// One request's grammar: tokenized once, shared by its choices.
class OutputGrammar : public std::enable_shared_from_this<OutputGrammar> {
 public:
  struct Options {
    bool starts_in_reasoning = true;
    std::optional<int> thinking_token_budget;
    openai::ToolChoice tool_choice;
    std::span<const openai::ToolSpec> tools;
    bool force_audio = false;
    int max_tokens = 0;  // the completion tokens a choice may produce; sizes forced speech
  };
  // InvalidArgument (naming tool_choice or force_audio) when forcing needs a
  // marker this tokenizer lacks; InvalidArgument naming max_tokens when
  // forced speech does not fit. Returns null when nothing is constrained at all.
  static StatusOr<std::shared_ptr<const OutputGrammar>> Create(std::shared_ptr<const OmniGrammarTokens> tokens,
                                                               const Options& options);

  // A fresh constraint for one choice.
  std::unique_ptr<TokenConstraint> NewConstraint() const;

  struct Segment;
  const OmniGrammarTokens& tokens() const { return *tokens_; }
  // The segments a choice starts with.
  const std::vector<Segment>& program() const { return program_; }
  // Appends the segments of tool `index`'s call after its name line.
  void AppendToolArguments(size_t index, std::deque<Segment>* out) const;
  // Appends the segments of an image block after <|discrete_image_start|>.
  void AppendImageBlock(std::deque<Segment>* out) const;
  // Appends the segments of a forced spoken answer that starts after
  // `produced` completion tokens.
  void AppendSpeech(int produced, std::deque<Segment>* out) const;
  // The tokens of a forced spoken answer's tags and the end of the turn.
  int speech_literal_tokens() const {
    return static_cast<int>(transcript_open_.size() + transcript_close_.size() + speech_end_.size());
  }

 private:
  std::shared_ptr<const OmniGrammarTokens> tokens_;
  Options options_;
  std::vector<openai::ToolSpec> tools_;  // copies: the grammar outlives the request
  std::vector<Segment> program_;         // the start: thought, call, end
  // Per tool: the argument segments (after the name line) to </tool_call> and EOS.
  std::vector<std::vector<Segment>> tool_arguments_;
  // force_audio: "<assistant_transcript>"; "</assistant_transcript>" through
  // "<discrete_audio>"; "</discrete_audio></audio_decoder_call>" and EOS.
  std::vector<int32_t> transcript_open_, transcript_close_, speech_end_;
};

struct OutputGrammar::Segment {
  enum class Kind {
    kFree,      // anything (but <tool_call> when banned); media blocks watched
    kThought,   // anything until </think>; a budget forces it
    kLiteral,   // exactly `tokens`
    kExactly,   // `count` tokens from `ranges`
    kRepeat,    // min..max tokens from `ranges`, then `tokens` (the end)
    kChoice,    // one of `alternatives` (token sequences); `next_tool` picks the call
    kNumber,    // integer or (with `fraction`) number, then `tokens`
    kSpeech,    // a forced spoken answer, sized and expanded when reached
  };
  Kind kind = Kind::kFree;
  std::vector<int32_t> tokens;
  std::vector<TokenRange> ranges;
  int count = 0, min = 0, max = 0;
  std::vector<std::vector<int32_t>> alternatives;
  bool choose_tool = false;    // kChoice over tool names: the choice's tool arguments follow
  bool fraction = false;       // kNumber
  bool ban_tool_call = false;  // kFree with tool_choice none
  // Progress of the constraint through this segment.
  int progress = 0;  // literal position, tokens taken, thought length, digit tokens
  int phase = 0;     // kNumber: its state; kThought: how much of "</think>" was sampled
  std::vector<int32_t> prefix;  // kChoice
};

}  // namespace omni::llm
