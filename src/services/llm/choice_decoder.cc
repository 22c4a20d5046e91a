#include "services/llm/choice_decoder.h"

#include <span>
#include <utility>

namespace omni::llm {

ChoiceDecoder::ChoiceDecoder(const Tokenizer& tokenizer, int choice, std::vector<std::string> stops, bool logprobs,
                             std::optional<OutputParser::Options> parser, std::span<const int32_t> keep_special)
    : tokenizer_(tokenizer),
      choice_(choice),
      logprobs_(logprobs),
      detok_(tokenizer, DecodeOptions{.skip_special_tokens = true, .keep_special = keep_special}),
      stop_(std::move(stops)) {
  if (parser) parser_.emplace(std::move(*parser));
}

void ChoiceDecoder::AddParsed(OutputDelta&& d, GenerationEvent* e) {
  had_reasoning_ = had_reasoning_ || !d.reasoning.empty();
  e->text += d.content;
  e->reasoning += d.reasoning;
  for (ToolCallDelta& t : d.tool_calls) e->tool_calls.push_back(std::move(t));
}

void ChoiceDecoder::AddText(const std::string& text, GenerationEvent* e) {
  if (!parser_) {
    e->text += text;
    return;
  }
  if (!text.empty()) AddParsed(parser_->Push(text), e);
}

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
    AddText(stop_.Push(piece.ok() ? *piece : std::string()), &e);
    r.stop_string_matched = stop_.stopped();
    if (logprobs_) e.logprobs.push_back(MakeLogprobEntry(*out.token));
    if (!e.text.empty() || !e.reasoning.empty() || !e.tool_calls.empty() || !e.logprobs.empty()) {
      r.events.push_back(std::move(e));
    }
  }
  if (out.finish_reason == FinishReason::kNone) return r;
  GenerationEvent tail{.kind = GenerationEvent::Kind::kDelta, .choice = choice_};
  if (!stop_.stopped()) {
    std::string rest = stop_.Push(detok_.Flush());
    if (!stop_.stopped()) rest += stop_.Flush();
    AddText(rest, &tail);
  }
  if (parser_) AddParsed(parser_->Finish(), &tail);
  if (!tail.text.empty() || !tail.reasoning.empty() || !tail.tool_calls.empty()) r.events.push_back(std::move(tail));
  finished_ = true;
  finish_reason_ = stop_.stopped() ? "stop" : std::string(FinishReasonName(out.finish_reason));
  GenerationEvent fin{.kind = GenerationEvent::Kind::kFinish, .choice = choice_};
  if (parser_) {
    fin.calls = parser_->calls();
    fin.has_reasoning = had_reasoning_ || parser_->in_reasoning();
    if (finish_reason_ == "stop" && !fin.calls.empty()) finish_reason_ = "tool_calls";
  }
  output_tokens_ = out.num_output_tokens;
  cached_tokens_ = out.num_cached_tokens;
  fin.finish_reason = finish_reason_;
  r.events.push_back(std::move(fin));
  return r;
}

}  // namespace omni::llm
