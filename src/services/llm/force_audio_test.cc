// force_audio: the forced spoken answer (output_constraint.h) driven by
// adversarial samplers over the demo tokenizer (always the lowest allowed
// id, always the highest, the end as soon as it may come, uniform picks),
// its sizing from max_tokens and its refusals; and the output parser
// keeping the block as raw content (output_parser.h, raw_speech).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "services/llm/output_constraint.h"
#include "services/llm/output_parser.h"
#include "text/demo_tokenizer.h"

namespace omni::llm {
namespace {

using openai::ToolChoice;
using openai::ToolSpec;

std::unique_ptr<Tokenizer> MakeTokenizer(int num_audio_codes) {
  StatusOr<std::string> json = MakeDemoTokenizerJson(
      DemoTokenizerSpec{.num_merges = 300, .num_vision_codes = 16, .num_audio_codes = num_audio_codes});
  OMNI_CHECK(json.ok());
  return std::move(Tokenizer::FromJson(*json)).value();
}

const Tokenizer& Tok() {
  static const std::unique_ptr<Tokenizer> tok = MakeTokenizer(64);
  return *tok;
}

int32_t Id(std::string_view token) { return *Tok().TokenToId(token); }
std::vector<int32_t> Ids(std::string_view text) { return std::move(Tok().Encode(text)).value(); }

std::shared_ptr<const OmniGrammarTokens> Tokens() {
  static const auto t = OmniGrammarTokens::Resolve(Tok(), Id("<|im_end|>"));
  return t;
}

const std::vector<int32_t>& Open() {
  static const auto ids = Ids("<assistant_transcript>");
  return ids;
}
const std::vector<int32_t>& Close() {
  static const auto ids =
      Ids("</assistant_transcript>\n<audio_decoder_call><speaker_info>{}</speaker_info><discrete_audio>");
  return ids;
}
const std::vector<int32_t>& End() {
  static const auto ids = [] {
    std::vector<int32_t> v = Ids("</discrete_audio></audio_decoder_call>");
    v.push_back(Id("<|im_end|>"));
    return v;
  }();
  return ids;
}
int Literal() { return static_cast<int>(Open().size() + Close().size() + End().size()); }

StatusOr<std::shared_ptr<const OutputGrammar>> Create(const OutputGrammar::Options& o) {
  return OutputGrammar::Create(Tokens(), o);
}

std::shared_ptr<const OutputGrammar> Speech(int max_tokens, bool thinks = false,
                                            std::optional<int> thinking_budget = std::nullopt) {
  auto g = Create({.starts_in_reasoning = thinks, .thinking_token_budget = thinking_budget, .force_audio = true,
                   .max_tokens = max_tokens});
  OMNI_CHECK(g.ok()) << g.status().ToString();
  return *g;
}

// A sampler picks one id of the allowed ranges (sorted, non-empty).
using Sampler = std::function<int32_t(std::span<const TokenRange>)>;

int32_t Lowest(std::span<const TokenRange> r) { return r.front().begin; }
int32_t Highest(std::span<const TokenRange> r) { return r.back().end - 1; }
// Takes the end of the transcript or of the units whenever it is allowed.
int32_t Eager(std::span<const TokenRange> r) {
  for (int32_t end : {Close()[0], End()[0]}) {
    if (InRanges(r, end)) return end;
  }
  return r.front().begin;
}
Sampler Uniform(uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [rng](std::span<const TokenRange> r) {
    int64_t total = 0;
    for (const TokenRange& x : r) total += x.end - x.begin;
    int64_t k = std::uniform_int_distribution<int64_t>(0, total - 1)(*rng);
    for (const TokenRange& x : r) {
      if (k < x.end - x.begin) return static_cast<int32_t>(x.begin + k);
      k -= x.end - x.begin;
    }
    return int32_t{-1};
  };
}

// Runs a choice to EOS (at most `limit` tokens); a free step (the thought)
// takes the first text token, which never closes the thought itself.
std::vector<int32_t> Drive(const OutputGrammar& g, const Sampler& pick, int limit) {
  auto c = g.NewConstraint();
  std::vector<int32_t> out;
  while (static_cast<int>(out.size()) < limit) {
    std::vector<TokenRange> allowed;
    const int32_t token = c->AllowedNext(&allowed) ? pick(allowed) : Tokens()->text[0].begin;
    c->Accept(token);
    out.push_back(token);
    if (token == Id("<|im_end|>")) break;
  }
  std::vector<TokenRange> allowed;
  EXPECT_FALSE(c->AllowedNext(&allowed)) << "the grammar ends at EOS";
  return out;
}

struct SpokenAnswer {
  int text = 0;   // transcript tokens
  int units = 0;
};

// Checks `ids` (after any thought) is exactly the spoken block and returns its sizes.
SpokenAnswer ExpectSpeech(std::span<const int32_t> ids) {
  const OmniGrammarTokens& t = *Tokens();
  SpokenAnswer a;
  size_t p = 0;
  auto expect_literal = [&](const std::vector<int32_t>& lit) {
    ASSERT_GE(ids.size(), p + lit.size());
    EXPECT_TRUE(std::equal(lit.begin(), lit.end(), ids.begin() + p)) << "at " << p;
    p += lit.size();
  };
  expect_literal(Open());
  while (p < ids.size() && ids[p] != Close()[0]) {
    EXPECT_TRUE(InRanges(t.text, ids[p])) << ids[p];
    ++p;
    ++a.text;
  }
  expect_literal(Close());
  while (p < ids.size() && InRanges(t.audio_codes, ids[p])) {
    ++p;
    ++a.units;
  }
  expect_literal(End());
  EXPECT_EQ(p, ids.size());
  // The text form the orchestrator reads.
  const std::string text = std::move(Tok().Decode(ids)).value();
  EXPECT_TRUE(text.starts_with("<assistant_transcript>")) << text;
  EXPECT_NE(text.find("</assistant_transcript>\n<audio_decoder_call><speaker_info>{}</speaker_info><discrete_audio><|audio"),
            std::string::npos)
      << text;
  EXPECT_TRUE(text.ends_with("|></discrete_audio></audio_decoder_call><|im_end|>")) << text;
  return a;
}

TEST(ForceAudioTest, SizingSplitsTheBudgetBetweenTranscriptAndUnits) {
  // room = budget - literal; T = min(256, max(0, (room - 3) / 5)); U = min(2000, room - T).
  EXPECT_EQ(SizeSpeech(100, 20).text, 15);
  EXPECT_EQ(SizeSpeech(100, 20).units, 65);
  EXPECT_EQ(SizeSpeech(23, 20).text, 0);
  EXPECT_EQ(SizeSpeech(23, 20).units, 3);
  EXPECT_LT(SizeSpeech(22, 20).units, kMinAudioUnits);
  EXPECT_LT(SizeSpeech(-5, 20).units, kMinAudioUnits);
  EXPECT_EQ(SizeSpeech(3000, 20).text, kMaxForcedStringTokens);
  EXPECT_EQ(SizeSpeech(3000, 20).units, kMaxAudioUnits);
  EXPECT_EQ(SizeSpeech(int64_t{1} << 40, 20).units, kMaxAudioUnits);
}

TEST(ForceAudioTest, EverySamplerGetsExactlyTheSpokenBlockWithinItsSizes) {
  for (int max_tokens : {Literal() + 3, Literal() + 4, Literal() + 40, 300, 700, 4000}) {
    const SpeechSize size = SizeSpeech(max_tokens, Literal());
    auto g = Speech(max_tokens);
    EXPECT_EQ(g->speech_literal_tokens(), Literal());
    std::vector<std::pair<std::string, Sampler>> samplers = {
        {"lowest", Lowest}, {"highest", Highest}, {"eager", Eager}};
    for (uint64_t seed = 0; seed < 6; ++seed) samplers.emplace_back("uniform " + std::to_string(seed), Uniform(seed));
    for (const auto& [name, pick] : samplers) {
      SCOPED_TRACE(name + ", max_tokens " + std::to_string(max_tokens));
      const std::vector<int32_t> ids = Drive(*g, pick, max_tokens + 10);
      EXPECT_LE(static_cast<int>(ids.size()), max_tokens);
      const SpokenAnswer a = ExpectSpeech(ids);
      EXPECT_LE(a.text, size.text);
      EXPECT_GE(a.units, kMinAudioUnits);
      EXPECT_LE(a.units, size.units);
      if (name == "eager") {
        EXPECT_EQ(a.text, 0);
        EXPECT_EQ(a.units, kMinAudioUnits);
      }
      if (name == "highest") {
        EXPECT_EQ(a.units, size.units);  // the end is forced at U
      }
      if (name == "lowest") {
        EXPECT_EQ(a.text, size.text);  // the close is forced at T
      }
    }
  }
}

TEST(ForceAudioTest, SmallMaxTokensGivesFewUnitsAndTooSmallIsRefused) {
  const std::vector<int32_t> few = Drive(*Speech(Literal() + 8), Highest, 200);
  EXPECT_EQ(ExpectSpeech(few).units, SizeSpeech(Literal() + 8, Literal()).units);
  EXPECT_EQ(few.size(), static_cast<size_t>(Literal() + 8));
  for (int max_tokens : {1, Literal(), Literal() + 2}) {
    auto g = Create({.starts_in_reasoning = false, .force_audio = true, .max_tokens = max_tokens});
    ASSERT_FALSE(g.ok()) << max_tokens;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(g.status().param(), "max_tokens");
    EXPECT_NE(g.status().message().find("at least " + std::to_string(Literal() + 3)), std::string::npos)
        << g.status().message();
  }
  // A thinking budget is reserved before the speech, </think> included.
  OutputGrammar::Options thinking;
  thinking.thinking_token_budget = 10;
  thinking.force_audio = true;
  thinking.max_tokens = Literal() + 3 + 10;
  auto tight = Create(thinking);
  ASSERT_FALSE(tight.ok());
  EXPECT_NE(tight.status().message().find("at least " + std::to_string(Literal() + 3 + 11)), std::string::npos)
      << tight.status().message();
  thinking.max_tokens = Literal() + 3 + 11;
  EXPECT_TRUE(Create(thinking).ok());
}

TEST(ForceAudioTest, TheThoughtKeepsItsBudgetAndTheSpeechGetsWhatIsLeft) {
  const int32_t think_end = Id("</think>");
  // Budget 5: five thought tokens, </think>, then speech sized from 200 - 6.
  {
    const std::vector<int32_t> ids = Drive(*Speech(200, true, 5), Highest, 300);
    ASSERT_EQ(std::find(ids.begin(), ids.end(), think_end) - ids.begin(), 5);
    const SpokenAnswer a = ExpectSpeech(std::span(ids).subspan(6));
    EXPECT_EQ(a.units, SizeSpeech(200 - 6, Literal()).units);
    EXPECT_LE(static_cast<int>(ids.size()), 200);
  }
  // No budget, and a thought that never closes itself: it is closed where
  // exactly the smallest spoken answer still fits.
  {
    const int max_tokens = Literal() + 30;
    const std::vector<int32_t> ids = Drive(*Speech(max_tokens, true), Uniform(3), 300);
    const auto end = std::find(ids.begin(), ids.end(), think_end);
    ASSERT_NE(end, ids.end());
    EXPECT_EQ(end - ids.begin(), max_tokens - 1 - Literal() - kMinAudioUnits);
    const SpokenAnswer a = ExpectSpeech(std::span(ids).subspan(end - ids.begin() + 1));
    EXPECT_EQ(a.text, 0);
    EXPECT_EQ(a.units, kMinAudioUnits);
    EXPECT_EQ(static_cast<int>(ids.size()), max_tokens);
  }
}

TEST(ForceAudioTest, RefusedWithAForcedToolCallOrWithoutAudioTokensOrEos) {
  const std::vector<ToolSpec> tools = {ToolSpec{.name = "get_time"}};
  for (ToolChoice choice : {ToolChoice{ToolChoice::Mode::kRequired}, ToolChoice{ToolChoice::Mode::kNamed, "get_time"}}) {
    auto g = Create({.starts_in_reasoning = false, .tool_choice = choice, .tools = tools, .force_audio = true,
                     .max_tokens = 500});
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().param(), "force_audio");
    EXPECT_EQ(g.status().message(), "cannot force both a tool call and speech");
  }
  static const std::unique_ptr<Tokenizer> mute = MakeTokenizer(0);
  auto no_units = OutputGrammar::Create(OmniGrammarTokens::Resolve(*mute, *mute->TokenToId("<|im_end|>")),
                                        {.starts_in_reasoning = false, .force_audio = true, .max_tokens = 500});
  ASSERT_FALSE(no_units.ok());
  EXPECT_EQ(no_units.status().param(), "force_audio");
  auto no_eos = OutputGrammar::Create(OmniGrammarTokens::Resolve(Tok(), -1),
                                      {.starts_in_reasoning = false, .force_audio = true, .max_tokens = 500});
  ASSERT_FALSE(no_eos.ok());
  EXPECT_EQ(no_eos.status().param(), "force_audio");
}

TEST(ForceAudioTest, RawSpeechStaysContentAndUnitsPassAtOnce) {
  const std::string head =
      "<assistant_transcript>Hi there.</assistant_transcript>\n"
      "<audio_decoder_call><speaker_info>{}</speaker_info><discrete_audio>";
  const std::string tail = "</discrete_audio></audio_decoder_call>";
  OutputParser p({.starts_in_reasoning = true, .raw_speech = true, .new_call_id = [] { return "id"; }});
  std::string content;
  auto take = [&](const OutputDelta& d) {
    EXPECT_TRUE(d.tool_calls.empty());
    content += d.content;
    return d.content;
  };
  EXPECT_EQ(p.Push("hmm</think>\n").reasoning, "hmm");
  take(p.Push(head));
  EXPECT_EQ(content, head);
  for (const char* unit : {"<|audio5|>", "<|audio0|>", "<|audio63|>"}) EXPECT_EQ(take(p.Push(unit)), unit);
  take(p.Push(tail));
  take(p.Finish());
  EXPECT_EQ(content, head + "<|audio5|><|audio0|><|audio63|>" + tail);
  EXPECT_TRUE(p.calls().empty());
  // Tool calls are still parsed beside it.
  const std::vector<ToolSpec> tools = {ToolSpec{.name = "get_time"}};
  OutputParser q({.starts_in_reasoning = false, .raw_speech = true, .tools = tools, .new_call_id = [] { return "id"; }});
  q.Push("<tool_call>get_time\n</tool_call>");
  q.Finish();
  ASSERT_EQ(q.calls().size(), 1u);
  EXPECT_EQ(q.calls()[0].name, "get_time");
}

}  // namespace
}  // namespace omni::llm
