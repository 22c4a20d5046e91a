// The output grammar driven by a random "model" (a uniform pick among the
// allowed ids, or any text token when unconstrained) over the demo
// tokenizer; what comes out is decoded and checked against the formats
// written from spec/omni-model.md with regular expressions, and parsed by
// the output parser into typed JSON arguments.
#include "services/llm/output_constraint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <regex>

#include <nlohmann/json.hpp>

#include "services/llm/output_parser.h"
#include "text/demo_tokenizer.h"

namespace omni::llm {
namespace {

using openai::ParamType;
using openai::ToolChoice;
using openai::ToolParameter;
using openai::ToolSpec;

const Tokenizer& Tok() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    StatusOr<std::string> json = MakeDemoTokenizerJson(DemoTokenizerSpec{.num_merges = 300});
    OMNI_CHECK(json.ok());
    return std::move(Tokenizer::FromJson(*json)).value();
  }();
  return *tok;
}

int32_t Id(std::string_view token) { return *Tok().TokenToId(token); }

std::shared_ptr<const OmniGrammarTokens> Tokens() {
  static const auto t = OmniGrammarTokens::Resolve(Tok(), Id("<|im_end|>"));
  return t;
}

int32_t PickIn(std::span<const TokenRange> ranges, std::mt19937_64& rng) {
  int64_t total = 0;
  for (const TokenRange& r : ranges) total += r.end - r.begin;
  int64_t k = std::uniform_int_distribution<int64_t>(0, total - 1)(rng);
  for (const TokenRange& r : ranges) {
    if (k < r.end - r.begin) return static_cast<int32_t>(r.begin + k);
    k -= r.end - r.begin;
  }
  return -1;
}

// Samples until EOS or `limit` tokens. `end_bias`: when the end of a
// repeat is allowed, how often it is taken.
std::vector<int32_t> Drive(TokenConstraint& c, uint64_t seed, int limit = 4000) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> out;
  const int32_t eos = Id("<|im_end|>");
  while (static_cast<int>(out.size()) < limit) {
    std::vector<TokenRange> allowed;
    const int32_t token = c.AllowedNext(&allowed) ? PickIn(allowed, rng) : PickIn(Tokens()->text, rng);
    EXPECT_GE(token, 0);
    c.Accept(token);
    out.push_back(token);
    if (token == eos) break;
  }
  return out;
}

std::string Decode(std::span<const int32_t> ids) { return std::move(Tok().Decode(ids)).value(); }

std::vector<ToolSpec> Tools() {
  return {ToolSpec{.name = "book_table",
                   .parameters = {ToolParameter{.name = "guests", .type = ParamType::kInteger, .required = true},
                                  ToolParameter{.name = "outdoor", .type = ParamType::kBoolean, .required = true},
                                  ToolParameter{.name = "name", .type = ParamType::kString, .required = true},
                                  ToolParameter{.name = "budget", .type = ParamType::kNumber, .required = true},
                                  ToolParameter{.name = "meal", .type = ParamType::kString,
                                                .enum_values = {"lunch", "dinner"}, .required = true},
                                  ToolParameter{.name = "notes", .type = ParamType::kString}}},
          ToolSpec{.name = "get_time", .parameters = {}},
          ToolSpec{.name = std::string(kImageTool),
                   .parameters = {ToolParameter{.name = std::string(kImageToolParam), .type = ParamType::kString}}}};
}

std::shared_ptr<const OutputGrammar> Grammar(OutputGrammar::Options o) {
  auto g = OutputGrammar::Create(Tokens(), o);
  OMNI_CHECK(g.ok()) << g.status().ToString();
  return *g;
}

nlohmann::json ParseArguments(const std::string& text, const std::vector<ToolSpec>& tools, bool in_reasoning,
                              std::string* name) {
  OutputParser parser({.starts_in_reasoning = in_reasoning, .tools = tools, .new_call_id = [] { return "id"; }});
  parser.Push(text);
  parser.Finish();
  EXPECT_EQ(parser.calls().size(), 1u) << text;
  if (parser.calls().empty()) return nullptr;
  *name = parser.calls()[0].name;
  return nlohmann::json::parse(parser.calls()[0].arguments);
}

TEST(OutputConstraintTest, NamedToolCallIsWellFormedAndTyped) {
  const std::vector<ToolSpec> tools = Tools();
  auto g = Grammar({.starts_in_reasoning = false,
                    .tool_choice = ToolChoice{ToolChoice::Mode::kNamed, "book_table"},
                    .tools = tools});
  // Only the required parameters, in schema order, values as the types say.
  const std::regex form(
      "<tool_call>book_table\n"
      "<arg_key>guests</arg_key>\n<arg_value>-?(0|[1-9][0-9]*)</arg_value>\n"
      "<arg_key>outdoor</arg_key>\n<arg_value>(true|false)</arg_value>\n"
      "<arg_key>name</arg_key>\n<arg_value>[\\s\\S]*?</arg_value>\n"
      "<arg_key>budget</arg_key>\n<arg_value>-?(0|[1-9][0-9]*)(\\.[0-9]+)?</arg_value>\n"
      "<arg_key>meal</arg_key>\n<arg_value>(lunch|dinner)</arg_value>\n"
      "</tool_call><\\|im_end\\|>");
  for (uint64_t seed = 0; seed < 40; ++seed) {
    auto c = g->NewConstraint();
    const std::vector<int32_t> ids = Drive(*c, seed);
    const std::string text = Decode(ids);
    ASSERT_TRUE(std::regex_match(text, form)) << "seed " << seed << ": " << text;
    std::string name;
    const nlohmann::json args = ParseArguments(text, tools, false, &name);
    EXPECT_EQ(name, "book_table");
    EXPECT_TRUE(args.at("guests").is_number_integer()) << args;
    EXPECT_TRUE(args.at("outdoor").is_boolean()) << args;
    EXPECT_TRUE(args.at("name").is_string()) << args;
    EXPECT_TRUE(args.at("budget").is_number()) << args;
    EXPECT_TRUE(args.at("meal") == "lunch" || args.at("meal") == "dinner") << args;
    EXPECT_FALSE(args.contains("notes"));
  }
}

TEST(OutputConstraintTest, ThinkingBudgetClosesTheThoughtThenTheCallFollows) {
  const std::vector<ToolSpec> tools = Tools();
  for (int budget : {0, 1, 7}) {
    auto g = Grammar({.starts_in_reasoning = true,
                      .thinking_token_budget = budget,
                      .tool_choice = ToolChoice{ToolChoice::Mode::kNamed, "get_time"},
                      .tools = tools});
    for (uint64_t seed = 0; seed < 10; ++seed) {
      auto c = g->NewConstraint();
      const std::vector<int32_t> ids = Drive(*c, seed);
      const std::string text = Decode(ids);
      // The random thought (text tokens only) never closes itself: the budget does.
      const size_t end = text.find("</think>");
      ASSERT_NE(end, std::string::npos) << text;
      ASSERT_EQ(Tokens()->think_end.size(), 1u);
      EXPECT_EQ(std::find(ids.begin(), ids.end(), Tokens()->think_end[0]) - ids.begin(), budget) << text;
      EXPECT_EQ(text.substr(end), "</think><tool_call>get_time\n</tool_call><|im_end|>");
      std::string name;
      ParseArguments(text, tools, true, &name);
      EXPECT_EQ(name, "get_time");
    }
  }
}

TEST(OutputConstraintTest, RequiredPicksOneOfTheTools) {
  const std::vector<ToolSpec> tools = Tools();
  auto g = Grammar({.starts_in_reasoning = false, .tool_choice = ToolChoice{ToolChoice::Mode::kRequired}, .tools = tools});
  std::set<std::string> names;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    auto c = g->NewConstraint();
    const std::string text = Decode(Drive(*c, seed));
    std::string name;
    ParseArguments(text, tools, false, &name);
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 3u);  // each tool is reachable
}

TEST(OutputConstraintTest, ToolChoiceNoneNeverAllowsAToolCall) {
  auto g = Grammar({.starts_in_reasoning = false, .tool_choice = ToolChoice{ToolChoice::Mode::kNone}});
  auto c = g->NewConstraint();
  std::vector<TokenRange> allowed;
  ASSERT_TRUE(c->AllowedNext(&allowed));
  EXPECT_FALSE(InRanges(allowed, Id("<tool_call>")));
  EXPECT_TRUE(InRanges(allowed, Id("<tool_call>") - 1));
  EXPECT_TRUE(InRanges(allowed, Id("<tool_call>") + 1));
}

// An image block as the spec has it: ratio, <|vision_token|>, 27 rows of 27
// codes each closed by <|vision_eol|>, <|vision_eof|>, the block end.
void ExpectImageBlock(const std::string& block) {
  static const std::regex form(
      "<\\|discrete_image_start\\|><\\|vision_ratio_[0-9]+:[0-9]+\\|><\\|vision_token\\|>"
      "((<\\|vision[0-9]+\\|>){27}<\\|vision_eol\\|>){27}<\\|vision_eof\\|><\\|discrete_image_end\\|>");
  EXPECT_TRUE(std::regex_match(block, form)) << block.substr(0, 300);
  size_t codes = 0;
  for (size_t p = block.find("<|vision"); p != std::string::npos; p = block.find("<|vision", p + 1)) {
    codes += std::isdigit(static_cast<unsigned char>(block[p + 8])) ? 1 : 0;
  }
  EXPECT_EQ(codes, 729u);
}

TEST(OutputConstraintTest, AnOpenedImageBlockIsCompletedThenTextIsFreeAgain) {
  auto g = Grammar({.starts_in_reasoning = false});
  for (uint64_t seed = 0; seed < 3; ++seed) {
    auto c = g->NewConstraint();
    std::vector<TokenRange> allowed;
    EXPECT_FALSE(c->AllowedNext(&allowed));
    c->Accept(Id("<|discrete_image_start|>"));
    std::vector<int32_t> ids = {Id("<|discrete_image_start|>")};
    const std::vector<int32_t> rest = Drive(*c, seed, 1 + 1 + 27 * 28 + 2);
    ids.insert(ids.end(), rest.begin(), rest.end());
    ExpectImageBlock(Decode(ids));
    allowed.clear();
    EXPECT_FALSE(c->AllowedNext(&allowed));
  }
}

TEST(OutputConstraintTest, ABlockOpenedInTheThoughtIsCompletedAndTheBudgetStillHolds) {
  auto g = Grammar({.starts_in_reasoning = true, .thinking_token_budget = 3});
  auto c = g->NewConstraint();
  std::vector<int32_t> ids = {Id("<|discrete_image_start|>")};
  c->Accept(ids[0]);  // thought token 1 opens a block
  const std::vector<int32_t> block = Drive(*c, 9, 1 + 1 + 27 * 28 + 2);
  ids.insert(ids.end(), block.begin(), block.end());
  ExpectImageBlock(Decode(ids));
  // Back in the thought: two more tokens, then </think> is forced.
  std::vector<TokenRange> allowed;
  EXPECT_FALSE(c->AllowedNext(&allowed));
  c->Accept(Tokens()->text[0].begin);
  EXPECT_FALSE(c->AllowedNext(&allowed));
  c->Accept(Tokens()->text[0].begin);
  ASSERT_TRUE(c->AllowedNext(&allowed));
  EXPECT_EQ(allowed, (std::vector<TokenRange>{{Id("</think>"), Id("</think>") + 1}}));
}

TEST(OutputConstraintTest, ForcedImageToolCarriesACompleteBlock) {
  const std::vector<ToolSpec> tools = Tools();
  auto g = Grammar({.starts_in_reasoning = false,
                    .tool_choice = ToolChoice{ToolChoice::Mode::kNamed, std::string(kImageTool)},
                    .tools = tools});
  auto c = g->NewConstraint();
  const std::string text = Decode(Drive(*c, 5));
  const std::string head = "<tool_call>t2i_model_generation\n<arg_key>discrete_image_token</arg_key>\n<arg_value>";
  const std::string tail = "</arg_value>\n</tool_call><|im_end|>";
  ASSERT_TRUE(text.starts_with(head)) << text.substr(0, 200);
  ASSERT_TRUE(text.ends_with(tail)) << text.substr(text.size() - 200);
  ExpectImageBlock(text.substr(head.size(), text.size() - head.size() - tail.size()));
}

TEST(OutputConstraintTest, AudioUnitsRunThreeToTwoThousandThenTheBlockEnds) {
  auto g = Grammar({.starts_in_reasoning = false});
  const OmniGrammarTokens& t = *Tokens();
  const int32_t unit = Id("<|audio42|>");
  // A model that ends as soon as it may: three units.
  {
    auto c = g->NewConstraint();
    c->Accept(unit);
    int units = 1;
    for (;;) {
      std::vector<TokenRange> allowed;
      ASSERT_TRUE(c->AllowedNext(&allowed));
      if (InRanges(allowed, t.audio_end[0])) break;
      EXPECT_TRUE(allowed == t.audio_codes);
      c->Accept(unit);
      ++units;
    }
    EXPECT_EQ(units, kMinAudioUnits);
  }
  // One that never ends: the end is forced after 2000.
  {
    auto c = g->NewConstraint();
    std::mt19937_64 rng(1);
    std::vector<int32_t> ids = {unit};
    c->Accept(unit);
    for (;;) {
      std::vector<TokenRange> allowed;
      if (!c->AllowedNext(&allowed)) break;
      const int32_t next = InRanges(allowed, unit) ? unit : PickIn(allowed, rng);
      c->Accept(next);
      ids.push_back(next);
    }
    const std::string text = Decode(ids);
    ASSERT_TRUE(text.ends_with("</discrete_audio>")) << text.substr(text.size() - 100);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), unit), kMaxAudioUnits);
  }
}

}  // namespace
}  // namespace omni::llm
