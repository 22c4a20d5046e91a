// ChoiceDecoder: one choice of a generation, from engine outputs to
// GenerationEvents. It detokenizes incrementally, holds back text that
// could start a stop string, attaches logprobs, and turns the final output
// into the flushed tail and a finish event. The fan-in over a request's n
// choices (submission, usage, metrics) is LlmService's.
//
// Thread-safety: one per choice, used by one thread at a time.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "services/llm/llm_service.h"
#include "services/llm/output_parser.h"
#include "services/llm/stop_strings.h"
#include "text/stream_detokenizer.h"
#include "text/tokenizer.h"

namespace omni::llm {

class ChoiceDecoder {
 public:
  // `tokenizer` must outlive the decoder. With `parser`, the text (after
  // stop strings) is split into reasoning, content and tool calls.
  // `keep_special` (sorted, outliving the decoder): special tokens shown anyway.
  ChoiceDecoder(const Tokenizer& tokenizer, int choice, std::vector<std::string> stops, bool logprobs,
                std::optional<OutputParser::Options> parser = std::nullopt,
                std::span<const int32_t> keep_special = {});

  struct Result {
    std::vector<GenerationEvent> events;  // in order: deltas, then a kFinish if the choice ended
    bool stop_string_matched = false;     // just now: the engine should finish the sequence
  };
  // One engine output of this choice. Outputs after the finish are ignored.
  Result Push(const TokenOutput& out);

  bool finished() const { return finished_; }
  // After finished(): "stop" (stop token or string), "length", "tool_calls"
  // (stopped after a complete tool call), "abort", "error".
  const std::string& finish_reason() const { return finish_reason_; }
  int output_tokens() const { return output_tokens_; }
  int cached_tokens() const { return cached_tokens_; }

 private:
  LogprobEntry MakeLogprobEntry(const SampledToken& token) const;
  // Text after stop strings into `e` (through the parser when there is one).
  void AddText(const std::string& text, GenerationEvent* e);
  void AddParsed(OutputDelta&& d, GenerationEvent* e);

  const Tokenizer& tokenizer_;
  const int choice_;
  const bool logprobs_;
  StreamDetokenizer detok_;
  StopStringMatcher stop_;
  std::optional<OutputParser> parser_;
  bool had_reasoning_ = false;
  bool finished_ = false;
  std::string finish_reason_;
  int output_tokens_ = 0;
  int cached_tokens_ = 0;
};

}  // namespace omni::llm
