#include "services/llm/choice_decoder.h"

#include <span>
#include <utility>

namespace omni::llm {

ChoiceDecoder::ChoiceDecoder(const Tokenizer& tokenizer, int choice, std::vector<std::string> stops, bool logprobs)
    : tokenizer_(tokenizer),
      choice_(choice),
      logprobs_(logprobs),
      detok_(tokenizer, DecodeOptions{.skip_special_tokens = true}),
      stop_(std::move(stops)) {}

LogprobEntry ChoiceDecoder::MakeLogprobEntry(const SampledToken& token) const {
  auto text = [&](int32_t id) {
    StatusOr<std::string> s = tokenizer_.Decode(std::span<const int32_t>(&id, 1));
    return s.ok() ? *s : std::string();
  };
  LogprobEntry e;
  e.token_id = token.token_id;
  e.token = text(token.token_id);
  e.logprob = token.logprob;
  for (const TokenLogprob& t : token.top_logprobs) e.top.push_back({text(t.token_id), t.logprob});
  return e;
}

ChoiceDecoder::Result ChoiceDecoder::Push(const TokenOutput& out) {
  Result r;
  if (finished_) return r;
  // A stop token id or EOS ends the choice and is not shown.
  if (out.token && !stop_.stopped() && out.finish_reason != FinishReason::kStop) {
    GenerationEvent e{.kind = GenerationEvent::Kind::kDelta, .choice = choice_};
    StatusOr<std::string> piece = detok_.Push(out.token->token_id);
    e.text = stop_.Push(piece.ok() ? *piece : std::string());
    r.stop_string_matched = stop_.stopped();
    if (logprobs_) e.logprobs.push_back(MakeLogprobEntry(*out.token));
    if (!e.text.empty() || !e.logprobs.empty()) r.events.push_back(std::move(e));
  }
  if (out.finish_reason == FinishReason::kNone) return r;
  if (!stop_.stopped()) {
    std::string tail = stop_.Push(detok_.Flush());
    if (!stop_.stopped()) tail += stop_.Flush();
    if (!tail.empty()) {
      r.events.push_back(GenerationEvent{.kind = GenerationEvent::Kind::kDelta, .choice = choice_, .text = tail});
    }
  }
  finished_ = true;
  finish_reason_ = stop_.stopped() ? "stop" : std::string(FinishReasonName(out.finish_reason));
  output_tokens_ = out.num_output_tokens;
  cached_tokens_ = out.num_cached_tokens;
  r.events.push_back(
      GenerationEvent{.kind = GenerationEvent::Kind::kFinish, .choice = choice_, .finish_reason = finish_reason_});
  return r;
}

}  // namespace omni::llm
