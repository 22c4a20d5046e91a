#include "services/llm/output_constraint.h"

#include <algorithm>
#include <string>
#include <utility>

#include "text/omni_tokens.h"

namespace omni::llm {
namespace {

using Segment = OutputGrammar::Segment;
using Kind = Segment::Kind;

int32_t SingleToken(const Tokenizer& tok, std::string_view marker) {
  std::optional<int32_t> id = tok.TokenToId(marker);
  return id && tok.IsAdded(*id) ? *id : -1;
}

std::vector<int32_t> Ids(const Tokenizer& tok, std::string_view text) {
  StatusOr<std::vector<int32_t>> ids = tok.Encode(text);
  return ids.ok() ? std::move(*ids) : std::vector<int32_t>{};
}

// Sorted, coalesced union.
std::vector<TokenRange> Union(std::vector<TokenRange> a, std::span<const TokenRange> b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end(), [](const TokenRange& x, const TokenRange& y) { return x.begin < y.begin; });
  std::vector<TokenRange> out;
  for (const TokenRange& r : a) {
    if (r.begin >= r.end) continue;
    if (!out.empty() && r.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, r.end);
    } else {
      out.push_back(r);
    }
  }
  return out;
}
std::vector<TokenRange> One(int32_t id) { return {TokenRange{id, id + 1}}; }

Segment Literal(std::vector<int32_t> tokens) { return Segment{.kind = Kind::kLiteral, .tokens = std::move(tokens)}; }
Segment Exactly(std::vector<TokenRange> ranges, int count) {
  return Segment{.kind = Kind::kExactly, .ranges = std::move(ranges), .count = count};
}

// Number states.
enum NumberPhase { kStart, kAfterMinus, kAfterZero, kInInteger, kAfterDot, kInFraction };

class OutputConstraint final : public TokenConstraint {
 public:
  explicit OutputConstraint(std::shared_ptr<const OutputGrammar> grammar)
      : grammar_(std::move(grammar)), todo_(grammar_->program().begin(), grammar_->program().end()) {
    BeginSpeech();
  }

  bool AllowedNext(std::vector<TokenRange>* allowed) const override {
    if (todo_.empty()) return false;
    const OmniGrammarTokens& t = grammar_->tokens();
    const Segment& s = todo_.front();
    switch (s.kind) {
      case Kind::kFree:
        if (!s.ban_tool_call || t.tool_call_open < 0) return false;
        *allowed = {{0, t.tool_call_open}, {t.tool_call_open + 1, t.vocab_size}};
        return true;
      case Kind::kThought:
        if (s.max < 0 || s.progress < s.max) return false;
        *allowed = One(t.think_end[s.phase]);
        return true;
      case Kind::kLiteral:
        *allowed = One(s.tokens[s.progress]);
        return true;
      case Kind::kExactly:
        *allowed = s.ranges;
        return true;
      case Kind::kRepeat:
        if (s.progress >= s.max) {
          *allowed = One(s.tokens[0]);
        } else if (s.progress >= s.min) {
          *allowed = Union(s.ranges, One(s.tokens[0]));
        } else {
          *allowed = s.ranges;
        }
        return true;
      case Kind::kChoice: {
        std::vector<int32_t> next;
        for (const std::vector<int32_t>& alt : s.alternatives) {
          if (alt.size() > s.prefix.size() && std::equal(s.prefix.begin(), s.prefix.end(), alt.begin())) {
            next.push_back(alt[s.prefix.size()]);
          }
        }
        *allowed = RangesOf(std::move(next));
        return true;
      }
      case Kind::kSpeech:
        return false;  // expanded as soon as it is reached
      case Kind::kNumber: {
        const std::vector<TokenRange> end = One(s.tokens[0]);
        const bool more = s.progress < kMaxForcedNumberTokens;
        switch (s.phase) {
          case kStart: *allowed = Union(Union(t.minus, t.digits_nonzero), t.zero); break;
          case kAfterMinus: *allowed = Union(t.digits_nonzero, t.zero); break;
          case kAfterZero: *allowed = s.fraction ? Union(end, t.dot) : end; break;
          case kInInteger: {
            std::vector<TokenRange> r = s.fraction ? Union(end, t.dot) : end;
            *allowed = more ? Union(std::move(r), t.digits) : std::move(r);
            break;
          }
          case kAfterDot: *allowed = t.digits; break;
          default: *allowed = more ? Union(end, t.digits) : end; break;
        }
        return true;
      }
    }
    return false;
  }

  void Accept(int32_t token) override {
    ++produced_;
    Advance(token);
    BeginSpeech();
  }

 private:
  void Advance(int32_t token) {
    if (todo_.empty()) return;
    const OmniGrammarTokens& t = grammar_->tokens();
    Segment& s = todo_.front();
    switch (s.kind) {
      case Kind::kFree:
        WatchMedia(token);
        return;
      case Kind::kThought: {
        ++s.progress;
        const auto& end = t.think_end;
        if (!end.empty() && token == end[s.phase]) {
          if (++s.phase == static_cast<int>(end.size())) todo_.pop_front();
        } else {
          s.phase = !end.empty() && token == end[0] ? 1 : 0;
          WatchMedia(token);  // a block opened in the thought is completed too
        }
        return;
      }
      case Kind::kLiteral:
        if (++s.progress == static_cast<int>(s.tokens.size())) todo_.pop_front();
        return;
      case Kind::kExactly:
        if (++s.progress == s.count) todo_.pop_front();
        return;
      case Kind::kRepeat:
        if (token == s.tokens[0] && s.progress >= s.min) {
          std::vector<int32_t> rest(s.tokens.begin() + 1, s.tokens.end());
          todo_.pop_front();
          if (!rest.empty()) todo_.push_front(Literal(std::move(rest)));
        } else {
          ++s.progress;
        }
        return;
      case Kind::kChoice: {
        s.prefix.push_back(token);
        for (size_t i = 0; i < s.alternatives.size(); ++i) {
          if (s.alternatives[i] != s.prefix) continue;
          const bool choose_tool = s.choose_tool;
          todo_.pop_front();
          if (choose_tool) {
            std::deque<Segment> args;
            grammar_->AppendToolArguments(i, &args);
            todo_.insert(todo_.begin(), args.begin(), args.end());
          }
          return;
        }
        return;
      }
      case Kind::kSpeech:
        return;
      case Kind::kNumber: {
        const bool is_end = token == s.tokens[0];
        const bool is_dot = InRanges(t.dot, token);
        switch (s.phase) {
          case kStart:
            s.phase = InRanges(t.minus, token) ? kAfterMinus : InRanges(t.zero, token) ? kAfterZero : kInInteger;
            s.progress = s.phase == kInInteger ? 1 : 0;
            return;
          case kAfterMinus:
            s.phase = InRanges(t.zero, token) ? kAfterZero : kInInteger;
            s.progress = 1;
            return;
          case kAfterDot:
            s.phase = kInFraction;
            s.progress = 1;
            return;
          default:
            if (is_end) {
              todo_.pop_front();
            } else if (is_dot) {
              s.phase = kAfterDot;
            } else {
              ++s.progress;
            }
            return;
        }
      }
    }
  }

  // Free text that opens a media block continues with the block, then comes back.
  void WatchMedia(int32_t token) {
    const OmniGrammarTokens& t = grammar_->tokens();
    if (token == t.image_start && t.has_image_block()) {
      std::deque<Segment> block;
      grammar_->AppendImageBlock(&block);
      todo_.insert(todo_.begin(), block.begin(), block.end());
    } else if (!t.audio_end.empty() && InRanges(t.audio_codes, token)) {
      todo_.push_front(Segment{.kind = Kind::kRepeat, .tokens = t.audio_end, .ranges = t.audio_codes,
                               .min = kMinAudioUnits, .max = kMaxAudioUnits, .progress = 1});
    }
  }

  // A forced spoken answer is sized when it begins, from the tokens left.
  void BeginSpeech() {
    if (todo_.empty() || todo_.front().kind != Kind::kSpeech) return;
    todo_.pop_front();
    std::deque<Segment> speech;
    grammar_->AppendSpeech(produced_, &speech);
    todo_.insert(todo_.begin(), speech.begin(), speech.end());
  }

  std::shared_ptr<const OutputGrammar> grammar_;
  std::deque<Segment> todo_;
  int produced_ = 0;  // tokens accepted
};

}  // namespace

SpeechSize SizeSpeech(int64_t budget, int literal) {
  const int64_t room = budget - literal;
  const int64_t text = std::clamp<int64_t>((room - kMinAudioUnits) / 5, 0, kMaxForcedStringTokens);
  return {static_cast<int>(text), static_cast<int>(std::clamp<int64_t>(room - text, 0, kMaxAudioUnits))};
}

std::shared_ptr<const OmniGrammarTokens> OmniGrammarTokens::Resolve(const Tokenizer& tok, int32_t eos) {
  auto t = std::make_shared<OmniGrammarTokens>();
  t->tokenizer = &tok;
  t->vocab_size = tok.vocab_size();
  t->eos = eos;
  t->think_end = Ids(tok, kThinkEnd);
  t->tool_call_open = SingleToken(tok, kToolCallStart);
  t->arg_value_close = SingleToken(tok, kArgValueEnd);
  t->image_start = SingleToken(tok, kDiscreteImageStart);
  t->image_end = SingleToken(tok, kDiscreteImageEnd);
  t->vision_token = SingleToken(tok, kVisionToken);
  t->vision_eol = SingleToken(tok, kVisionEol);
  t->vision_eof = SingleToken(tok, kVisionEof);
  std::vector<int32_t> ids;
  for (std::string_view r : VisionRatios()) {
    if (int32_t id = SingleToken(tok, "<|vision_ratio_" + std::string(r) + "|>"); id >= 0) ids.push_back(id);
  }
  t->ratios = RangesOf(std::move(ids));
  ids.clear();
  for (int i = 0; i < kNumVisionCodes; ++i) {
    if (int32_t id = SingleToken(tok, VisionCodeToken(i)); id >= 0) ids.push_back(id);
  }
  t->vision_codes = RangesOf(std::move(ids));
  ids.clear();
  for (int i = 0; i < kNumAudioCodes; ++i) {
    if (int32_t id = SingleToken(tok, AudioCodeToken(i)); id >= 0) ids.push_back(id);
  }
  t->audio_codes = RangesOf(std::move(ids));
  if (!t->audio_codes.empty()) t->audio_end = Ids(tok, "</discrete_audio>");
  std::vector<int32_t> text, digits, nonzero, zero, minus, dot;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (!tok.IsAssigned(id) || tok.IsAdded(id)) continue;
    text.push_back(id);
    const std::string_view bytes = tok.TokenBytes(id).value_or("");
    if (bytes.empty()) continue;
    if (std::all_of(bytes.begin(), bytes.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      digits.push_back(id);
      if (bytes[0] != '0') nonzero.push_back(id);
      if (bytes == "0") zero.push_back(id);
    }
    if (bytes == "-") minus.push_back(id);
    if (bytes == ".") dot.push_back(id);
  }
  t->text = RangesOf(std::move(text));
  t->digits = RangesOf(std::move(digits));
  t->digits_nonzero = RangesOf(std::move(nonzero));
  t->zero = RangesOf(std::move(zero));
  t->minus = RangesOf(std::move(minus));
  t->dot = RangesOf(std::move(dot));
  return t;
}

void OutputGrammar::AppendImageBlock(std::deque<Segment>* out) const {
  const OmniGrammarTokens& t = *tokens_;
  out->push_back(Exactly(t.ratios, 1));
  out->push_back(Literal({t.vision_token}));
  for (int row = 0; row < kImageRows; ++row) {
    out->push_back(Exactly(t.vision_codes, kImageRows));
    out->push_back(Literal({t.vision_eol}));
  }
  out->push_back(Literal({t.vision_eof, t.image_end}));
}

void OutputGrammar::AppendSpeech(int produced, std::deque<Segment>* out) const {
  const OmniGrammarTokens& t = *tokens_;
  const SpeechSize size = SizeSpeech(int64_t{options_.max_tokens} - produced, speech_literal_tokens());
  out->push_back(Literal(transcript_open_));
  // The first token of the close ends the text, even where it is a text token.
  out->push_back(Segment{.kind = Kind::kRepeat, .tokens = transcript_close_, .ranges = t.text, .min = 0,
                         .max = size.text});
  // Fewer than the minimum only after a media block in the thought ran
  // past the reserve: the answer is then cut by max_tokens.
  out->push_back(Segment{.kind = Kind::kRepeat, .tokens = speech_end_, .ranges = t.audio_codes,
                         .min = kMinAudioUnits, .max = std::max(kMinAudioUnits, size.units)});
}

void OutputGrammar::AppendToolArguments(size_t index, std::deque<Segment>* out) const {
  const std::vector<Segment>& args = tool_arguments_[index];
  out->insert(out->end(), args.begin(), args.end());
}

StatusOr<std::shared_ptr<const OutputGrammar>> OutputGrammar::Create(std::shared_ptr<const OmniGrammarTokens> tokens,
                                                                     const Options& options) {
  auto g = std::shared_ptr<OutputGrammar>(new OutputGrammar());
  g->tokens_ = std::move(tokens);
  g->options_ = options;
  g->tools_.assign(options.tools.begin(), options.tools.end());
  g->options_.tools = g->tools_;
  const OmniGrammarTokens& t = *g->tokens_;
  const Tokenizer& tok = *t.tokenizer;
  using Mode = openai::ToolChoice::Mode;
  const Mode mode = options.tool_choice.mode;
  const bool forced = mode == Mode::kNamed || mode == Mode::kRequired;
  if (forced && (t.tool_call_open < 0 || t.arg_value_close < 0 || t.eos < 0)) {
    return InvalidArgument("this model's tokenizer has no single <tool_call> and </arg_value> tokens, so tool_choice '" +
                           std::string(mode == Mode::kNamed ? "function" : "required") + "' cannot be enforced")
        .WithParam("tool_choice");
  }
  // The thought's most tokens, </think> included, when it is bounded.
  const bool thinks = options.starts_in_reasoning && !t.think_end.empty();
  const int64_t thought_reserve =
      thinks ? int64_t{options.thinking_token_budget.value_or(0)} + static_cast<int64_t>(t.think_end.size()) : 0;
  if (options.force_audio) {
    if (forced) return InvalidArgument("cannot force both a tool call and speech").WithParam("force_audio");
    g->transcript_open_ = Ids(tok, "<assistant_transcript>");
    g->transcript_close_ =
        Ids(tok, "</assistant_transcript>\n<audio_decoder_call>" + std::string(kSpeakerInfoStart) + "{}" +
                     std::string(kSpeakerInfoEnd) + "<discrete_audio>");
    g->speech_end_ = Ids(tok, "</discrete_audio></audio_decoder_call>");
    if (t.audio_codes.empty() || t.audio_end.empty() || t.eos < 0 || g->transcript_open_.empty() ||
        g->transcript_close_.empty()) {
      return InvalidArgument("this model's tokenizer has no audio unit tokens (<|audioN|>) or no end-of-turn token, "
                             "so force_audio cannot be enforced")
          .WithParam("force_audio");
    }
    g->speech_end_.push_back(t.eos);
    const int literal = g->speech_literal_tokens();
    if (SizeSpeech(options.max_tokens - thought_reserve, literal).units < kMinAudioUnits) {
      return InvalidArgument("a spoken answer (force_audio) needs max_tokens of at least " +
                             std::to_string(thought_reserve + literal + kMinAudioUnits) + ": " +
                             std::to_string(literal) + " tokens of tags and " + std::to_string(kMinAudioUnits) +
                             " audio units" +
                             (thought_reserve > 0 ? " after a thought of up to " + std::to_string(thought_reserve)
                                                  : std::string()) +
                             "; this request allows " + std::to_string(options.max_tokens))
          .WithParam("max_tokens");
    }
  }
  if (forced) {
    for (const openai::ToolSpec& tool : g->tools_) {
      std::vector<Segment> segs;
      const bool any_required = std::any_of(tool.parameters.begin(), tool.parameters.end(),
                                            [](const openai::ToolParameter& p) { return p.required; });
      for (const openai::ToolParameter& p : tool.parameters) {
        if (any_required && !p.required) continue;
        segs.push_back(Literal(Ids(tok, std::string(kArgKeyStart) + p.name + std::string(kArgKeyEnd) + "\n" +
                                            std::string(kArgValueStart))));
        const int32_t close = t.arg_value_close;
        if (tool.name == kImageTool && p.name == kImageToolParam && t.has_image_block()) {
          segs.push_back(Literal({t.image_start}));
          std::deque<Segment> block;
          g->AppendImageBlock(&block);
          segs.insert(segs.end(), block.begin(), block.end());
          segs.push_back(Literal({close}));
        } else if (!p.enum_values.empty() || p.type == openai::ParamType::kBoolean) {
          Segment choice{.kind = Kind::kChoice};
          const std::vector<std::string> values =
              p.enum_values.empty() ? std::vector<std::string>{"true", "false"} : p.enum_values;
          for (const std::string& v : values) {
            std::vector<int32_t> alt = v.empty() ? std::vector<int32_t>{} : Ids(tok, v);
            alt.push_back(close);
            choice.alternatives.push_back(std::move(alt));
          }
          segs.push_back(std::move(choice));
        } else if ((p.type == openai::ParamType::kInteger || p.type == openai::ParamType::kNumber) &&
                   !t.digits_nonzero.empty() && !t.zero.empty()) {
          segs.push_back(Segment{.kind = Kind::kNumber, .tokens = {close},
                                 .fraction = p.type == openai::ParamType::kNumber && !t.dot.empty()});
        } else {
          segs.push_back(Segment{.kind = Kind::kRepeat, .tokens = {close}, .ranges = t.text, .min = 0,
                                 .max = kMaxForcedStringTokens});
        }
        segs.push_back(Literal(Ids(tok, "\n")));
      }
      segs.push_back(Literal(Ids(tok, kToolCallEnd)));
      segs.push_back(Literal({t.eos}));
      g->tool_arguments_.push_back(std::move(segs));
    }
  }
  if (thinks) {
    int budget = options.thinking_token_budget.value_or(-1);
    if (options.force_audio && budget < 0) {
      // Unbounded, the thought could leave no room for speech.
      budget = options.max_tokens - static_cast<int>(t.think_end.size()) - g->speech_literal_tokens() - kMinAudioUnits;
    }
    g->program_.push_back(Segment{.kind = Kind::kThought, .max = budget});
  }
  if (mode == Mode::kNamed) {
    size_t index = 0;
    while (g->tools_[index].name != options.tool_choice.name) ++index;  // the parser checked it is there
    g->program_.push_back(Literal(Ids(tok, std::string(kToolCallStart) + g->tools_[index].name + "\n")));
    g->program_.insert(g->program_.end(), g->tool_arguments_[index].begin(), g->tool_arguments_[index].end());
  } else if (mode == Mode::kRequired) {
    g->program_.push_back(Literal({t.tool_call_open}));
    Segment choice{.kind = Kind::kChoice, .choose_tool = true};
    for (const openai::ToolSpec& tool : g->tools_) choice.alternatives.push_back(Ids(tok, tool.name + "\n"));
    g->program_.push_back(std::move(choice));
  }
  if (options.force_audio) {
    g->program_.push_back(Segment{.kind = Kind::kSpeech});
  } else {
    g->program_.push_back(Segment{.kind = Kind::kFree, .ban_tool_call = mode == Mode::kNone});
  }
  return std::shared_ptr<const OutputGrammar>(std::move(g));
}

std::unique_ptr<TokenConstraint> OutputGrammar::NewConstraint() const {
  return std::make_unique<OutputConstraint>(shared_from_this());
}

}  // namespace omni::llm
